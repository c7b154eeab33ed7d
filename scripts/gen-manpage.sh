#!/usr/bin/env bash
# Writes the attnlab(1) man page to stdout: a fixed introduction, then every command's own --help
# text, so the page cannot drift from the program (tests/test_cli_docs.c checks that every option
# of every --help appears in docs/attnlab.1).   scripts/gen-manpage.sh [BIN] > docs/attnlab.1
set -euo pipefail
bin=${1:-bin/attnlab}
version=$(sed -n 's/^#define AL_VERSION_STRING "\(.*\)"/\1/p' "$(dirname "$0")/../include/attnlab/version.h")
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/" -e 's/-/\\-/g'; }
section() {  # section TITLE ARGS...: the --help of `attnlab ARGS --help` as a literal block
  local title=$1; shift
  printf '.SS %s\n.nf\n' "$title"
  "$bin" "$@" --help 2>&1 | esc
  printf '.fi\n'
}
cat <<HDR
.TH ATTNLAB 1 "" "attnlab $version" "User Commands"
.SH NAME
attnlab \\- self\\-attention, convolution and recurrence on one tensor core, measured on real data
.SH SYNOPSIS
.B attnlab
.I COMMAND
.RI [ OPTIONS ]
.br
.B attnlab \\-\\-version
.SH DESCRIPTION
.B attnlab
trains and evaluates image classifiers (a CNN, full self\\-attention, window attention, convolution
run as attention), graph node classifiers (GAT, GATv2, a graph transformer, GCN, MLP, attention
over all nodes) and runs resumable experiment sweeps, summaries, plots, attention maps and
benchmarks. Every command prints its options and defaults with \\fB\\-\\-help\\fR; the sections
below are those texts.
Errors are one line on standard error with a non\\-zero exit status (2 for bad arguments, 1 for
failures at run time).
.SH COMMANDS
HDR
"$bin" --help 2>&1 | esc | sed -e '1i .nf' -e '$a .fi'
printf '.SH OPTIONS\n'
section "attnlab train (images)" train
section "attnlab train \\-\\-task graph" train --task graph
section "attnlab train \\-\\-task sequence" train --task sequence
section "attnlab train \\-\\-task molecule" train --task molecule
section "attnlab train \\-\\-task speech" train --task speech
for c in eval predict sweep summarize plot attnmap bench tag; do section "attnlab $c" "$c"; done
section "attnlab data" data
section "attnlab data import" data import
section "attnlab data speech\\-digits" data speech-digits
section "attnlab data audio\\-stats" data audio-stats
for b in gemm attention train graph seq speech; do section "attnlab bench $b" bench "$b"; done
cat <<'FTR'
.SH ENVIRONMENT
.TP
.B ATTNLAB_DATA
a directory holding datasets by name (\fIcora\fR, \fIfashion\-mnist\fR, ...), searched after an
explicit \fB\-\-data\fR path and before the repository's \fIdatasets/\fR and the installed data.
.TP
.B ATTNLAB_FASHION_MNIST
the directory of the four Fashion\-MNIST IDX files (default \fI/usr/share/datasets/fashion\-mnist\fR,
from Debian's \fIdataset\-fashion\-mnist\fR).
.TP
.B OMP_NUM_THREADS
the default thread count; \fB\-\-threads\fR overrides it. Results do not depend on it.
.SH FILES
.TP
.I PREFIX/share/attnlab/datasets
the bundled datasets (Cora, UD English EWT, ESOL) of an installed copy.
.TP
.I PREFIX/lib/pkgconfig/attnlab.pc
for programs that embed the library: \fBcc prog.c $(pkg\-config \-\-cflags \-\-libs attnlab)\fR.
.SH EXAMPLES
.nf
attnlab train \-\-model cnn \-\-train\-size 1000 \-\-epochs 30 \-\-csv runs.csv \-\-save cnn.safetensors
attnlab train \-\-task graph \-\-data cora \-\-model gat \-\-seeds 1\-10
attnlab predict \-\-load cnn.safetensors photos/ > predictions.csv
attnlab eval \-\-task graph \-\-load gat.safetensors
attnlab sweep \-\-preset demo
attnlab summarize results/demo.csv
.fi
.SH SEE ALSO
The README and docs/ of the source tree: architecture, attention kernels, experiments, performance.
FTR
