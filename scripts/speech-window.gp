# results/speech-window.png from results/speech-window.log: frame accuracy and digit-string error of
# trunc against its window (frames each side), full attention (sa) as horizontal lines.
#   gnuplot -e "log='results/speech-window.log'; out='results/speech-window.png'" scripts/speech-window.gp
set terminal pngcairo size 900,520 font ",11"
set output out
trunc = sprintf("< awk '$1 ~ /^trunc-w/ { w = substr($1, 8); for (i = 2; i < NF; i++) { if ($i == \"test_acc\") a = $(i+1); if ($i == \"string_err\") e = $(i+1) } print w, a, e }' %s | sort -n", log)
sa_acc = real(system(sprintf("awk '$1 == \"sa\" { for (i = 2; i < NF; i++) if ($i == \"test_acc\") print $(i+1) }' %s", log)))
sa_err = real(system(sprintf("awk '$1 == \"sa\" { for (i = 2; i < NF; i++) if ($i == \"string_err\") print $(i+1) }' %s", log)))
set multiplot layout 1,2 title "Speech frame labelling (spoken digits, 500 test utterances of unseen voices): trunc's window vs full attention"
set logscale x 2
set xlabel "trunc window (frames each side, 10 ms each)"
set grid
set key bottom right
set ylabel "frame accuracy"
set yrange [0.88:1]
plot trunc using 1:2 with linespoints lw 2 pt 7 title "trunc", sa_acc with lines lw 2 dt 2 title "sa (whole utterance)"
set ylabel "digit-string error"
set yrange [0:1]
set key top right
plot trunc using 1:3 with linespoints lw 2 pt 7 title "trunc", sa_err with lines lw 2 dt 2 title "sa (whole utterance)"
unset multiplot
