#!/usr/bin/env bash
# tests/cli_paths.sh [BIN] — one tiny real invocation of each command path of bin/attnlab, so that the
# ASan + UBSan build (make asan, -fno-sanitize-recover) runs them all: image training (Fashion-MNIST
# when it is installed, and an image folder), graph training with attention and checkpoints, eval of
# both, predict, attnmap, a graph sweep (its children are BIN too), summarize, plot (three kinds, when
# gnuplot is installed), sequence training and tag, molecule training (resumed), eval, predict and
# attnmap, the speech corpus, speech training and attnmap, data import. Every command must exit 0 and write what it is asked to; sanitizer reports
# make it fail. Kept small: well under 2 minutes under ASan.
#   tests/cli_paths.sh build-asan/bin/attnlab          (tests/test_cli_scripts.c runs it)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/attnlab}")
D=$root/tests/bad-inputs          # the corpus' valid tiny datasets: images/ok, conllu/ok, text/ok.txt
work=$(mktemp -d /tmp/attnlab-cli-paths-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export OMP_NUM_THREADS=2
fails=0; n=0

# step NAME OUTPUT-FILE-OR-- COMMAND...: runs it, checks exit 0, a non-empty OUTPUT (if not --) and
# no sanitizer report on stderr.
step() {
  local name=$1 out=$2; shift 2
  n=$((n + 1))
  local t0=$SECONDS
  "$@" > "$name.out" 2> "$name.err" < /dev/null
  local rc=$? why=""
  if [ $rc -ne 0 ]; then why="exit $rc"
  elif grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$name.err"; then why="sanitizer report"
  elif [ "$out" != -- ] && [ ! -s "$out" ]; then why="no $out written"
  fi
  if [ -z "$why" ]; then echo "ok   $((SECONDS - t0))s  $name"
  else
    fails=$((fails + 1))
    echo "FAIL $name: $why"; echo "     ran: ${*#$bin}"; sed 's/^/     | /' "$name.err" | tail -15
  fi
}

fm=""
for d in "${ATTNLAB_FASHION_MNIST:-}" "${ATTNLAB_DATA:-/nonexistent}/fashion-mnist" "$root/datasets/fashion-mnist" \
         /usr/local/share/attnlab/datasets/fashion-mnist /usr/share/datasets/fashion-mnist; do
  if [ -n "$d" ] && { [ -e "$d/t10k-labels-idx1-ubyte.gz" ] || [ -e "$d/t10k-labels-idx1-ubyte" ]; }; then fm=$d; break; fi
done
# image: the attention model on Fashion-MNIST (or the tiny folder), a cnn and conv-attn from it, a local model on a folder
if [ -n "$fm" ]; then img=(--data-dir "$fm" --train-size 200 --test-size 100); imgdata=(--data-dir "$fm")
else echo "note: Fashion-MNIST not found; the image paths use $D/images/ok"; img=(--data "$D/images/ok"); imgdata=(--data "$D/images/ok"); fi
step train-sa sa.st "$bin" train --model sa --dim 16 --depth 1 --heads 2 --patch 4 "${img[@]}" --epochs 1 \
  --csv img.csv --save sa.st --quiet --max-memory 1G
step train-cnn cnn.st "$bin" train --model cnn "${img[@]}" --epochs 1 --eval-every 1 --save cnn.st --quiet
step train-conv-attn -- "$bin" train --model conv-attn --init-from cnn.st "${imgdata[@]}" --test-size 20 --quiet
step train-folder local.st "$bin" train --model local --data "$D/images/ok" --dim 8 --depth 1 --heads 2 --epochs 2 \
  --batch 4 --csv img.csv --save local.st --quiet
step eval-image logits.csv "$bin" eval --load sa.st "${imgdata[@]}" --test-size 50 --logits logits.csv --quiet
step eval-folder -- "$bin" eval --load local.st --data "$D/images/ok" --quiet
step predict -- "$bin" predict --load local.st "$D/images/ok/test" --quiet
step attnmap map.png "$bin" attnmap --load sa.st "${imgdata[@]}" --out map.png --distance 2 --quiet
step summarize-image -- "$bin" summarize img.csv
# graph: gat with attention weights and a checkpoint, then eval; a sweep of two models
step train-gat att.csv "$bin" train --task graph --model gat --data cora --epochs 3 --attention att.csv --save gat.st \
  --csv g.csv --quiet
step eval-graph -- "$bin" eval --task graph --load gat.st --quiet
step sweep sweep.csv "$bin" sweep --task graph --models gcn,mlp --labels-per-class 2 --seeds 1-2 --epochs 3 --jobs 2 \
  --csv sweep.csv --max-memory 1G
step summarize -- "$bin" summarize sweep.csv --csv
if command -v gnuplot > /dev/null; then
  step plot-tradeoff tradeoff.png "$bin" plot sweep.csv --out tradeoff.png --script tradeoff.gp
  step plot-curves curves.png "$bin" plot sweep.csv --kind curves --out curves.png
  step plot-attention att.png "$bin" plot att.csv --kind graph-attention --node 0 --out att.png
  # the gap figure over two presets' (made-up) results: cnn 0.79/0.81, local 0.75/0.75, sa 0.70/0.72 at
  # 1000 images -> local - cnn = -5.00 points, error sqrt(0.01414^2 + 0) = 1.41; distance: sa 0.95/0.97
  # vs window-fc 0.50/0.50 at recall:64 -> +46.00
  mkdir -p gap
  { echo run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,epoch_seconds,samples_per_second,params
    i=0; for r in cnn:1:0.79 cnn:2:0.81 local:1:0.75 local:2:0.75 sa:1:0.70 sa:2:0.72; do
      IFS=: read -r m sd a <<< "$r"; i=$((i + 1))
      echo "r$i,image,fashion-mnist,$m,1000,$sd,1,0.5,0.5,,$a,1,1,10"; done; } > gap/image-tradeoff.csv
  { echo run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,epoch_seconds,samples_per_second,params
    i=0; for r in window-fc:1:0.50 window-fc:2:0.50 sa:1:0.95 sa:2:0.97 rnn:1:0.99 rnn:2:0.99; do
      IFS=: read -r m sd a <<< "$r"; i=$((i + 1))
      echo "d$i,sequence,recall:64,$m,10000,$sd,1,0.5,0.5,,$a,1,1,10"; done; } > gap/distance.csv
  step gap-figure gap/gap.png env ATTNLAB_BIN="$bin" "$root/scripts/gap-figure.sh" gap gap/gap.png
  if ! grep -qP '^image-tradeoff\tall\t1000\t-5.00\t1.41\tlocal$' gap/gap.tsv ||
     ! grep -qP '^distance\tall\t64\t46.00\t1.41\tsa$' gap/gap.tsv; then
    fails=$((fails + 1)); echo "FAIL gap-figure: gap/gap.tsv is not the expected gaps:"; sed 's/^/     | /' gap/gap.tsv
  fi
else echo "note: gnuplot not installed; plot not run"; fi
# sequences: train on the tiny treebank, tag text with the checkpoint
step train-seq seq.st "$bin" train --task sequence --model trunc --data "$D/conllu/ok" --epochs 2 --save seq.st --quiet
step tag -- "$bin" tag --load seq.st "$D/text/ok.txt"
# molecules: gt with attention pooling on a tenth of ESOL, training states every 2 epochs, then --resume
# from the finished state
mol=(train --task molecule --model gt --readout attn --dim 8 --heads 2 --train-frac 0.1 --epochs 3 --csv mol.csv
     --save mol.st --checkpoint-every 2 --quiet)
step train-mol mol.st.train "$bin" "${mol[@]}"
step train-mol-resume mol.st "$bin" "${mol[@]}" --resume
step eval-mol -- "$bin" eval --load mol.st --quiet
step predict-mol -- "$bin" predict --load mol.st "$root/datasets/esol" --quiet
step attnmap-mol molmap.png "$bin" attnmap --load mol.st --molecule Amigdalin --out molmap.png --quiet
# speech: a 4-voice corpus, frame labelling with trunc (subsampled, saved), digit classification
# with rnn, attnmap of the frame model
step speech-digits sp/manifest.tsv "$bin" data speech-digits --out sp --speakers 4 --repeats 1 --sequences 2 --jobs 2
step train-speech-frames sp.st "$bin" train --task speech --data sp --target frames --model trunc --window 2 --subsample 2 \
  --epochs 2 --batch 4 --csv sp.csv --save sp.st --quiet
step train-speech-digit -- "$bin" train --task speech --data sp --model rnn --features fbank --epochs 1 --quiet
step attnmap-speech spmap.png "$bin" attnmap --load sp.st --data sp --index 1 --out spmap.png --quiet
# data import: a LINQS graph of 12 papers
for i in $(seq 0 11); do printf 'p%d\t%d\t%d\t%d\tc%d\n' $i $((i % 2)) $((i / 2 % 2)) 1 $((i % 3)); done > lq.content
for i in $(seq 0 10); do printf 'p%d\tp%d\n' $i $((i + 1)); done > lq.cites
mkdir -p linqs && mv lq.content lq.cites linqs/
step data-import imported/edges.txt "$bin" data import --format linqs --in linqs --out imported
echo "cli paths: $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
