#!/usr/bin/env bash
# The tables of results/README.md ("Speech") from the logs of scripts/speech-experiments.sh: one row per
# run key with its final test accuracy, digit-string error rate, training frames/s and peak RSS.
#   scripts/speech-tables.sh [DIR]      (default results)
set -u
dir=${1:-results}
for what in window main speakers; do
  f="$dir/speech-$what.log"
  [ -s "$f" ] || continue
  echo "### speech-$what ($f)"
  echo
  echo "| run | model | train clips | test_acc | string_err | train frames/s | peak RSS MB |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  awk '{
    key = $1; m = ""; n = ""; acc = ""; ser = ""; fps = ""; rss = "";
    for (i = 2; i < NF; i++) {
      if ($i == "model") m = $(i + 1);
      if ($i == "train_size") n = $(i + 1);
      if ($i == "test_acc") acc = $(i + 1);
      if ($i == "string_err") ser = $(i + 1);
      if ($i == "train_frames_per_s") fps = $(i + 1);
      if ($i == "peak_rss_kb") rss = sprintf("%.0f", $(i + 1) / 1024);
    }
    printf "| %s | %s | %s | %s | %s | %s | %s |\n", key, m, n, acc, (ser == "nan" ? "-" : ser), fps, rss
  }' "$f"
  echo
done
