#!/usr/bin/env bash
# profile.sh — where an image model's training step spends its time, by op: `perf record` of
# `attnlab bench train --train-only` (the training step alone, no inference loop), its samples grouped
# by function into the ops below and printed as shares of the step's CPU time, one column per model.
#   scripts/profile.sh [MODELS]          default: cnn,sa,local,sa-p1 (sa-p1 = sa --patch 1)
#   ATTNLAB_BIN=path  PROFILE_THREADS=2  PROFILE_STEPS=20 (sa-p1: a quarter; cnn: ten times, its steps are
#   short and 20 of them are mostly start-up)  PROFILE_RAW=dir (keep perf's tables)
# Needs perf (Debian linux-perf); user-space samples only (cpu-clock:u), so it works at
# perf_event_paranoid 2. Samples are CPU time over all threads: OpenMP threads waiting at a barrier
# show up as "omp wait" (libgomp, and the sched_yield of its spinning), which is the serial share of the step on 2 threads.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ATTNLAB_BIN:-$here/bin/attnlab}
models=${1:-cnn,sa,local,sa-p1}
threads=${PROFILE_THREADS:-2} steps=${PROFILE_STEPS:-20}
command -v perf >/dev/null || { echo "profile.sh: perf not found (apt-get install linux-perf)" >&2; exit 1; }
[ -x "$bin" ] || { echo "profile.sh: $bin not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# function name -> op (first match wins)
cat >"$tmp/map.awk" <<'EOF'
function op(s) {
  sub(/\._omp_fn\.[0-9]+$/, "", s); sub(/\.(constprop|isra|part)\.[0-9.]+$/, "", s)
  if (s ~ /^(k[wne]_|k[48][wn]_|pack_a|pack_b|gemm_|dot_tile|scale_c|al_gemm)/) return "gemm"
  if (s ~ /^(forward_block|backward_head|wt_rows_acc|al__attn_full|full16|al__full16|forward_few|backward_few|few_|tr16x16|qk_tile|pv_tile)/) return "attention (full)"
  if (s ~ /^(dots_rows|axpy_rows|al__attn_sparse|sparse_|al__attn_window|rel_|al__win16|fwd_head|bwd_head|to_lanes|chains_out|tr16|pv8|lane_sum|tr8|chain8|dot8|bwd_setup)/) return "attention (window)"
  if (s ~ /^(im2col|col2im|al_conv2d)/) return "im2col / col2im"
  if (s ~ /^(al__wino|chunk_|input_transform|split_plane|filter_transform|filter_grad|plan_)/) return "winograd transforms"
  if (s ~ /maxpool|pool_row|pool_upd|convpool|pool2_grad/) return "max pool"
  if (s ~ /layernorm|^ln_rows16|^ln_range/) return "layer norm"
  if (s ~ /^(activation|act_backward|normal_cdf_blk)/) return "activations (GELU, ReLU)"
  if (s ~ /^(binary|add_backward|mul_backward)$/) return "residual adds"
  if (s ~ /colsum|add_bcast/) return "bias gradients / adds"
  if (s ~ /^(qkv_run|imap_run|al_linear_qkv|al_merge_heads|al_split)/) return "head split / merge"
  if (s ~ /softmax|cross_entropy/) return "softmax / loss"
  if (s ~ /^(al_optim|adamw|adam_)/) return "optimiser"
  if (s ~ /^(al_rng|dropout)/) return "dropout / rng"
  if (s ~ /^__mem(move|cpy|set)/) return "memcpy / memset"
  return "other"
}
{ pct = $1; sub(/%$/, "", pct); dso = $2; sym = $4   # "12.3%  dso  [.]  symbol  -  -"
  t[dso ~ /^libgomp/ || sym ~ /sched_yield/ ? "omp wait" : op(sym)] += pct }
END { for (k in t) printf "%s\t%.1f\n", k, t[k] }
EOF

IFS=, read -ra ms <<<"$models"
for m in "${ms[@]}"; do
  n=$steps; [ "$m" = cnn ] && n=$(( steps * 10 ))
  args=(--model "$m" --threads "$threads" --steps "$n" --warmup 2 --train-only)
  [ "$m" = sa-p1 ] && args=(--model sa --patch 1 --threads "$threads" --steps $(( (steps + 3) / 4 )) --warmup 1 --train-only)
  if ! perf record -q -e cpu-clock:u -o "$tmp/$m.data" "$bin" bench train "${args[@]}" >"$tmp/$m.out" 2>"$tmp/$m.err"; then
    echo "profile.sh: perf record of $m failed:" >&2; cat "$tmp/$m.err" >&2; exit 1
  fi
  perf report -i "$tmp/$m.data" --no-children --sort dso,symbol --stdio -q 2>/dev/null | awk 'NF >= 4 && $1 ~ /%$/' >"$tmp/$m.rep"
  awk -f "$tmp/map.awk" "$tmp/$m.rep" >"$tmp/$m.ops"
  [ -n "${PROFILE_RAW:-}" ] && { mkdir -p "$PROFILE_RAW"; cp "$tmp/$m.rep" "$PROFILE_RAW/$m.perf.txt"; }
done

echo "# where the training step's CPU time goes, % of samples (perf record -e cpu-clock:u; $threads threads;"
echo "# $(basename "$bin") bench train --train-only; $(date -u '+%F %T') UTC; $(lscpu | sed -n 's/^Model name: *//p' | head -1))"
cat "$tmp"/*.ops | cut -f1 | sort -u | while read -r o; do
  printf "%s" "$o"
  for m in "${ms[@]}"; do awk -F'\t' -v o="$o" '$1 == o { v = $2 } END { printf "\t%.1f", v + 0 }' "$tmp/$m.ops"; done
  echo
done | sort -t$'\t' -k2,2gr >"$tmp/table"   # rows by the first model's share; "other" and "omp wait" last
printf "%-26s" "op"; for m in "${ms[@]}"; do printf "%9s" "$m"; done; echo
{ grep -v -e '^other' -e '^omp wait' "$tmp/table"; grep -e '^omp wait' -e '^other' "$tmp/table"; } |
  awk -F'\t' '{ printf "%-26s", $1; for (i = 2; i <= NF; i++) printf "%9.1f", $i; print "" }'
printf "%-26s" "img/s (train, under perf)"; for m in "${ms[@]}"; do awk '{ for (i = 1; i < NF; i++) if ($i == "train_img_per_s") printf "%9.1f", $(i + 1) }' "$tmp/$m.out"; done; echo
