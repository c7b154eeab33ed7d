#!/usr/bin/env bash
# scripts/bad-inputs.sh [BIN] — runs every case of tests/bad-inputs/cases.tsv against BIN (default
# bin/attnlab) with limits: 2 GiB of address space (prlimit --as; an AddressSanitizer build reserves
# terabytes of it, so there ASan's own hard_rss_limit_mb=2048 stands in) and a 10 s timeout. Each
# case must:
#   - exit non-zero, normally (not by a signal, not the timeout's 124);
#   - print on stderr exactly one line that is not a warning, and it must contain the expected
#     substring; before it, at most the case's allowed number of "attnlab: warning: " lines (a file
#     skipped in an image folder names itself that way), and nothing else;
#   - stay under 2 GiB of RSS and 10 s (/usr/bin/time -f '%M %e').
# Prints one line per case (BAD_INPUTS_SHOW=1: and its stderr) and a summary with the largest RSS and
# time; exits 1 if any case failed.
#   scripts/bad-inputs.sh build-asan/bin/attnlab      (make check / make asan run it: tests/test_cli_scripts.c)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/attnlab}")
D=$root/tests/bad-inputs
R=$root
limit_s=10
limit_kb=$((2 * 1024 * 1024))
[ -x "$bin" ] || { echo "bad-inputs: no executable $bin" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bad-inputs: /usr/bin/time is missing (Debian: apt-get install time)" >&2; exit 2; }
work=$(mktemp -d /tmp/attnlab-bad-inputs-XXXXXX)
trap 'rm -rf "$work"' EXIT
if ldd "$bin" 2>/dev/null | grep -q libasan; then
  limit=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2048")
else
  limit=(prlimit --as=$((limit_kb * 1024)) --)
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# $D, $R and $T of a case's text, literally (no other expansion, no globbing)
subst() { local s=$1; s=${s//\$T/$T}; s=${s//\$D/$D}; s=${s//\$R/$R}; printf '%s' "$s"; }

n=0; failed=0; max_kb=0; max_kb_case=-; max_s=0; max_s_case=-
while IFS=$'\t' read -r name cmd expect warn_ok || [ -n "$name" ]; do
  case "$name" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  T=$work/$name
  mkdir -p "$T"
  read -ra words <<< "$cmd"
  envs=(); args=(); seen_bin=0
  for w in "${words[@]}"; do
    w=$(subst "$w")
    if [ $seen_bin = 0 ] && [ "$w" = attnlab ]; then seen_bin=1
    elif [ $seen_bin = 0 ]; then envs+=("$w")
    else args+=("$w"); fi
  done
  exp=$(subst "$expect")
  why=""
  (cd "$T" && /usr/bin/time -f '%M %e' -o "$T/.time" timeout -k 2 $limit_s "${limit[@]}" \
     env ${envs[@]+"${envs[@]}"} "$bin" ${args[@]+"${args[@]}"} < /dev/null > "$T/.stdout" 2> "$T/.stderr")
  rc=$?
  read -r kb secs < <(tail -1 "$T/.time")
  kb=${kb:-0}; secs=${secs:-0}
  if [ $rc = 124 ] || [ $rc = 137 ]; then why="timed out after ${limit_s} s"
  elif [ $rc -ge 128 ]; then why="killed by signal $((rc - 128))"
  elif [ $rc = 0 ]; then why="exited 0"
  else
    nwarn=$(grep -c '^attnlab: warning: ' "$T/.stderr")
    others=$(grep -v '^attnlab: warning: ' "$T/.stderr")
    nothers=$(grep -vc '^attnlab: warning: ' "$T/.stderr")
    if [ "$nothers" != 1 ]; then why="$nothers error lines on stderr, want 1"
    elif [ "$nwarn" -gt "${warn_ok:-0}" ]; then why="$nwarn warning lines, at most ${warn_ok:-0} allowed"
    elif [[ "$others" != *"$exp"* ]]; then why="the error line lacks: $exp"
    fi
  fi
  [ -z "$why" ] && [ "$kb" -ge $limit_kb ] && why="max RSS ${kb} KiB over 2 GiB"
  [ -z "$why" ] && awk -v s="$secs" -v l=$limit_s 'BEGIN { exit !(s >= l) }' && why="took ${secs} s"
  if [ "$kb" -gt "$max_kb" ]; then max_kb=$kb; max_kb_case=$name; fi
  if awk -v s="$secs" -v m="$max_s" 'BEGIN { exit !(s > m) }'; then max_s=$secs; max_s_case=$name; fi
  rss=$(awk -v k="$kb" 'BEGIN { printf "%.1f", k / 1024 }')
  if [ -z "$why" ]; then
    [ -n "${BAD_INPUTS_SHOW:-}" ] && sed 's/^/      > /' "$T/.stderr"
    printf 'ok    %-28s exit %d  %6s MiB  %5s s\n' "$name" $rc "$rss" "$secs"
  else
    failed=$((failed + 1))
    printf 'FAIL  %-28s %s\n      ran: %s\n' "$name" "$why" "${envs[*]+${envs[*]} }$bin ${args[*]}"
    sed 's/^/      | /' "$T/.stderr" | head -20
  fi
done < "$D/cases.tsv"
printf 'bad inputs: %d cases, %d passed, %d failed; max RSS %.1f MiB (%s), max time %s s (%s)\n' "$n" \
  $((n - failed)) "$failed" "$(awk -v k="$max_kb" 'BEGIN { print k / 1024 }')" "$max_kb_case" "$max_s" "$max_s_case"
[ "$failed" -eq 0 ] && [ "$n" -ge 50 ]
