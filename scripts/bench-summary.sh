#!/usr/bin/env bash
# bench-summary.sh — make bench's acceptance items: each target of scripts/bench-targets.tsv against the
# value in make bench's tables, "met", "NOT MET" or "not measured" (one line each).
#   scripts/bench-summary.sh DIR          the tables make bench (scripts/bench.sh) wrote into DIR: images, eval, graph
#   scripts/bench-summary.sh --log FILE   the same tables read back from a saved make bench log (the training table,
#                                         the evaluation's peak RSS, bench graph's rows; the inference img/s is not
#                                         printed in a log: that item reads "not measured")
# BENCH_TARGETS=FILE: another targets file.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
targets=${BENCH_TARGETS:-$here/scripts/bench-targets.tsv}
[ -r "$targets" ] || { echo "bench-summary: cannot read $targets" >&2; exit 2; }
if [ "${1:-}" = --log ]; then
  log=${2:?usage: bench-summary.sh DIR | --log FILE}
  [ -r "$log" ] || { echo "bench-summary: cannot read $log" >&2; exit 2; }
  dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
  awk -v d="$dir" '
    /^model +attnlab img\/s/ { t = 1; next }
    t && /^\(medians/ { t = 0 }
    t && NF >= 8 { r = $4; s = $8; sub(/x$/, "", r); sub(/%$/, "", s); print $1, $2, r, $5, s > (d "/images") }
    /^== pixel-level sa evaluation/ { e = 1 }
    e && /^peak RSS [0-9.]+ MB,/ { printf "%s", $3 > (d "/eval"); e = 0 }
    /^graph +nodes +edges model/ { g = 1; next }
    g && NF == 10 && $2 ~ /^[0-9]+$/ { print > (d "/graph"); next }
    g && NF != 10 { g = 0 }' "$log"
else
  dir=${1:?usage: bench-summary.sh DIR | --log FILE}
fi
awk -F'\t' -v dir="$dir" '
  function table(name,   f, line, n) {            # rows of DIR/name into rows[name, i], once
    if (name in nrows) return
    f = dir "/" name; n = 0
    while ((getline line < f) > 0) rows[name, ++n] = line
    close(f); nrows[name] = n
  }
  function lookup(src,   name, sel, col, i, k, c, w, conds, m, kv, ok, num, den) {
    name = src; sel = ""; col = src
    sub(/:.*/, "", name); sub(/^[^:]*:/, "", col)
    if (name ~ /\[/) { sel = name; sub(/^[^[]*\[/, "", sel); sub(/\]$/, "", sel); sub(/\[.*/, "", name) }
    table(name)
    m = sel == "" ? 0 : split(sel, conds, ",")
    for (i = 1; i <= nrows[name]; i++) {
      k = split(rows[name, i], w, " "); ok = 1
      for (c = 1; c <= m; c++) { split(conds[c], kv, "="); if (w[kv[1]] != kv[2]) ok = 0 }
      if (!ok) continue
      if (split(col, num, "/") == 2) return (w[num[2]] + 0 > 0) ? sprintf("%.2f", w[num[1]] / w[num[2]]) : ""
      return w[col]
    }
    return ""
  }
  /^#/ || NF == 0 { next }
  NF != 5 || ($3 != ">=" && $3 != "<=") { printf "bench-summary: %s:%d: want item, source, >= or <=, target, unit (tab-separated)\n", FILENAME, FNR > "/dev/stderr"; bad = 1; next }
  {
    v = lookup($2); u = ($5 == "%" || $5 == "x") ? $5 : " " $5
    if (v == "" || v == "nan" || v == "-" || v + 0 <= 0) { printf "   %-44s %12s   target %s %s%s   not measured\n", $1, "-", $3, $4, u; next }
    ok = $3 == ">=" ? v + 0 >= $4 + 0 : v + 0 <= $4 + 0
    printf "   %-44s %12s   target %s %s%s   %s\n", $1, v u, $3, $4, u, ok ? "met" : "NOT MET"
  }
  END { exit bad ? 2 : 0 }' "$targets"
