#!/bin/bash
# the scale-out measurements of docs/scale-out.md on a quiet machine; one heavy job at a time
set -u
B=/tmp/al-mpi
MPI="mpirun --allow-run-as-root -np 2"
cd /work/meas
lscpu > lscpu.txt
echo "start $(date -u +%FT%TZ) $(uptime)"
for rep in 1 2 3; do
  rm -f tr-plain-$rep.csv tr-mpi-$rep.csv
  /usr/bin/time -f "plain2t rep$rep wall %e s maxrss %M KB" $B train --task image --model sa --train-size 60000 --epochs 1 --seed 1 --threads 2 --csv tr-plain-$rep.csv --quiet
  echo "  $(tail -1 tr-plain-$rep.csv)  [$(uptime)]"
  /usr/bin/time -f "mpi2x1 rep$rep wall %e s maxrss %M KB" $MPI $B train --task image --model sa --train-size 60000 --epochs 1 --seed 1 --threads 1 --csv tr-mpi-$rep.csv --quiet
  echo "  $(tail -1 tr-mpi-$rep.csv)  [$(uptime)]"
done
rm -f sw-jobs.csv sw-mpi.csv
/usr/bin/time -f "sweep jobs2 wall %e s" $B sweep --preset image-tradeoff --seeds 1 --jobs 2 --threads 1 --csv sw-jobs.csv > sw-jobs.log 2>&1
tail -2 sw-jobs.log; echo "  [$(uptime)]"
/usr/bin/time -f "sweep mpi np2 wall %e s" $MPI $B sweep --preset image-tradeoff --seeds 1 --threads 1 --csv sw-mpi.csv > sw-mpi.log 2>&1
tail -2 sw-mpi.log; echo "  [$(uptime)]"
echo "end $(date -u +%FT%TZ)"
