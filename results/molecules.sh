#!/usr/bin/env bash
# results/molecules.sh — the ESOL acceptance runs (results/README.md, "Molecules"): the sweep preset
# results/presets/molecules.preset, resumable like every sweep; SEEDS=4-5: more seeds. --threads 1: on the
# shared 2-core machine OpenMP barriers cost more than these small batches gain (results are identical).
cd "$(dirname "$0")/.." && exec "${ATTNLAB:-bin/attnlab}" sweep --preset molecules --threads 1 ${SEEDS:+--seeds "$SEEDS"}
