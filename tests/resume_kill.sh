#!/usr/bin/env bash
# Resumable training, end to end: a small real image training runs once uninterrupted (--threads 1),
# then again killed with SIGKILL at 5 random moments of its progress and resumed with --resume after each kill
# (alternating --threads 2 and 1, --checkpoint-every 2 and 1), then resumed to the end. The two results CSVs must be equal but
# for the timing columns (epoch_seconds, samples_per_second) and the two --save files byte-identical.
#   tests/resume_kill.sh [BIN]          (tests/test_resume.c runs it; RESUME_KILL_SEED=N repeats a
#                                        run's kill moments, RESUME_KILL_QUICK=1 a smaller training,
#                                        RESUME_KILL_TASK=molecule a gt on a fifth of ESOL instead)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/attnlab}")
work=$(mktemp -d /tmp/attnlab-resume-kill-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
seed=${RESUME_KILL_SEED:-$$}
RANDOM=$seed
echo "resume_kill: seed $seed (RESUME_KILL_SEED=$seed repeats these kill moments)"
if [ "${RESUME_KILL_QUICK:-0}" = 1 ]; then size="--train-size 256 --test-size 64 --epochs 8"
else size="--train-size 400 --test-size 200 --epochs 8"; fi
args="train --model cnn $size --batch 32 --seed 3 --quiet"
if [ "${RESUME_KILL_TASK:-image}" = molecule ]; then   # the kept best-validation model, dropout on
  args="train --task molecule --data esol --model gt --dim 16 --heads 2 --dropout 0.1 --lr 0.01 --train-frac 0.2 --epochs 8 --seed 3 --quiet"
fi
fail() { echo "resume_kill: FAIL: $*"; exit 1; }
now() { date +%s.%N; }

t0=$(now)
"$bin" $args --threads 1 --checkpoint-every 1 --csv full.csv --save full.safetensors --checkpoint full.train > full.out 2> full.err \
  || fail "the uninterrupted run exited $?: $(cat full.err)"
full=$(echo "$(now) - $t0" | bc)
echo "resume_kill: uninterrupted run: $full s"

# Kill moments are tied to the run's progress, not to the clock alone, so that a fast machine cannot
# finish the training inside the first attempts: an attempt is killed once its CSV has gained k rows
# (k = 0 or 1, chosen at random) and then r * unit more seconds have passed (r in [0, 1)), where unit
# is 0.9 of the shortest training epoch of the uninterrupted --threads 1 run, i.e. less than two
# epochs even at --threads 2. So an attempt gets at most two epochs further, three attempts at most
# six, and the 8 epochs outlast them: at least three kills hit a running training on any machine.
# The moments cover start-up (k = 0, small r), the middle of an epoch and the state's write right
# after a CSV row (k = 1, small r).
unit_ms=$(tail -n +2 full.csv | awk -F, '$12 != "" && (m == "" || $12 < m) { m = $12 } END { printf "%d", m * 900 }')
[ "$unit_ms" -ge 1 ] || unit_ms=1
# the polling loop forks nothing but sleep, so that it notices a new row within a few ms
rows_of() { local lines=(); [ -f killed.csv ] && mapfile -t lines < killed.csv; rows=$(( ${#lines[@]} > 0 ? ${#lines[@]} - 1 : 0 )); }
ms() { local t=${EPOCHREALTIME/[.,]/}; now_ms=$(( t / 1000 )); }
limit_ms=$(echo "$full * 20000 / 1" | bc)   # a hung attempt: 20 times the whole uninterrupted run
killed=0; finished=0
for i in 1 2 3 4 5; do
  threads=$(( i % 2 + 1 ))
  every=$(( i % 2 + 1 ))        # 2 in odd attempts: a kill in an odd epoch leaves a CSV row the state has not seen
  k=$(( RANDOM % 2 )); r=$(( RANDOM % 1000 ))   # $RANDOM read here, not in a subshell
  wait_ms=$(( unit_ms * r / 1000 ))
  rows_of; base=$rows; new=0; since=""
  "$bin" $args --threads $threads --checkpoint-every $every --resume --csv killed.csv --save killed.safetensors --checkpoint killed.train \
    > "run$i.out" 2> "run$i.err" &
  pid=$!
  ms; t_start=$now_ms
  while kill -0 $pid 2> /dev/null; do
    rows_of; ms
    if [ "$rows" -lt "$base" ]; then base=$rows; fi          # --resume dropped rows the state had not seen
    if [ "$rows" -gt "$base" ]; then new=$(( new + rows - base )); base=$rows; fi
    if [ $new -ge $k ] && [ -z "$since" ]; then since=$now_ms; fi
    if [ -n "$since" ] && [ $(( now_ms - since )) -ge $wait_ms ]; then kill -9 $pid 2> /dev/null; break; fi
    [ $(( now_ms - t_start )) -gt "$limit_ms" ] && { kill -9 $pid; fail "attempt $i still running after $limit_ms ms"; }
    sleep 0.002
  done
  { wait $pid; } 2> /dev/null; rc=$?
  rows_of
  if [ $rc -eq 137 ]; then killed=$((killed + 1)); what="killed"
  elif [ $rc -eq 0 ]; then finished=1; what="had finished"
  else fail "attempt $i exited $rc: $(cat "run$i.err")"; fi
  echo "resume_kill: attempt $i (--threads $threads --checkpoint-every $every): $what $wait_ms ms after its row $k; CSV rows $rows; $(grep -h 'resum\|scratch' "run$i.err" 2> /dev/null | head -1)"
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
