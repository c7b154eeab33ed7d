#!/usr/bin/env bash
# The speech experiments of docs/speech.md. window, speakers and main are sweep presets
# (results/presets/speech-WHAT.preset, resumable like every sweep): this script passes them on.
# length stays a script: it measures frames/s and peak memory (GNU time -f %M) per run, a benchmark
# rather than a grid of results, and its 15 one-epoch runs are simply run again.
#
#   scripts/speech-experiments.sh CORPUS window|length|speakers|main [OUTDIR]
#     = attnlab sweep --preset speech-WHAT --data CORPUS --csv OUTDIR/speech-WHAT.csv (window, speakers, main)
#
#   length    cost vs length: sa, trunc (window 8), rnn on utterances padded or cut to 1 2 4 8 16 s,
#             64 training utterances, 1 epoch, batch 4, 1 thread: frames/s and peak RSS
# CORPUS is the output of `attnlab data speech-digits --out CORPUS --speakers 50 --seed 1`.
set -u
CORPUS=${1:?usage: speech-experiments.sh CORPUS window|length|speakers|main [OUTDIR]}
WHAT=${2:?usage: speech-experiments.sh CORPUS window|length|speakers|main [OUTDIR]}
OUT=${3:-results}
BIN=${ATTNLAB_BIN:-bin/attnlab}
THREADS=${THREADS:-2}
SEED=${SEED:-1}
case "$WHAT" in
  window|speakers|main)
    exec "$BIN" sweep --preset "speech-$WHAT" --data "$CORPUS" --csv "$OUT/speech-$WHAT.csv" --threads "$THREADS" --seeds "$SEED" ;;
  length) ;;
  *) echo "speech-experiments.sh: unknown experiment '$WHAT' (window, length, speakers, main)" >&2; exit 2 ;;
esac
mkdir -p "$OUT"

# run KEY ARGS...: one training run; its summary line and peak RSS go to speech-length.log.
run() {
  local key=$1; shift
  echo "run  $key: $BIN train --task speech --data $CORPUS $*"
  local t; t=$(mktemp)
  if /usr/bin/time -f "peak_rss_kb %M" -o "$t" "$BIN" train --task speech --data "$CORPUS" --threads "$THREADS" --seed "$SEED" --quiet "$@" \
       > "$t.out"; then
    echo "$key $(cat "$t.out") $(cat "$t")" >> "$OUT/speech-length.log"
  else
    echo "FAILED $key" >&2
  fi
  rm -f "$t" "$t.out"
}

for s in 1 2 4 8 16; do
  for m in trunc rnn sa; do
    run "$m-${s}s" --target frames --model "$m" --max-seconds "$s" --train-size 64 --batch 4 --epochs 1 \
        --csv "$OUT/speech-length.csv"
  done
done
