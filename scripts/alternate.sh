#!/usr/bin/env bash
# alternate.sh — compare attnlab binaries on one model's training (or inference) speed, the way every
# speed figure in docs/performance.md was taken: the binaries take turns (A, B, A, B, ...) so that a host
# whose speed drifts treats them alike, and the medians are compared.
#   scripts/alternate.sh [-r REPS] [-s STEPS] [-t THREADS] [-i] MODEL BIN [BIN...] [-- BENCH_ARGS...]
#     MODEL   cnn, sa, local or sa-p1 (sa --patch 1)
#     -r      repetitions per binary (default 5)    -s  timed steps per run (default 60; sa-p1: 8)
#     -t      threads (default 2)                   -i  inference (bench train --infer-only), not training
#     after --: more arguments for every `bench train` (e.g. --batch 32)
# Copy a binary out of bin/ before rebuilding (cp bin/attnlab /tmp/attnlab-before), and build variants
# in their own trees, e.g. `make BUILD=build-v3 ARCH=-march=x86-64-v3` (AVX2 kernels) or
# `make BUILD=build-fpc ARCH="-march=native -ffp-contract=fast"` (contracted multiply-adds: other bits).
# Prints each run's img/s and, per binary, the median and its ratio to the first binary's.
set -u
usage() { sed -n '2,13p' "$0" >&2; exit 2; }
reps=5 steps= threads=2 mode=--train-only field=train_img_per_s
while getopts "r:s:t:i" o; do
  case $o in
    r) reps=$OPTARG ;; s) steps=$OPTARG ;; t) threads=$OPTARG ;;
    i) mode=--infer-only field=infer_img_per_s ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
model=$1; shift
bins=() extra=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do bins+=("$1"); shift; done
[ "${1:-}" = -- ] && { shift; extra=("$@"); }
case $model in
  sa-p1) margs=(--model sa --patch 1); steps=${steps:-8} ;;
  cnn|sa|local) margs=(--model "$model"); steps=${steps:-60} ;;
  *) echo "alternate.sh: unknown model '$model' (cnn, sa, local or sa-p1)" >&2; exit 2 ;;
esac
for b in "${bins[@]}"; do [ -x "$b" ] || { echo "alternate.sh: $b is not an executable" >&2; exit 2; }; done
[[ $reps =~ ^[1-9][0-9]*$ && $steps =~ ^[1-9][0-9]*$ && $threads =~ ^[1-9][0-9]*$ ]] ||
  { echo "alternate.sh: -r, -s and -t take positive integers" >&2; exit 2; }

echo "# $(date -u '+%F %T') UTC; $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); load $(cut -d' ' -f1 /proc/loadavg);" \
     "bench train ${margs[*]} --threads $threads --steps $steps $mode ${extra[*]}"
declare -a runs
for r in $(seq "$reps"); do
  for k in "${!bins[@]}"; do
    v=$("${bins[$k]}" bench train "${margs[@]}" --threads "$threads" --steps "$steps" "$mode" "${extra[@]}" 2>/dev/null |
        awk -v f="$field" '{ for (i = 1; i < NF; i++) if ($i == f) { print $(i + 1); exit } }')
    [ -n "$v" ] || { echo "alternate.sh: ${bins[$k]} bench train failed" >&2; exit 1; }
    runs[$k]="${runs[$k]:-} $v"
    echo "run $r  ${bins[$k]}  $v"
  done
done
first=
for k in "${!bins[@]}"; do
  med=$(printf '%s\n' ${runs[$k]} | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  [ -z "$first" ] && first=$med
  awk -v b="${bins[$k]}" -v m="$med" -v f="$first" -v r="${runs[$k]}" \
    'BEGIN { printf "median %-40s %10.1f img/s  %.3fx  (%s )\n", b, m, m / f, r }'
done
