#!/usr/bin/env bash
# Installs the Debian packages attnlab needs to build, test and plot.
#   scripts/install-deps.sh           install whatever is missing (apt-get, through sudo when not root)
#   scripts/install-deps.sh --check   exit 0 if everything is present, 1 otherwise (lists what is missing)
#   scripts/install-deps.sh --bench   also what `make bench` compares with: PyTorch 1.13 (python3-torch),
#                                     OpenBLAS (opened at run time by `bench gemm`) and linux-perf
# python3-rdkit: scripts/smiles_to_graphs.py (SMILES to the molecule format; a test re-runs it).
# Speech (docs/speech.md): libsndfile (WAV/FLAC/OGG in), libsamplerate (to 16 kHz), FFTW (the front
# end's power spectra), libespeak-ng (`attnlab data speech-digits` synthesises in-process; espeak-ng-data
# comes with it) and the espeak-ng program (to listen to a voice by hand).
# MPI (docs/scale-out.md): Open MPI's headers, mpicc and mpirun for `make MPI=1` and `make test-mpi`.
# libarpack2-dev, liblapacke-dev: the Laplacian eigenvectors of gt-full's positional encodings (ARPACK's
# Lanczos; LAPACKE's dense dsyevd for small graphs and as the tests' reference).
# make never installs anything itself: this script is the one place that does.
set -u
PKGS="gcc make libc6-dev pkg-config libpng-dev libstb-dev libcmocka-dev zlib1g-dev dataset-fashion-mnist gnuplot-nox
      python3 python3-numpy python3-rdkit man-db clang libclang-rt-14-dev time util-linux
      libsndfile1-dev libsamplerate0-dev libfftw3-dev libespeak-ng-dev espeak-ng libopenmpi-dev openmpi-bin
      libarpack2-dev liblapacke-dev"
case "${1:-}" in
  --bench) PKGS="$PKGS python3-torch libopenblas0-pthread linux-perf"; shift ;;
esac
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in $PKGS; do have_pkg "$p" || missing+=("$p"); done
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "missing packages: ${missing[*]}"; exit 1
fi
[ ${#missing[@]} -eq 0 ] && { echo "install-deps: all packages present"; exit 0; }
echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"
else
  echo "install-deps: not root and no sudo; please install: ${missing[*]}" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
  $SUDO apt-get update >&2 && $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >&2 || {
    echo "install-deps: apt-get could not install: ${missing[*]} (is this Debian 12 with network access to its mirrors?)" >&2; exit 1; }
fi
echo "install-deps: done" >&2
