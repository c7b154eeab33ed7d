#!/usr/bin/env bash
# omp-regions.sh — where a run's two threads wait, region by region: builds scripts/omp-regions.c (an
# LD_PRELOAD wrapper around GOMP_parallel), runs the command under it and prints each parallel region's
# outlined function (addr2line), its calls, wall seconds, each thread's wait at the closing barrier and
# the serial time before it, sorted by the waits (a region its if-clause ran on one thread shows the
# worker waiting for all of it). Example:
#   scripts/omp-regions.sh bin/attnlab bench train --model sa --threads 2 --steps 60 --train-only
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: scripts/omp-regions.sh BINARY ARGS..." >&2; exit 2; }
bin=$(command -v "$1" || true); [ -n "$bin" ] && [ -x "$bin" ] || { echo "omp-regions.sh: $1 is not an executable" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gcc -O2 -fPIC -shared -fopenmp "$here/omp-regions.c" -o "$tmp/wrap.so" -ldl
WRAP_ON=1 WRAP_OUT="$tmp/regions.txt" LD_PRELOAD="$tmp/wrap.so" "$@"
python3 - "$tmp/regions.txt" "$bin" <<'PY'
import subprocess, sys
rows = []
for l in open(sys.argv[1]):
    p = l.split()
    rows.append((p[0], p[1], int(p[2]), dict(zip(p[3::2], map(float, p[4::2])))))
mine = [r[0] for r in rows if r[1].endswith(sys.argv[2].split('/')[-1])]
out = subprocess.run(['addr2line', '-f', '-e', sys.argv[2]] + ['0x' + o for o in mine], capture_output=True, text=True).stdout.split('\n')
names = {o: out[2 * i] for i, o in enumerate(mine)}
wall = sum(r[3]['wall'] for r in rows); gap = sum(r[3]['gap'] for r in rows)
print("# %.3f s inside parallel regions, %.3f s between them (main thread alone)" % (wall, gap))
print("%-44s %6s %8s %8s %8s %8s" % ("region (outlined function)", "calls", "wall s", "wait0 s", "wait1 s", "gap s"))
rows.sort(key=lambda r: -(2 * r[3]['wall'] - r[3]['busy0'] - r[3]['busy1']))
for o, lib, n, d in rows:
    print("%-44s %6d %8.4f %8.4f %8.4f %8.4f" % (names.get(o, lib.split('/')[-1] + '+' + o)[:44], n, d['wall'],
          d['wall'] - d['busy0'], d['wall'] - d['busy1'], d['gap']))
PY
