#!/usr/bin/env bash
# Records every non-timing output of a fixed set of runs, so that a refactoring can be checked to
# change no byte of what attnlab computes:
#   scripts/bitwise-outputs.sh BIN OUTDIR      then   scripts/bitwise-compare.py OUTDIR_before OUTDIR_after
# The set, one part per task and command (about 6 minutes on 2 cores):
#   image     train CSVs (timing columns cut) and checkpoints of cnn/sa/local at 1000 images x 3 epochs,
#             seeds 1-2; eval, predict on an image folder; attnmap PNG and attention distances
#   graph     gat/gcn/gat-full/mlp on Cora, seeds 1-2, with checkpoints; gat's attention CSV; eval
#   sequence  fc/window-fc/rnn/sa/trunc on 600 EWT sentences, 2 epochs, with checkpoints; tag on raw text
#             and CoNLL-U; attnmap of the sa and trunc checkpoints on one sentence
#   speech    a 4-voice digit corpus (every WAV hashed), trunc on frames and rnn on digits, attnmap
#   molecule  gt and gat on a tenth of ESOL with checkpoints; eval, predict, attnmap
#   sweep     a graph sweep and an image sweep (CSV rows, timing cut), summarize of both
# The test suite is the other half (make test).
set -euo pipefail
bin=$(realpath "$1"); out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"; out=$(realpath "$out")
export OMP_NUM_THREADS=2
export ATTNLAB_DATA=$root/datasets   # the datasets of this tree, wherever BIN lies
cd "$out"
cut_timing() {  # drop epoch_seconds and samples_per_second (columns 12, 13) of a results CSV
  awk -F, 'BEGIN{OFS=","} {s=""; for(i=1;i<=NF;i++) if(i!=12 && i!=13) s = s (s==""?"":",") $i; print s}' "$1"
}
normalise() {  # the output folder's name, wall-clock times and throughputs are not results
  sed -i -E "s# seconds [0-9.]+##; s#[0-9.]+ (ms|s)/epoch#T/epoch#g; s#  [0-9.]+ s  #  T s  #g;
             s#(_per_s) [0-9.]+#\1 T#g; s# in [0-9.]+ s\$# in T s#; s#$out/#OUT/#g; s#$root/#ROOT/#g" "$1"
}
# run NAME CMD...: stdout to NAME.stdout (normalised), stderr dropped
run() { local name=$1; shift; "$@" > "$out/$name.stdout" 2>/dev/null; normalise "$out/$name.stdout"; }
csvcut() { cut_timing "$1.raw.csv" > "$1.csv"; rm "$1.raw.csv"; }
sort_rows() {  # a CSV whose runs finished in any order (a sweep's --jobs 2): header, then sorted rows
  { head -1 "$1"; tail -n +2 "$1" | LC_ALL=C sort; } > "$1.sorted" && mv "$1.sorted" "$1"
}
cut_column() {  # drop the column named $2 of the CSV $1 in place (summarize's seconds_per_run)
  awk -F, -v name="$2" 'BEGIN{OFS=","} NR==1{for(i=1;i<=NF;i++) if($i==name) k=i}
    {s=""; for(i=1;i<=NF;i++) if(i!=k) s = s (s==""?"":",") $i; print s}' "$1" > "$1.cut" && mv "$1.cut" "$1"
}

# ---- image
for seed in 1 2; do
  for m in cnn sa local; do
    run "img-$m-$seed" "$bin" train --model "$m" --train-size 1000 --epochs 3 --seed "$seed" --threads 2 --quiet \
      --csv "img-$m-$seed.raw.csv" --save "img-$m-$seed.safetensors"
    csvcut "img-$m-$seed"
  done
done
run attnmap-distance "$bin" attnmap --load "img-sa-1.safetensors,img-local-1.safetensors" --index 3 --threads 2 \
  --out attnmap.png --distance 8
run eval-cnn "$bin" eval --load img-cnn-1.safetensors --threads 2
run eval-cnn-logits "$bin" eval --load img-cnn-1.safetensors --threads 2 --test-size 200 --logits eval-cnn-logits.csv
img=$root/tests/bad-inputs/images/ok
run img-folder-local "$bin" train --model local --data "$img" --dim 8 --depth 1 --heads 2 --epochs 2 --batch 4 \
  --seed 1 --threads 2 --csv img-folder-local.raw.csv --save img-folder-local.safetensors --quiet
csvcut img-folder-local
run predict-folder "$bin" predict --load img-folder-local.safetensors "$img/test" --quiet

