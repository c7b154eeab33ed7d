#!/usr/bin/env bash
# The speech experiments of docs/speech.md, resumable: each run is one `attnlab train --task speech`
# appending to a results CSV; a run whose key is in OUTDIR/speech-WHAT.done is skipped, so rerunning
# the same command after a kill finishes the plan. Peak memory comes from GNU time (-f %M).
#
#   scripts/speech-experiments.sh CORPUS window|length|speakers|main [OUTDIR]
#
#   window    frame labelling (N-to-N): trunc at windows 1 2 4 8 16 32 frames each side vs sa, 12 epochs
#   length    cost vs length: sa, trunc (window 8), rnn on utterances padded or cut to 1 2 4 8 16 s,
#             64 training utterances, 1 epoch, batch 4, 1 thread: frames/s and peak RSS
#   speakers  N-to-1 digits vs training speakers (2 5 10 20 40) for sa, trunc, window-fc, rnn, 15 epochs
#   main      the headline runs: digit and speaker (N-to-1) for each model, frames (N-to-N) for rnn and
#             window-fc (sa and trunc --window 8 are in the window sweep)
# CORPUS is the output of `attnlab data speech-digits --out CORPUS --speakers 50 --seed 1`.
set -u
CORPUS=${1:?usage: speech-experiments.sh CORPUS window|length|speakers|main [OUTDIR]}
WHAT=${2:?usage: speech-experiments.sh CORPUS window|length|speakers|main [OUTDIR]}
OUT=${3:-results}
BIN=${ATTNLAB_BIN:-bin/attnlab}
THREADS=${THREADS:-2}
SEED=${SEED:-1}                  # SEED=2 scripts/speech-experiments.sh ...: another seed (keys get -sN)
mkdir -p "$OUT"
DONE="$OUT/speech-$WHAT.done"
touch "$DONE"

# run KEY ARGS...: one training run unless KEY is done; its summary line goes to speech-WHAT.log.
run() {
  local key=$1; shift
  [ "$SEED" = 1 ] || key="$key-s$SEED"
  if grep -qxF "$key" "$DONE"; then echo "skip $key"; return 0; fi
  echo "run  $key: $BIN train --task speech --data $CORPUS $*"
  local t; t=$(mktemp)
  if /usr/bin/time -f "peak_rss_kb %M" -o "$t" "$BIN" train --task speech --data "$CORPUS" --threads "$THREADS" --seed "$SEED" --quiet "$@" \
       > "$t.out"; then
    echo "$key $(cat "$t.out") $(cat "$t")" >> "$OUT/speech-$WHAT.log"
    echo "$key" >> "$DONE"
  else
    echo "FAILED $key" >&2
  fi
  rm -f "$t" "$t.out"
}

case "$WHAT" in
  window)
    run "trunc-w8" --target frames --model trunc --window 8 --epochs 12 --csv "$OUT/speech-window.csv" \
        --save "$OUT/speech-frames-trunc8.safetensors"
    run "sa" --target frames --model sa --epochs 12 --csv "$OUT/speech-window.csv" --save "$OUT/speech-frames-sa.safetensors"
    for w in 1 2 4 16 32; do
      run "trunc-w$w" --target frames --model trunc --window "$w" --epochs 12 --csv "$OUT/speech-window.csv"
    done
    ;;
  length)
    for s in 1 2 4 8 16; do
      for m in trunc rnn sa; do
        run "$m-${s}s" --target frames --model "$m" --max-seconds "$s" --train-size 64 --batch 4 --epochs 1 \
            --csv "$OUT/speech-length.csv"
      done
    done
    ;;
  speakers)
    for n in 2 5 10 20 40; do
      for m in trunc sa rnn window-fc; do
        run "$m-spk$n" --target digit --model "$m" --train-speakers "$n" --epochs 15 --csv "$OUT/speech-speakers.csv"
      done
    done
    ;;
  main)
    for m in trunc sa rnn window-fc; do
      run "digit-$m" --target digit --model "$m" --epochs 15 --csv "$OUT/speech-main.csv"
      run "speaker-$m" --target speaker --model "$m" --epochs 15 --csv "$OUT/speech-main.csv"
    done
    for m in rnn window-fc; do
      run "frames-$m" --target frames --model "$m" --epochs 12 --csv "$OUT/speech-main.csv"
    done
    ;;
  *) echo "speech-experiments.sh: unknown experiment '$WHAT' (window, length, speakers, main)" >&2; exit 2 ;;
esac
