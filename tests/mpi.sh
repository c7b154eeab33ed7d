#!/usr/bin/env bash
# The MPI build across ranks on this machine (make test-mpi; docs/scale-out.md), about two minutes:
#   1. train --task image and --task sequence on 1, 2 and 3 ranks: the saved weights are byte-identical
#      and the CSV rows equal but for the timing columns (epoch_seconds, samples_per_second);
#   2. a sweep on 2 ranks writes the rows of the same sweep run locally (rows arrive in the order runs
#      finish, as with --jobs: compared sorted, timing columns aside);
#   3. a sweep on 3 ranks whose rank 1 is killed with SIGKILL mid-run (Open MPI then ends the job), rerun
#      with the same command: it completes the plan, with the local sweep's rows;
#   4. graph training and other commands refuse more than one rank with one line and exit 2;
#   5. without a launcher the MPI build trains exactly as the plain build (when bin/attnlab exists).
#   tests/mpi.sh [BIN]      (BIN: an attnlab built with make MPI=1; default $ATTNLAB_BIN or build-mpi/bin/attnlab)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-${ATTNLAB_BIN:-$root/build-mpi/bin/attnlab}}")
fail() { echo "mpi: FAIL: $*"; exit 1; }
command -v mpirun > /dev/null || fail "mpirun not found (scripts/install-deps.sh installs openmpi-bin)"
"$bin" --version | grep -q "MPI yes" || fail "$bin is not an MPI build (make MPI=1)"
work=$(mktemp -d /tmp/attnlab-mpi-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
start=$(date +%s)
# loopback TCP only: no network, no shared-memory quirks of containers
mpi() { local n=$1; shift; mpirun --oversubscribe --allow-run-as-root --mca btl self,tcp --mca btl_tcp_if_include lo \
        -np "$n" "$bin" "$@"; }
rows() { cut -d, -f1-11,14- "$1" | sort; }   # every column but 12, 13 (epoch_seconds, samples_per_second)
same_rows() { diff <(rows "$1") <(rows "$2") > /dev/null || fail "$3: $1 and $2 differ beyond the timing columns"; }

# 1. data-parallel training: the same bits on 1, 2, 3 ranks
train_check() {
  local name=$1; shift
  for n in 1 2 3; do
    mpi $n train "$@" --threads 1 --quiet --csv $name$n.csv --save $name$n.st > $name$n.out 2> $name$n.err \
      || fail "$name on $n ranks exited $?: $(tail -3 $name$n.err)"
  done
  for n in 2 3; do
    cmp -s $name$n.st ${name}1.st || fail "$name: the weights on $n ranks differ from 1 rank's"
    same_rows $name$n.csv ${name}1.csv "$name on $n ranks"
  done
  echo "mpi: $name: 1, 2 and 3 ranks give the same weights and rows ($(( $(date +%s) - start )) s)"
}
train_check image-sa --model sa --train-size 256 --test-size 128 --epochs 2 --batch 32 --seed 3
train_check image-cnn --model cnn --train-size 200 --test-size 100 --epochs 2 --batch 50 --seed 2
train_check seq-trunc --task sequence --model trunc --train-size 200 --epochs 2 --seed 3

# 2. a distributed sweep writes the local sweep's rows
sweep="sweep --task image --models cnn,sa --train-sizes 100,200 --seeds 1 --epochs 1 --test-size 100 --threads 1"
"$bin" $sweep --csv local.csv 2> local.err || fail "the local sweep exited $?: $(tail -3 local.err)"
mpi 2 $sweep --csv two.csv 2> two.err || fail "the sweep on 2 ranks exited $?: $(tail -3 two.err)"
grep -q "started on rank 1" two.err || fail "rank 1 ran nothing: $(cat two.err)"
same_rows two.csv local.csv "sweep on 2 ranks"
echo "mpi: a sweep on 2 ranks writes the local sweep's rows ($(( $(date +%s) - start )) s)"

# 3. kill -9 a worker rank mid-run, rerun: the plan completes
mpi 3 $sweep --csv killed.csv > /dev/null 2> killed.err &
job=$!
victim=""
for _ in $(seq 1 300); do            # rank 1's pid, once it has a run
  if grep -q "started on rank 1" killed.err 2> /dev/null; then
    for p in $(pgrep -f "attnlab sweep"); do     # ours (below $job), rank 1
      a=$p; while [ "$a" -gt 1 ] && [ "$a" != "$job" ]; do a=$(awk '/^PPid:/ {print $2}' /proc/$a/status 2> /dev/null || echo 1); done
      [ "$a" = "$job" ] || continue
      [ "$(tr '\0' '\n' < /proc/$p/environ 2> /dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')" = 1 ] && victim=$p
    done
    [ -n "$victim" ] && break
  fi
  sleep 0.1
done
[ -n "$victim" ] || fail "found no rank 1 with a run to kill: $(cat killed.err)"
sleep 0.5
kill -9 "$victim"
wait $job && fail "the sweep whose rank 1 was killed exited 0"
mpi 2 $sweep --csv killed.csv 2> rerun.err || fail "the rerun exited $?: $(tail -3 rerun.err)"
same_rows killed.csv local.csv "sweep killed and rerun"
echo "mpi: a sweep with rank 1 killed (kill -9) completes when rerun: $(grep -c . killed.csv) lines ($(( $(date +%s) - start )) s)"

# 4. what stays on one process says so
mpi 2 train --task graph --model gcn --epochs 1 --quiet > g.out 2> g.err; rc=$?
[ $rc -ne 0 ] && grep -q "trains on one process" g.err || fail "graph training on 2 ranks: exit $rc: $(cat g.err)"
mpi 2 summarize local.csv > s.out 2> s.err; rc=$?
[ $rc -ne 0 ] && grep -q "only train and sweep use MPI ranks" s.err || fail "summarize on 2 ranks: exit $rc: $(cat s.err)"
echo "mpi: graph training and summarize refuse 2 ranks"

# 5. no launcher: the MPI build is the plain build
if [ -x "$root/bin/attnlab" ] && ! "$root/bin/attnlab" --version | grep -q "MPI yes"; then
  a="train --model cnn --train-size 200 --test-size 100 --epochs 1 --seed 2 --threads 1 --quiet"
  "$bin" $a --csv p1.csv --save p1.st > /dev/null && "$root/bin/attnlab" $a --csv p2.csv --save p2.st > /dev/null \
    || fail "plain training exited $?"
  cmp -s p1.st p2.st || fail "without mpirun the MPI build's weights differ from the plain build's"
  same_rows p1.csv p2.csv "plain runs of the two builds"
  echo "mpi: without a launcher the MPI build trains as the plain build"
fi
echo "mpi: all passed ($(( $(date +%s) - start )) s)"
