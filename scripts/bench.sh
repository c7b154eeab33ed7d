#!/usr/bin/env bash
# make bench: attnlab's benchmarks, then the PyTorch peer when torch is importable.
#   scripts/bench.sh               run everything that is implemented
#   ATTNLAB_BIN=path scripts/bench.sh   use another binary (default bin/attnlab beside this script)
# A subcommand that is not implemented yet ("not implemented" on stderr) is skipped with a note;
# any other failure makes the script exit non-zero after the remaining benchmarks have run.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ATTNLAB_BIN:-$here/bin/attnlab}
shared=${ATTNLAB_SHARED:-$here/../shared}
[ -x "$bin" ] || { echo "bench.sh: $bin not built (run make)" >&2; exit 1; }

status=0
ncpu=$(nproc 2>/dev/null || echo 1)
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
echo "# $(date -u '+%F %T') UTC, $ncpu CPUs, load average $load, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"
if [ -z "${OMP_WAIT_POLICY:-}" ] && awk -v l="$load" -v n="$ncpu" 'BEGIN { exit !(l > n) }'; then
  echo "# note: the machine is busier than its CPUs; multi-threaded timings will be noisy. On a shared"
  echo "#       machine OMP_WAIT_POLICY=passive avoids OpenMP threads spinning while their partner waits"
  echo "#       for a CPU (docs/performance.md)."
fi
echo
run() {   # run NAME ARGS... : one benchmark, its stdout/stderr shown, "not implemented" skipped
  local name=$1; shift
  echo "== $name: $(basename "$bin") $*"
  local err; err=$(mktemp)
  "$bin" "$@" 2>"$err"; local rc=$?
  if [ $rc -ne 0 ] && grep -qi "not implemented" "$err"; then
    echo "   (skipped: $name is not implemented yet)"
  else
    cat "$err" >&2
    if [ $rc -ne 0 ]; then echo "   ($name failed with exit status $rc)"; status=1; fi
  fi
  rm -f "$err"
  echo
}

run "gemm" bench gemm
run "attention" bench attention
for m in cnn sa local; do run "train $m" bench train --model "$m"; done
run "graph" bench graph

peer=$shared/peers/torch_bench.py
if python3 -c 'import torch' >/dev/null 2>&1; then
  if [ -f "$peer" ]; then
    echo "== PyTorch peer: OPENBLAS_NUM_THREADS=1 python3 $peer"
    OPENBLAS_NUM_THREADS=1 python3 "$peer" || { echo "   (PyTorch peer failed)"; status=1; }
  else
    echo "== PyTorch peer: $peer not found, skipped"
  fi
else
  echo "== PyTorch peer: skipped (python3 cannot import torch; apt-get install python3-torch)"
fi
exit $status
