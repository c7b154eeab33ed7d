#!/bin/bash
# the --jobs 2 sweep again, after the MPI one, on a quiet machine (the first one shared the cores with ~10
# core-minutes of other work); then the train pair once more in the other order
set -u
B=/tmp/al-mpi
cd /work/meas
while pgrep -f mpi-acceptance/run.sh > /dev/null; do sleep 10; done
rm -f sw-jobs2.csv
echo "start $(date -u +%FT%TZ) $(uptime)"
/usr/bin/time -f "sweep jobs2 (second) wall %e s" $B sweep --preset image-tradeoff --seeds 1 --jobs 2 --threads 1 --csv sw-jobs2.csv > sw-jobs2.log 2>&1
tail -2 sw-jobs2.log; echo "  [$(uptime)]"
echo "end $(date -u +%FT%TZ)"
