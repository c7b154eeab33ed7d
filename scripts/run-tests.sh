#!/usr/bin/env bash
# Runs every cmocka test binary given, then prints one closing line: "N passed, N failed".
# TEST_JOBS=N binaries run side by side (default: the number of CPUs). Each binary's output is
# kept and printed whole, in the order given, so the log reads as a serial run. With more than one
# job, OpenMP threads wait passively (OMP_WAIT_POLICY=passive unless set): a test's threads must
# not spin while another binary holds the CPU. No test measures time, so the results are the same.
set -u
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || { echo "run-tests.sh: TEST_JOBS must be a positive integer, got '$jobs'" >&2; exit 2; }
[ "$jobs" -gt 1 ] && export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
i=0
for t in "$@"; do printf '%s\0%s\0' "$i" "$t"; i=$((i + 1)); done |
  xargs -0 -n 2 -P "$jobs" sh -c '"$2" > "$0/$1.out" 2>&1; echo $? > "$0/$1.rc"' "$tmp"
passed=0; failed=0; failed_bins=()
i=0
for t in "$@"; do
  out=$(cat "$tmp/$i.out" 2>/dev/null); rc=$(cat "$tmp/$i.rc" 2>/dev/null || echo 127)
  printf '%s\n' "$out"
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  if [ "$rc" -ne 0 ]; then
    failed_bins+=("$(basename "$t")")
    [ -z "$f" ] && failed=$((failed + 1))
  fi
  i=$((i + 1))
done
[ ${#failed_bins[@]} -gt 0 ] && echo "failing binaries: ${failed_bins[*]}"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ ${#failed_bins[@]} -eq 0 ]
