#!/usr/bin/env bash
# Records every non-timing output of a fixed set of runs, so that a refactoring can be checked to
# change no byte of what attnlab computes:
#   scripts/bitwise-outputs.sh BIN OUTDIR      then   diff -r OUTDIR_before OUTDIR_after
# The set: train CSVs (timing columns cut) and checkpoints of cnn/sa/local at 1000 images x 3 epochs
# and of gat/gcn/gat-full/mlp on Cora, seeds 1-2; an attnmap PNG and the attention distances of the
# sa and local checkpoints; an eval of the cnn checkpoint. The test suite is the other half (make test).
set -euo pipefail
bin=$(realpath "$1"); out=$2
mkdir -p "$out"; out=$(realpath "$out")
export OMP_NUM_THREADS=2
cut_timing() {  # drop epoch_seconds and samples_per_second (columns 12, 13) of a results CSV
  awk -F, 'BEGIN{OFS=","} {s=""; for(i=1;i<=NF;i++) if(i!=12 && i!=13) s = s (s==""?"":",") $i; print s}' "$1"
}
normalise() {  # the output folder's name and wall-clock seconds are not results
  sed -i -E "s# seconds [0-9.]+##; s#$out/#OUT/#g" "$1"
}
for seed in 1 2; do
  for m in cnn sa local; do
    "$bin" train --model "$m" --train-size 1000 --epochs 3 --seed "$seed" --threads 2 --quiet \
      --csv "$out/img-$m-$seed.raw.csv" --save "$out/img-$m-$seed.safetensors" > "$out/img-$m-$seed.stdout" 2>/dev/null
    cut_timing "$out/img-$m-$seed.raw.csv" > "$out/img-$m-$seed.csv"; rm "$out/img-$m-$seed.raw.csv"
    normalise "$out/img-$m-$seed.stdout"
  done
  for m in gat gcn gat-full mlp; do
    ep=""; [ "$m" = gat-full ] && ep="--epochs 30"
    "$bin" train --task graph --data cora --model "$m" --seed "$seed" --threads 2 $ep \
      --csv "$out/graph-$m-$seed.raw.csv" --save "$out/graph-$m-$seed.safetensors" > /dev/null 2>&1
    cut_timing "$out/graph-$m-$seed.raw.csv" > "$out/graph-$m-$seed.csv"; rm "$out/graph-$m-$seed.raw.csv"
  done
done
"$bin" attnmap --load "$out/img-sa-1.safetensors,$out/img-local-1.safetensors" --index 3 --threads 2 \
  --out "$out/attnmap.png" --distance 8 > "$out/attnmap-distance.txt" 2>/dev/null
normalise "$out/attnmap-distance.txt"
"$bin" eval --load "$out/img-cnn-1.safetensors" --threads 2 > "$out/eval-cnn.txt" 2>/dev/null
normalise "$out/eval-cnn.txt"
( cd "$out" && sha256sum -- * > SHA256SUMS.all && grep -v SHA256SUMS SHA256SUMS.all > SHA256SUMS && rm SHA256SUMS.all )
echo "bitwise-outputs: $(wc -l < "$out/SHA256SUMS") files in $out"
