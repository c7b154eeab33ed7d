#!/usr/bin/env bash
# results/molecules-extra.sh — the ESOL runs beyond the acceptance list (results/README.md, "Molecules"):
# gt with attention pooling (a learned query per head) instead of the sum readout, and the data-size
# sweep of gt (masked by bonds) against gt-full (unmasked) on 10, 25, 50 % of the training molecules
# (drawn per seed; val and test unchanged). Seeds 1-3, 150
# epochs, one run at a time, rows appended to results/molecules.csv. ATTNLAB=PATH: another build.
set -u
cd "$(dirname "$0")/.."
run() { nice -n 5 "${ATTNLAB:-bin/attnlab}" train --task molecule --data esol --seeds 1-3 --epochs 150 --threads 1 \
          --csv results/molecules.csv --quiet "$@" || exit 1; }
run --model gt --readout attn
for f in 0.1 0.25 0.5; do
  for m in ${SWEEP_MODELS:-gt gt-full}; do run --model "$m" --train-frac "$f"; done
done
