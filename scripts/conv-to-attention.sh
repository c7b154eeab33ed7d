#!/usr/bin/env bash
# conv-to-attention.sh — "a receptive field that starts as a CNN and may grow" (results/README.md): the sweep preset
# results/presets/conv-to-attention.preset (a staged sweep, resumable like every sweep; the plan is in the
# preset's comments). Kept as a wrapper for the commands that name it:
#   scripts/conv-to-attention.sh [OUTDIR]   = attnlab sweep --preset conv-to-attention --csv OUTDIR/conv-to-attention.csv --threads 1
exec "${ATTNLAB_BIN:-bin/attnlab}" sweep --preset conv-to-attention --csv "${1:-results}/conv-to-attention.csv" --threads "${THREADS:-1}"
