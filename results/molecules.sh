#!/usr/bin/env bash
# results/molecules.sh — the ESOL acceptance runs of results/README.md ("Molecules"): every model,
# seeds 1-3 (SEEDS=4-5: more), the fixed split, 150 epochs, one run at a time; rows appended to
# results/molecules.csv.
# ATTNLAB=PATH runs another build (a frozen copy, so rebuilding bin/attnlab meanwhile is safe).
# --threads 1: on the shared 2-core machine OpenMP barriers cost more than these small batches gain
# (0.26 s/epoch for gt with 1 thread, 3-10 s with 2 under load); results are identical for any count.
set -u
cd "$(dirname "$0")/.."
for m in ${MODELS:-gt fingerprint gt-full gcn mlp gat gatv2}; do
  nice -n 5 "${ATTNLAB:-bin/attnlab}" train --task molecule --data esol --model "$m" --seeds "${SEEDS:-1-3}" --epochs 150 --threads 1 \
    --csv results/molecules.csv --quiet || exit 1
done
