#!/usr/bin/env bash
# context-width.sh — how much context does part-of-speech tagging need? window-fc and trunc at growing
# context widths, sa (the whole sentence) as the reference: one seed, the full UD English EWT training
# set, 10 epochs, into results/context-width.csv through a resumable `attnlab sweep` (kill it, rerun
# it: finished runs are kept), then a table: model, tokens seen, params, test_acc, unseen_acc, ambig_acc.
#
# What --window means (both are a radius K: context on each side of the token):
#   window-fc --window K   the MLP sees the 2K+1 tokens i-K..i+K of the sentence, concatenated
#   trunc     --window K   each block's attention reaches keys within distance K: 2K+1 tokens per
#                          block; through its 2 blocks a token's output depends on 4K+1 tokens
#   sa                     every token of the sentence, in every block
# The widths below are TOKENS SEEN in one layer (odd numbers; --window (W-1)/2), so window-fc and one
# trunc block see the same tokens; the table also prints trunc's receptive field over all its blocks.
#
# usage: scripts/context-width.sh [--widths "1 3 5 9 17"] [--train-size N] [--epochs N] [--seed N]
#                                 [--data NAME|DIR] [--csv FILE] [--jobs N] [--table-only]
#   defaults: widths 1 3 5 9 17 (--window 0 1 2 4 8), train size 12544 (all of EWT), 10 epochs, seed 1,
#   results/context-width.csv. --table-only prints the table of an existing CSV without training.
#   A quick check of the tooling: scripts/context-width.sh --epochs 1 --train-size 200 --csv /tmp/cw.csv
#   ATTNLAB_BIN=path uses another binary (default bin/attnlab beside this script).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ATTNLAB_BIN:-$here/bin/attnlab}
widths="1 3 5 9 17" size=12544 epochs=10 seed=1 data=ud-english-ewt csv=results/context-width.csv jobs=1 table_only=0

die() { echo "context-width.sh: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see the usage at the top of $0)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --widths) need "$@"; widths=$2; shift ;;
    --train-size) need "$@"; size=$2; shift ;;
    --epochs) need "$@"; epochs=$2; shift ;;
    --seed) need "$@"; seed=$2; shift ;;
    --data) need "$@"; data=$2; shift ;;
    --csv) need "$@"; csv=$2; shift ;;
    --jobs) need "$@"; jobs=$2; shift ;;
    --table-only) table_only=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
[ -x "$bin" ] || { echo "context-width.sh: $bin is not built (run make)" >&2; exit 1; }

# widths (tokens seen) → --window radii: odd positive integers only
radii=""
for w in $widths; do
  case "$w" in ''|*[!0-9]*) die "--widths: '$w' is not a positive odd number of tokens" ;; esac
  [ $((w % 2)) -eq 1 ] || die "--widths: $w is even; a window of K tokens each side sees 2K+1 (odd) tokens"
  radii="$radii${radii:+,}$(((w - 1) / 2))"
done
[ -n "$radii" ] || die "--widths: no width given"

if [ $table_only -eq 0 ]; then
  "$bin" sweep --task sequence --data "$data" --models window-fc,trunc,sa --train-sizes "$size" --seeds "$seed" \
         --epochs "$epochs" --window "$radii" --jobs "$jobs" --csv "$csv" || exit $?
fi
[ -f "$csv" ] || { echo "context-width.sh: $csv does not exist (run without --table-only first)" >&2; exit 1; }

# The table, from the summary of the CSV's complete runs (config holds window=K and depth=D).
summary=$("$bin" summarize --csv "$csv") || exit 1
printf '%s\n' "$summary" | awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  {
    model = $col["model"]; cfg = $col["config"]; k = -1; depth = 1
    n = split(cfg, kv, ";")
    for (i = 1; i <= n; i++) { split(kv[i], p, "="); if (p[1] == "window") k = p[2]; if (p[1] == "depth") depth = p[2] }
    if (model == "sa") { seen = "sentence"; field = "sentence"; k = 1e9 }
    else { seen = 2 * k + 1; field = (model == "trunc") ? 2 * depth * k + 1 : 2 * k + 1 }
    u = ("unseen_acc_mean" in col && $col["unseen_acc_mean"] != "") ? sprintf("%.4f", $col["unseen_acc_mean"]) : "-"
    a = ("ambig_acc_mean" in col && $col["ambig_acc_mean"] != "") ? sprintf("%.4f", $col["ambig_acc_mean"]) : "-"
    printf "%s\t%d\t%s\t%s\t%s\t%d\t%.4f\t%s\t%s\t%d\n", model, k, (k >= 0 && k < 1e9) ? k : "-", seen, field, \
           $col["params"], $col["test_acc_mean"], u, a, $col["runs"]
  }' | sort -t "$(printf '\t')" -k1,1 -k2,2n | awk -F '\t' '
  BEGIN { printf "%-10s %7s %12s %16s %9s %9s %11s %10s\n", "model", "--window", "tokens seen", "receptive field", \
                 "params", "test_acc", "unseen_acc", "ambig_acc" }
  { printf "%-10s %7s %12s %16s %9d %9.4f %11s %10s\n", $1, $3, $4, $5, $6, $7, $8, $9 }
  END { if (NR == 0) print "(no complete runs yet)" }'
echo "tokens seen: per layer (window-fc: its input window; trunc: one block); receptive field: through every block"
