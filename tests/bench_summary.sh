#!/usr/bin/env bash
# bench_summary.sh [BIN] — make bench's acceptance summary (scripts/bench-summary.sh with the targets of
# scripts/bench-targets.tsv) read back from a saved run's tables (tests/data/bench-log-excerpt.txt) prints
# what that run printed, item by item (the inference ratio, not in a log's tables, reads "not measured");
# a stricter target turns an item NOT MET; a broken targets line is an error naming the file and line.
set -u
cd "$(dirname "$0")/.."
log=tests/data/bench-log-excerpt.txt
got=$(scripts/bench-summary.sh --log "$log") || { echo "FAIL: bench-summary.sh exited $?"; exit 1; }
want=$(sed -n '/^   training share of the GEMM rate, cnn/,$p' "$log" |
       sed 's|^   pixel-level sa, inference / training img/s .*|   pixel-level sa, inference / training img/s              -   target >= 3x   not measured|')
[ "$got" = "$want" ] || { echo "FAIL: the summary differs from the run's:"; diff <(echo "$want") <(echo "$got"); exit 1; }
[ "$(echo "$got" | grep -c ' met$')" = 11 ] || { echo "FAIL: expected 11 items met"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sed 's/^\(GAT 1M nodes \/ 10M edges, epoch (2 threads)\t[^\t]*\t<=\t\)3000/\11000/' scripts/bench-targets.tsv >"$tmp/strict.tsv"
BENCH_TARGETS=$tmp/strict.tsv scripts/bench-summary.sh --log "$log" | grep -q 'epoch (2 threads)    1866.41 ms   target <= 1000 ms   NOT MET' ||
  { echo "FAIL: a stricter target is not reported NOT MET"; exit 1; }
printf 'broken line without tabs\n' >"$tmp/bad.tsv"
err=$(BENCH_TARGETS=$tmp/bad.tsv scripts/bench-summary.sh --log "$log" 2>&1 >/dev/null); rc=$?
[ $rc = 2 ] && [[ $err == *"bad.tsv:1: want item, source"* ]] || { echo "FAIL: a broken targets line: exit $rc, '$err'"; exit 1; }
echo "bench_summary: the acceptance summary of a saved run reads back as printed"
