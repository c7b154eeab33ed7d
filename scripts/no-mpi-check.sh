#!/usr/bin/env bash
# no-mpi-check.sh — checks that "make without MPI=1 on a machine with no MPI installed still builds and passes
# every test", on a machine that has Open MPI: in a private mount namespace every Open MPI file is hidden
# (its include and library directory, libmpi, libopen-rte, libopen-pal, mpicc, mpirun), then a fresh clone
# of this repository (HEAD) is built with plain make and `make test check` runs in it. Root only (unshare -m).
#   sudo scripts/no-mpi-check.sh [WORKDIR]        (default a temporary directory; the clone's logs stay there)
set -u
if [ "${1:-}" != --inside ]; then
  [ "$(id -u)" = 0 ] || { echo "no-mpi-check.sh: needs root (unshare -m, mount)" >&2; exit 2; }
  repo=$(cd "$(dirname "$0")/.." && pwd)
  work=${1:-$(mktemp -d /tmp/attnlab-nompi-XXXXXX)}
  rm -rf "$work/attnlab" && git clone -q "$repo" "$work/attnlab" || exit 1
  exec unshare -m "$0" --inside "$work/attnlab"
fi
D=$2
lib=/usr/lib/x86_64-linux-gnu
[ -d $lib/openmpi ] && mount -t tmpfs none $lib/openmpi
for f in $lib/libmpi.so.* $lib/libopen-rte.so.* $lib/libopen-pal.so.* /usr/bin/mpicc.openmpi /usr/bin/orterun \
         /usr/bin/mpirun.openmpi; do
  [ -f "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f"
done
echo '#include <mpi.h>' | cc -E -x c - -I$lib/openmpi/include -I/usr/include/x86_64-linux-gnu/mpi > /dev/null 2>&1 \
  && { echo "no-mpi-check.sh: mpi.h is still visible" >&2; exit 1; }
mpicc --version > /dev/null 2>&1 && { echo "no-mpi-check.sh: mpicc still runs" >&2; exit 1; }
mpirun --version > /dev/null 2>&1 && { echo "no-mpi-check.sh: mpirun still runs" >&2; exit 1; }
echo "Open MPI hidden: no mpi.h, mpicc and mpirun do not run"
cd "$D" || exit 1
make -j2 > build.log 2>&1 || { echo "no-mpi-check.sh: make failed (see $D/build.log)" >&2; tail -5 build.log >&2; exit 1; }
if ldd bin/attnlab | grep -qiE 'libmpi|open-rte|open-pal'; then echo "no-mpi-check.sh: bin/attnlab links MPI" >&2; exit 1; fi
echo "built: $(bin/attnlab --version); $(nm -D bin/attnlab | grep -c ' U MPI_') MPI symbols"
make test check > test.log 2>&1; rc=$?
grep -E '^tests: ' test.log | tail -1
exit $rc