# ---- graph
for seed in 1 2; do
  for m in gat gcn gat-full mlp; do
    ep=""; [ "$m" = gat-full ] && ep="--epochs 30"
    run "graph-$m-$seed" "$bin" train --task graph --data cora --model "$m" --seed "$seed" --threads 2 $ep \
      --csv "graph-$m-$seed.raw.csv" --save "graph-$m-$seed.safetensors"
    csvcut "graph-$m-$seed"
  done
done
run graph-gat-attention "$bin" train --task graph --data cora --model gat --epochs 5 --seed 3 --threads 2 \
  --attention graph-gat-attention.csv --quiet
run eval-gat "$bin" eval --task graph --load graph-gat-1.safetensors --threads 2 --quiet

# ---- sequence
for m in fc window-fc rnn sa trunc; do
  run "seq-$m" "$bin" train --task sequence --model "$m" --train-size 600 --epochs 2 --seed 1 --threads 2 \
    --csv "seq-$m.raw.csv" --save "seq-$m.safetensors" --quiet
  csvcut "seq-$m"
done
echo "I saw a saw in the old house ." > words.txt
run tag-trunc-text "$bin" tag --load seq-trunc.safetensors words.txt
run tag-rnn-conllu "$bin" tag --load seq-rnn.safetensors "$root/tests/bad-inputs/conllu/ok/test.conllu"
run attnmap-seq "$bin" attnmap --load seq-sa.safetensors --sentence "I saw a saw in the old house ." \
  --out attnmap-seq-sa.png --quiet
run attnmap-trunc "$bin" attnmap --load seq-trunc.safetensors --sentence "The dog saw a saw ." \
  --out attnmap-seq-trunc.png --quiet

# ---- speech
run speech-digits "$bin" data speech-digits --out sp --speakers 4 --repeats 1 --sequences 2 --jobs 2
( cd sp && find . -type f | LC_ALL=C sort | xargs sha256sum ) > speech-corpus.sha256
run speech-frames "$bin" train --task speech --data sp --target frames --model trunc --window 2 --subsample 2 \
  --epochs 2 --batch 4 --seed 1 --threads 2 --csv speech-frames.raw.csv --save speech-frames.safetensors --quiet
csvcut speech-frames
run speech-digit "$bin" train --task speech --data sp --model rnn --features fbank --epochs 2 --seed 1 --threads 2 \
  --csv speech-digit.raw.csv --save speech-digit.safetensors --quiet
csvcut speech-digit
run attnmap-speech "$bin" attnmap --load speech-frames.safetensors --data sp --index 1 --out attnmap-speech.png --quiet
rm -rf sp

# ---- molecule
for m in gt gat; do
  run "mol-$m" "$bin" train --task molecule --model "$m" --readout attn --dim 8 --heads 2 --train-frac 0.1 --epochs 3 \
    --seed 1 --threads 2 --csv "mol-$m.raw.csv" --save "mol-$m.safetensors" --quiet
  csvcut "mol-$m"
done
run eval-mol "$bin" eval --load mol-gt.safetensors --threads 2 --quiet
run predict-mol "$bin" predict --load mol-gt.safetensors "$root/datasets/esol" --quiet
run attnmap-mol "$bin" attnmap --load mol-gt.safetensors --molecule Amigdalin --out attnmap-mol.png --quiet

# ---- sweep and summarize
run sweep-graph "$bin" sweep --task graph --models gcn,mlp --labels-per-class 2,5 --seeds 1-2 --epochs 3 --jobs 2 \
  --csv sweep-graph.raw.csv
run summarize-graph "$bin" summarize sweep-graph.raw.csv --csv
cut_column summarize-graph.stdout seconds_per_run
csvcut sweep-graph
sort_rows sweep-graph.csv
run sweep-image "$bin" sweep --task image --models cnn,local --train-sizes 200 --seeds 1 --epochs 1 --dim 8 \
  --depth 1 --test-size 200 --csv sweep-image.raw.csv
run summarize-image "$bin" summarize sweep-image.raw.csv --csv
cut_column summarize-image.stdout seconds_per_run
csvcut sweep-image
rm -f ./*.train words.txt

sha256sum -- * > SHA256SUMS.all && grep -v SHA256SUMS SHA256SUMS.all > SHA256SUMS && rm SHA256SUMS.all
echo "bitwise-outputs: $(wc -l < "$out/SHA256SUMS") files in $out"
