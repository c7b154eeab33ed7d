#!/usr/bin/env bash
# Runs every cmocka test binary given, then prints one closing line: "N passed, N failed".
set -u
passed=0; failed=0; failed_bins=()
for t in "$@"; do
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  if [ $rc -ne 0 ]; then
    failed_bins+=("$(basename "$t")")
    [ -z "$f" ] && failed=$((failed + 1))
  fi
done
[ ${#failed_bins[@]} -gt 0 ] && echo "failing binaries: ${failed_bins[*]}"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ ${#failed_bins[@]} -eq 0 ]
