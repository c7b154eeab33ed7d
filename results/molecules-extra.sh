#!/usr/bin/env bash
# results/molecules-extra.sh — the ESOL runs beyond the acceptance list (results/README.md, "Molecules"): the
# sweep preset results/presets/molecules-extra.preset (gt with attention pooling; gt vs gt-full on 10, 25,
# 50 % of the training set), rows in results/molecules.csv, resumable like every sweep.
cd "$(dirname "$0")/.." && exec "${ATTNLAB:-bin/attnlab}" sweep --preset molecules-extra --threads 1
