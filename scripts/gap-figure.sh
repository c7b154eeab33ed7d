#!/bin/bash
# gap-figure.sh — the one figure of "when does attention win?" (results/README.md): for each preset whose results are in DIR, the test accuracy
# of the best attention model minus the fixed-prior baseline (the cnn on images, gat on graphs, window-fc
# on sequences), in points, against the preset's axis, with error bars.
#
#   scripts/gap-figure.sh [DIR [OUT.png]]      (default results, results/attention-vs-prior.png)
#
# Per preset and axis point: the means over seeds of every model and variant (attnlab summarize --csv);
# the best attention model is the one with the highest mean at that point (sa at any patch, local,
# hybrid; gatv2, gt, gt-full, gat-full; sa, trunc), the baseline its own best variant; the error bar is
# sqrt(std_best^2 + std_base^2) of the two groups' seed-to-seed standard deviations. Above zero: attention
# wins there. Also writes OUT.tsv (preset, series, x, gap, error, best model) — the figure's numbers. A point
# where some attention model of the preset (one that ran anywhere in its CSV) has not run is left out, with a
# note on stderr: a preset still running shows only the points every contender reached.
# Presets without a CSV in DIR are left out (a panel per preset found). Exit 2 when there is none.
set -euo pipefail
DIR=${1:-results}
OUT=${2:-$DIR/attention-vs-prior.png}
BIN=${ATTNLAB_BIN:-$(dirname "$0")/../bin/attnlab}
command -v gnuplot >/dev/null || { echo "gap-figure.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "gap-figure.sh: $BIN is not built (make)" >&2; exit 1; }

# preset | baseline | attention models (comma list) | series config key (or -) | x: size or len | x label
PRESETS='image-tradeoff|cnn|sa,local|-|size|training images
prior-mismatch|cnn|sa,local,hybrid|permute_pixels|size|training images (series: pixels permuted or not)
augment|cnn|sa,hybrid|augment|size|training images (series: augmentation)
long-range|cnn|sa,hybrid|-|size|generated fashion-pairs examples
graph-fair|gat|gatv2,gt,gt-full,gat-full|-|size|labelled training nodes (Cora)
sequence-tradeoff|window-fc|sa,trunc|-|size|training sentences (UD EWT)
distance|window-fc|sa,trunc|-|len|recall: sequence length'

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TSV="$TMP/gap.tsv"
printf 'preset\tseries\tx\tgap_points\terror_points\tbest\n' > "$TSV"
n=0
while IFS='|' read -r preset base att key xkind xlabel; do
    csv=""
    for f in "$DIR/$preset.csv" "$DIR/$preset.csv.gz"; do [ -f "$f" ] && { csv=$f; break; }; done
    [ -n "$csv" ] || continue
    "$BIN" summarize "$csv" --csv 2>/dev/null > "$TMP/sum.csv" || { echo "gap-figure.sh: cannot summarize $csv" >&2; exit 1; }
    awk -F, -v preset="$preset" -v base="$base" -v att="$att" -v key="$key" -v xkind="$xkind" '
        BEGIN { na = split(att, al, ","); for (i = 1; i <= na; i++) isatt[al[i]] = 1 }
        NR == 1 { next }
        {
            model = $3; mean = $6; std = $7; cfg = $11
            series = "all"
            if (key != "-") {
                series = "none"
                n = split(cfg, kv, ";")
                for (i = 1; i <= n; i++) { split(kv[i], p, "="); if (p[1] == key) series = (key == "permute_pixels" ? "permuted" : p[2]) }
                if (key == "permute_pixels" && series == "none") series = "original"
            }
            x = $4
            if (xkind == "len") { x = $2; sub(/^[a-z]+:/, "", x) }
            g = series SUBSEP x
            pts[g] = 1
            if (model == base) { if (!(g in bm) || mean > bm[g]) { bm[g] = mean; bs[g] = std } }
            else if (model in isatt) {
                if (!(g in am) || mean > am[g]) { am[g] = mean; as[g] = std; an[g] = model }
                if (!((g, model) in ran)) { ran[g, model] = 1; nat[g]++ }
                if (!(model in seen)) { seen[model] = 1; nseen++ }
            }
        }
        END {
            for (g in pts) {
                if (!(g in bm) || !(g in am)) continue
                split(g, k, SUBSEP)
                if (nat[g] < nseen) {   # a contender of the preset has not run here (yet): no best to name
                    printf "gap-figure.sh: %s %s x=%s left out: %d of the %d attention models ran there\n", preset, k[1], k[2],
                           nat[g], nseen > "/dev/stderr"
                    continue
                }
                printf "%s\t%s\t%s\t%.2f\t%.2f\t%s\n", preset, k[1], k[2], 100 * (am[g] - bm[g]),
                       100 * sqrt(as[g] * as[g] + bs[g] * bs[g]), an[g]
            }
        }' "$TMP/sum.csv" | sort -t$'\t' -k2,2 -k3,3n >> "$TSV"
    grep -q "^$preset	" "$TSV" || continue
    echo "$preset|$base|$xlabel" >> "$TMP/panels"
    n=$((n + 1))
done <<< "$PRESETS"
[ "$n" -gt 0 ] || { echo "gap-figure.sh: no preset results (image-tradeoff.csv, prior-mismatch.csv, ...) in $DIR" >&2; exit 2; }

cols=$(( n < 3 ? n : 3 )); rows=$(( (n + cols - 1) / cols ))
{
    echo "set terminal pngcairo size $((cols * 480)),$((rows * 380 + 40)) font ',10'"
    echo "set output '$TMP/out.png'"
    echo "set datafile separator '\t'"
    echo "set multiplot layout $rows,$cols title 'Best attention model minus the fixed prior (points of test accuracy; above 0: attention wins)'"
    echo "set logscale x; set grid; set key top left font ',9'; set ylabel 'accuracy gap (points)'"
    while IFS='|' read -r preset base xlabel; do
        echo "set title '$preset: best attention - $base'; set xlabel '$xlabel'"
        series=$(awk -F'\t' -v p="$preset" '$1 == p { print $2 }' "$TSV" | sort -u)
        plot="plot 0 with lines lc 'black' dt 2 notitle"
        for s in $series; do
            plot="$plot, '< awk -F\"\\t\" \"\\\$1 == \\\"$preset\\\" && \\\$2 == \\\"$s\\\"\" $TSV' using 3:4:5 with yerrorlines lw 2 pt 7 title '$s'"
        done
        echo "$plot"
    done < "$TMP/panels"
    echo "unset multiplot"
} > "$TMP/gap.gp"
gnuplot "$TMP/gap.gp"
mkdir -p "$(dirname "$OUT")"
cp "$TSV" "$OUT.tsv.tmp.$$" && mv -f "$OUT.tsv.tmp.$$" "${OUT%.png}.tsv"
cp "$TMP/out.png" "$OUT.tmp.$$" && mv -f "$OUT.tmp.$$" "$OUT"
echo "gap-figure.sh: $n panels to $OUT, numbers in ${OUT%.png}.tsv" >&2
