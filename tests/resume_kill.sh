#!/usr/bin/env bash
# Resumable training, end to end: a small real image training runs once uninterrupted (--threads 1),
# then again killed with SIGKILL at 5 random moments and resumed with --resume after each kill
# (alternating --threads 2 and 1, --checkpoint-every 2 and 1), then resumed to the end. The two results CSVs must be equal but
# for the timing columns (epoch_seconds, samples_per_second) and the two --save files byte-identical.
#   tests/resume_kill.sh [BIN]          (tests/test_resume.c runs it; RESUME_KILL_SEED=N repeats a
#                                        run's kill moments, RESUME_KILL_QUICK=1 a smaller training)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/attnlab}")
work=$(mktemp -d /tmp/attnlab-resume-kill-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
seed=${RESUME_KILL_SEED:-$$}
RANDOM=$seed
echo "resume_kill: seed $seed (RESUME_KILL_SEED=$seed repeats these kill moments)"
if [ "${RESUME_KILL_QUICK:-0}" = 1 ]; then size="--train-size 160 --test-size 100 --epochs 4"
else size="--train-size 400 --test-size 200 --epochs 6"; fi
args="train --model cnn $size --batch 32 --seed 3 --quiet"
fail() { echo "resume_kill: FAIL: $*"; exit 1; }
now() { date +%s.%N; }

t0=$(now)
"$bin" $args --threads 1 --checkpoint-every 1 --csv full.csv --save full.safetensors --checkpoint full.train > full.out 2> full.err \
  || fail "the uninterrupted run exited $?: $(cat full.err)"
full=$(echo "$(now) - $t0" | bc)
echo "resume_kill: uninterrupted run: $full s"

killed=0; finished=0
for i in 1 2 3 4 5; do
  threads=$(( i % 2 + 1 ))
  every=$(( i % 2 + 1 ))        # 2 in odd attempts: a kill in an odd epoch leaves a CSV row the state has not seen
  # a moment in [0.1, 0.5] of the uninterrupted run's time after this attempt starts (start-up, the
  # state's writes and the CSV's are all in reach); $RANDOM read here, not in a subshell
  r=$(( 100 + RANDOM % 401 ))
  delay=$(echo "scale=3; $full * $r / 1000" | bc)
  "$bin" $args --threads $threads --checkpoint-every $every --resume --csv killed.csv --save killed.safetensors --checkpoint killed.train \
    > "run$i.out" 2> "run$i.err" &
  pid=$!
  sleep "$delay"
  kill -9 $pid 2> /dev/null
  { wait $pid; } 2> /dev/null; rc=$?
  rows=$( [ -f killed.csv ] && tail -n +2 killed.csv | wc -l || echo 0)
  if [ $rc -eq 137 ]; then killed=$((killed + 1)); what="killed"
  elif [ $rc -eq 0 ]; then finished=1; what="had finished"
  else fail "attempt $i exited $rc: $(cat "run$i.err")"; fi
  echo "resume_kill: attempt $i (--threads $threads --checkpoint-every $every): $what after ${delay} s; CSV rows $rows; $(grep -h 'resum\|scratch' "run$i.err" | head -1)"
  [ $finished = 1 ] && break
done
"$bin" $args --threads 1 --checkpoint-every 1 --resume --csv killed.csv --save killed.safetensors --checkpoint killed.train \
  > last.out 2> last.err || fail "the last resume exited $?: $(cat last.err)"
echo "resume_kill: last resume: $(grep -h 'resum' last.err | head -1)"

strip() { awk -F, 'BEGIN { OFS = "," } { $12 = ""; $13 = ""; print }' "$1"; }
if ! diff <(strip full.csv) <(strip killed.csv) > csv.diff; then
  cat csv.diff; fail "the CSVs differ beyond the timing columns"
fi
cmp full.safetensors killed.safetensors || fail "the --save files differ"
[ $killed -ge 3 ] || fail "only $killed of the kills hit a running training (too short a run to kill?)"
echo "resume_kill: $killed kills mid-run; CSV ($(tail -n +2 full.csv | wc -l) rows) equal but for timing, weights byte-identical"
echo "resume_kill: 1 passed, 0 failed"
