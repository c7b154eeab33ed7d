#!/usr/bin/env bash
# conv-to-attention.sh — "a receptive field that starts as a CNN and may grow" (results/README.md), resumable.
# Per training size and seed:
#   1. the cnn, trained with image-tradeoff's step budget (1000: 63 epochs, 60000: 2), saved;
#   2. conv-attn at window 3 "frozen": the trained cnn's convs run as the exact attention construction
#      (attnlab train --model conv-attn --init-from: both test accuracies and their agreement);
#   3. fine-tuning for FT_EPOCHS more epochs at lr 1e-4, each from that cnn checkpoint:
#      conv-attn-ft --window 3, 5, 7 (the attention may spread over the window and over content),
#      and the cnn itself continued the same way (the baseline that gets the same extra steps).
# Every run appends its rows to OUTDIR/conv-to-attention.csv (a fine-tuned run's config names its
# window and init_from); OUTDIR/conv-to-attention.done lists the finished steps, so rerunning the
# same command after a kill finishes the plan; the frozen evaluations go to conv-to-attention.log.
#
#   scripts/conv-to-attention.sh [OUTDIR]      SIZES="1000 60000" SEEDS="1 2 3" WINDOWS="3 5 7" FT_EPOCHS=
#                                              TEST_SIZE= (a stratified test subset: quick checks only)
#
# Window full is left out by default: at 28x28 its first layer keeps 2 floats per (image, head, query,
# key offset) on the tape, 11 GB for a batch of 64, and runs at about 1 image/s (the model refuses a
# batch over the memory budget with the figures). Summary: attnlab summarize OUTDIR/conv-to-attention.csv --by window.
set -u
OUT=${1:-results}
BIN=${ATTNLAB_BIN:-bin/attnlab}
THREADS=${THREADS:-1}
SIZES=${SIZES:-1000 60000}
SEEDS=${SEEDS:-1 2 3}
WINDOWS=${WINDOWS:-3 5 7}
CK=${CK:-$OUT/conv-to-attention-checkpoints}
CSV=$OUT/conv-to-attention.csv
DONE=$OUT/conv-to-attention.done
LOG=$OUT/conv-to-attention.log
mkdir -p "$OUT" "$CK"
touch "$DONE"

# step KEY ARGS...: one attnlab command unless KEY is done; exit status of the plan stays non-zero on a failure.
fails=0
step() {
  local key=$1; shift
  if grep -qxF "$key" "$DONE"; then echo "skip $key"; return 0; fi
  echo "run  $key: $BIN $*"
  local t; t=$(mktemp)
  if "$BIN" "$@" --threads "$THREADS" --quiet > "$t"; then
    echo "$key $(cat "$t")" >> "$LOG"
    echo "$key" >> "$DONE"
  else
    echo "FAILED $key" >&2; fails=$((fails + 1))
  fi
  rm -f "$t"
}

for seed in $SEEDS; do
  for size in $SIZES; do
    steps=$(( (size + 63) / 64 )); epochs=$(( (1000 + steps - 1) / steps )); [ "$epochs" -lt 2 ] && epochs=2
    ft=${FT_EPOCHS:-$(( size >= 30000 ? 1 : 20 ))}   # fine-tuning: ~940 steps at 60000, 320 at 1000
    cnn=$CK/cnn-$size-s$seed.safetensors
    common=(--train-size "$size" --seed "$seed" ${TEST_SIZE:+--test-size "$TEST_SIZE"})
    # evaluated about 5 times (as the sweep does), the fine-tuning runs once at their end
    step "cnn-$size-s$seed" train --model cnn "${common[@]}" --epochs "$epochs" --eval-every $(( (epochs + 4) / 5 )) \
      --csv "$CSV" --save "$cnn"
    [ -f "$cnn" ] || continue
    step "frozen-$size-s$seed" train --model conv-attn --init-from "$cnn" ${TEST_SIZE:+--test-size "$TEST_SIZE"} --csv "$CSV"
    step "cnn-continued-$size-s$seed" train --model cnn "${common[@]}" --init-from "$cnn" --epochs "$ft" --eval-every "$ft" \
      --lr 1e-4 --csv "$CSV"
    for w in $WINDOWS; do
      step "ft-w$w-$size-s$seed" train --model conv-attn-ft --window "$w" "${common[@]}" --init-from "$cnn" --epochs "$ft" \
        --eval-every "$ft" --lr 1e-4 --csv "$CSV"
    done
  done
done
echo "conv-to-attention: $fails failed; rows in $CSV"
[ "$fails" -eq 0 ]
