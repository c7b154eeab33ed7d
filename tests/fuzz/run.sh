#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] — build the libFuzzer harnesses of tests/fuzz/ (clang,
# -fsanitize=fuzzer,address,undefined, the library sources compiled directly, no OpenMP) and run each
# for SECONDS (default 30, or $FUZZ_SECONDS), one after another, one process each, starting from the
# committed seeds in tests/fuzz/seeds/NAME/ plus the corpus kept in $FUZZ_OUT/corpus/NAME/.
# Exits non-zero if any harness crashes, leaks, or spends more than 10 s of CPU time on one input
# (fz_cpu_guard in fuzz_common.h) or 120 s of wall-clock time ($FUZZ_WALL_TIMEOUT: an input that
# blocks); the reproducer is left in $FUZZ_OUT/NAME/ (crash-*, leak-*, timeout-*).
#   FUZZ=idx,graph tests/fuzz/run.sh 300     only those harnesses
#   FUZZ_OUT=build-fuzz (default)            objects, binaries, corpora, logs
set -u
cd "$(dirname "$0")/../.."
SECONDS_PER=${1:-${FUZZ_SECONDS:-30}}
OUT=${FUZZ_OUT:-build-fuzz}
CC=${FUZZ_CC:-clang}
ALL="idx graph safetensors results image conllu molecules audio"
LIST=$(printf '%s' "${FUZZ:-$ALL}" | tr ',' ' ')
command -v "$CC" >/dev/null || { echo "run.sh: $CC not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=c11 -g -O1 -fno-omit-frame-pointer -Iinclude -Isrc -D_GNU_SOURCE -Wno-unknown-pragmas -DAL_DATADIR=\"\\\"/nonexistent\\\"\""
# the speech and linear-algebra libraries (ARPACK, LAPACKE), as the Makefile links them
SPEECH_PKGS="sndfile samplerate fftw3f espeak-ng arpack lapacke"
CFLAGS="$CFLAGS $(pkg-config --cflags $SPEECH_PKGS)"
SPEECH_LIBS=$(pkg-config --libs $SPEECH_PKGS)
mkdir -p "$OUT/obj" "$OUT/bin"

# The library, instrumented for coverage (fuzzer-no-link), compiled directly from src/; the pixel
# resize (src/data/stb_resize.c: no file parsing) is sanitized but not coverage-instrumented, or its
# inner loops make one large decoded image take seconds.
objs=()
for s in src/*/*.c; do
  o="$OUT/obj/$(echo "${s#src/}" | tr / _).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find include src -name '*.h' -newer "$o" -print -quit)" ]; then
    echo "cc $s"
    cov=-fsanitize=fuzzer-no-link; [ "$s" = src/data/stb_resize.c ] && cov=
    $CC $CFLAGS $SAN $cov -c "$s" -o "$o" || exit 2
  fi
  objs+=("$o")
done

fail=0
for h in $LIST; do
  src="tests/fuzz/fuzz_$h.c"
  [ -f "$src" ] || { echo "run.sh: no harness $src" >&2; exit 2; }
  bin="$OUT/bin/fuzz_$h"
  $CC $CFLAGS $SAN -fsanitize=fuzzer "$src" "${objs[@]}" -lpng -lz $SPEECH_LIBS -lm -o "$bin" || exit 2
  mkdir -p "$OUT/corpus/$h" "$OUT/$h"
  seeds="tests/fuzz/seeds/$h"
  echo "== fuzz_$h for ${SECONDS_PER}s"
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp \
    "$bin" -max_total_time="$SECONDS_PER" -timeout="${FUZZ_WALL_TIMEOUT:-120}" -rss_limit_mb=2560 -malloc_limit_mb=1024 \
      -print_final_stats=1 -artifact_prefix="$OUT/$h/" "$OUT/corpus/$h" "$seeds" >"$OUT/$h.log" 2>&1
  rc=$?
  stats=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$OUT/$h.log" | tail -1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$h.log")
  echo "   rc=$rc execs=${execs:-?} last: ${stats:-?}"
  if [ $rc -ne 0 ]; then
    fail=1
    echo "   FAILED: see $OUT/$h.log; reproducer in $OUT/$h/"
    grep -E 'ERROR:|runtime error|SUMMARY' "$OUT/$h.log" | head -5 | sed 's/^/   /'
  fi
done
exit $fail
