#!/usr/bin/env bash
# make bench: attnlab's benchmarks, with the PyTorch peer run side by side when torch is importable.
#   scripts/bench.sh               run everything that is implemented
#   ATTNLAB_BIN=path scripts/bench.sh   use another binary (default bin/attnlab beside this script)
#   BENCH_REPS=3 BENCH_STEPS=30 BENCH_THREADS=2 BENCH_BATCH=64   image-training comparison settings
#   BENCH_ONLY=train               only the image-training table
#   BENCH_ONLY=seq                 only the two sequence-model tables (whole epochs, length buckets)
#   BENCH_ONLY=speech              only the speech cost-vs-length table (bench speech: sa, trunc, rnn at 1-16 s)
#   BENCH_SEQ_REPS=3 BENCH_SEQ_MODELS=fc,window-fc,rnn,sa,trunc BENCH_SEQ_BUCKET_MODELS=rnn,sa,trunc
#   BENCH_SEQ_BUCKETS=1-10,11-20,21-40,41-80,81-
#                                  sequence tables: alternating repetitions, models of each table (empty:
#                                  skip that table), length buckets
#   BENCH_PROFILE=0                skip the per-op profile after the image-training table (scripts/profile.sh)
#   BENCH_PEER_UNFOLD=0            skip PyTorch's local-unfold (on a loaded machine it runs at a few img/s)
#   BENCH_EVAL=0                   skip pixel-level sa's evaluation of the 10 000 test images (peak RSS, time)
#   BENCH_LOG=1                    also write the whole output to results/bench/HOST-DATE-WHAT.txt (HOST: the
#                                  host kind, e.g. zen5, intel-avx512, with -x86-64-v3 when the binary runs AVX2
#                                  kernels on an AVX-512 host; WHAT: make-bench, train, seq or speech; -HHMM is
#                                  added when that name is taken); BENCH_LOG=FILE writes to FILE
# At the end (and after BENCH_ONLY=train) the performance targets are read off the run's tables and
# printed against their targets, with the host's CPU model.
# Image training: for each model, attnlab and the peer alternate (attnlab, torch, attnlab, torch, ...)
# BENCH_REPS times each, and one table reports the medians (this machine is shared and noisy).
# For `local` the peer's figure is the faster of its `local` (masked dense) and `local-unfold`.
# Sequence models (POS tagging on UD English EWT, batch 32 sentences): attnlab bench seq and the peer
# torch_pos.py alternate, one training epoch each, BENCH_SEQ_REPS times per model, medians of training
# tokens/s; then the same for batches drawn from one sentence-length bucket (attnlab bench seq
# --buckets against scripts/torch_pos_buckets.py, which runs the peer's own models). The peer is
# skipped when torch does not import or ../shared is absent.
# A subcommand that is not implemented yet ("not implemented" on stderr) is skipped with a note;
# any other failure makes the script exit non-zero after the remaining benchmarks have run.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${ATTNLAB_BIN:-$here/bin/attnlab}
shared=${ATTNLAB_SHARED:-$here/../shared}
reps=${BENCH_REPS:-3} steps=${BENCH_STEPS:-30} threads=${BENCH_THREADS:-2} batch=${BENCH_BATCH:-64}
[ -x "$bin" ] || { echo "bench.sh: $bin not built (run make)" >&2; exit 1; }

# The host kind that names a log (results/bench/README.md): AMD by family and model (family 23 from model 49 on
# is Zen 2; family 25 is Zen 3 except models 16-31, 96-127 and 160-175, which are Zen 4; family 26 is Zen 5),
# Intel by whether it has AVX-512; a binary whose kernels are narrower than the host's adds its build.
host_kind() {
  local kind widest kernels
  kind=$(lscpu 2>/dev/null | awk -F': *' '$1 == "Vendor ID" { v = $2 } $1 == "CPU family" { f = $2 + 0 } $1 == "Model" { m = $2 + 0 }
    END { if (v == "AuthenticAMD") {
            if (f == 23) print (m >= 49 ? "zen2" : "zen1")
            else if (f == 25) print ((m >= 16 && m <= 31) || (m >= 96 && m <= 127) || (m >= 160 && m <= 175) ? "zen4" : "zen3")
            else if (f == 26) print "zen5"
            else print "amd-family" f
          } else if (v == "GenuineIntel") print "intel"
          else print "unknown" }')
  widest=scalar
  grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && widest=avx2
  grep -qw avx512f /proc/cpuinfo 2>/dev/null && widest=avx512
  [ "$kind" = intel ] && [ $widest = avx512 ] && kind=intel-avx512
  kernels=$("$bin" --version 2>/dev/null | sed -n 's/.*(kernels \([a-z0-9]*\).*/\1/p')
  if [ -n "$kernels" ] && [ "$kernels" != $widest ]; then
    case $kernels in avx2) kind=$kind-x86-64-v3 ;; scalar) kind=$kind-portable ;; *) kind=$kind-$kernels ;; esac
  fi
  echo "$kind"
}
if [ -n "${BENCH_LOG:-}" ] && [ "${BENCH_LOG}" != 0 ] && [ -z "${BENCH_LOG_ACTIVE:-}" ]; then
  log=$BENCH_LOG
  if [ "$log" = 1 ]; then
    case ${BENCH_ONLY:-} in "") what=make-bench ;; *) what=$BENCH_ONLY ;; esac
    log=$here/results/bench/$(host_kind)-$(date -u +%F)-$what.txt
    [ -e "$log" ] && log=${log%.txt}-$(date -u +%H%M).txt
  fi
  mkdir -p "$(dirname "$log")" || exit 1
  echo "bench.sh: writing $log" >&2
  BENCH_LOG_ACTIVE=1 "$0" "$@" 2>&1 | tee "$log"
  exit "${PIPESTATUS[0]}"
fi

status=0
ncpu=$(nproc 2>/dev/null || echo 1)
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
echo "# $(date -u '+%F %T') UTC, $ncpu CPUs, load average $load, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"
echo "# host kind $(host_kind); $("$bin" --version 2>/dev/null)"
if [ -z "${OMP_WAIT_POLICY:-}" ] && awk -v l="$load" -v n="$ncpu" 'BEGIN { exit !(l > n) }'; then
  echo "# note: the machine is busier than its CPUs; multi-threaded timings will be noisy. On a shared"
  echo "#       machine OMP_WAIT_POLICY=passive avoids OpenMP threads spinning while their partner waits"
  echo "#       for a CPU (docs/performance.md)."
fi
echo
outdir=$(mktemp -d)
run() {   # run NAME ARGS... : one benchmark, its stdout/stderr shown (stdout kept in $outdir/NAME),
          # "not implemented" skipped
  local name=$1; shift
  echo "== $name: $(basename "$bin") $*"
  local err; err=$(mktemp)
  "$bin" "$@" 2>"$err" | tee "$outdir/$name"; local rc=${PIPESTATUS[0]}
  if [ $rc -ne 0 ] && grep -qi "not implemented" "$err"; then
    echo "   (skipped: $name is not implemented yet)"
  else
    cat "$err" >&2
    if [ $rc -ne 0 ]; then echo "   ($name failed with exit status $rc)"; status=1; fi
  fi
  rm -f "$err"
  echo
}

# torch is installed for Debian's python; the python3 first on PATH may be another one without it.
py=
for p in /usr/bin/python3 python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1; then py=$p; break; fi
done
tpy=$py                              # torch's python, whichever peer scripts exist
peer=$shared/peers/torch_bench.py
[ -f "$peer" ] || py=

only=${BENCH_ONLY:-}   # BENCH_ONLY=train: the image-training table alone; seq: the sequence tables alone
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }
want all && run "gemm" bench gemm
want all && run "attention" bench attention
gemm_rate=   # the 2-thread 1024^3 al_gemm GFLOP/s of this run (bench gemm), read once
if want all; then
  # pixel-level full attention (N = 784) fwd+bwd against the 1024^3 GEMM, both 2-thread wall clock
  gemm_rate=$(awk '$1 == "square" && $2 == "1024x1024x1024" && $4 == 2 && $5 == "attnlab" { print $7 }' "$outdir/gemm" 2>/dev/null)
  g=$gemm_rate
  a=$(awk '$1 == "full" && $2 == 784 { print $10 }' "$outdir/attention" 2>/dev/null)
  awk -v a="$a" -v g="$g" 'BEGIN { if (a + 0 > 0 && g + 0 > 0)
    printf "== full attention N=784 fwd+bwd %.1f GFLOP/s = %.0f%% of bench gemm 1024^3 (2 threads, %.1f GFLOP/s); target >= 50%%\n\n", a, 100 * a / g, g }'
fi

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { awk -v m="$1" -v k="$2" '$1 == m { for (i = 2; i < NF; i++) if ($i == k) print $(i + 1) }'; }
# local: the peer's masked-dense `local` and its `local-unfold` in the first repetition; later
# repetitions keep local-unfold only if it came within 2x of local (it is often >5x slower, and slow).
unfold=${BENCH_PEER_UNFOLD:-1}   # BENCH_PEER_UNFOLD=0: never run the peer's local-unfold
peer_models() { if [ "$1" = local ] && [ $unfold = 1 ]; then echo local,local-unfold; else echo "$1"; fi; }
# the performance targets, read off this run's tables above (medians), each against its target in
# scripts/bench-targets.tsv
summary() {
  local cpu; cpu=$(lscpu 2>/dev/null | awk -F': *' '$1 == "Model name" { n = $2 } $1 == "CPU family" { f = $2 } $1 == "Model" { m = $2 }
                                              END { printf "%s, family %s model %s", n, f, m }')
  echo "== performance targets, this run ($cpu; $(grep -qw avx512f /proc/cpuinfo && echo 'a host with AVX-512' || echo 'a host without AVX-512'); $(cat "$outdir/paths" 2>/dev/null))"
  [ -n "$gemm_rate" ] && echo "   1024^3 GEMM, 2 threads: $gemm_rate GFLOP/s"
  "$here/scripts/bench-summary.sh" "$outdir"   # the targets: scripts/bench-targets.tsv
}

if want train; then
echo "== image training, batch $batch, $threads threads, $steps steps, $reps alternating repetitions each"
echo "   attnlab: $(basename "$bin") bench train --model M --batch $batch --threads $threads --steps $steps"
if [ -n "$py" ]; then
  echo "   PyTorch: OPENBLAS_NUM_THREADS=1 $py $peer --threads $threads --batch $batch --steps $steps --models M"
else
  echo "   PyTorch: skipped ($([ -f "$peer" ] && echo "no python3 can import torch; apt-get install python3-torch" || echo "$peer not found"))"
fi
tmp=$(mktemp -d)
for m in cnn sa local; do
  for r in $(seq "$reps"); do
    if ! "$bin" bench train --model "$m" --batch "$batch" --threads "$threads" --steps "$steps" >>"$tmp/al.$m" 2>>"$tmp/al.err"; then
      echo "   (attnlab bench train --model $m failed)"; cat "$tmp/al.err" >&2; status=1
    fi
    if [ -n "$py" ]; then
      if ! OPENBLAS_NUM_THREADS=1 "$py" "$peer" --threads "$threads" --batch "$batch" --steps "$steps" \
           --models "$(peer_models "$m")" >>"$tmp/pt.$m" 2>>"$tmp/pt.err"; then
        echo "   (PyTorch peer --models $(peer_models "$m") failed)"; status=1
      fi
      if [ "$m" = local ] && [ "$r" = 1 ] && [ $unfold = 1 ]; then
        unfold=$(awk '$1 == "local" { a = $3 } $1 == "local-unfold" { u = $3 } END { print (u + 0 >= 0.5 * a) ? 1 : 0 }' "$tmp/pt.$m")
        [ $unfold = 1 ] || echo "   (PyTorch local-unfold was under half of local's img/s in repetition 1: later repetitions run local only)"
      fi
    fi
  done
done
# pixel-level sa (784 tokens): attnlab only (the peer has no --patch), the same repetitions
for r in $(seq "$reps"); do
  "$bin" bench train --model sa --patch 1 --batch "$batch" --threads "$threads" --steps "$steps" 2>>"$tmp/al.err" \
    | sed 's/^sa /sa-p1 /; s/^  by-op sa /  by-op sa-p1 /' >>"$tmp/al.sa-p1" || { echo "   (attnlab bench train --model sa --patch 1 failed)"; status=1; }
done
printf '\n%-8s %16s %16s %8s %18s %10s %9s %9s   %s\n' model "attnlab img/s" "PyTorch img/s" ratio "attnlab RSS (MB)" \
  "MFLOP/img" "GFLOP/s" "of gemm" "runs (attnlab | PyTorch)"
for m in cnn sa local sa-p1; do
  al_runs=$(field "$m" train_img_per_s <"$tmp/al.$m" 2>/dev/null | tr '\n' ' ')
  al=$(field "$m" train_img_per_s <"$tmp/al.$m" 2>/dev/null | median)
  rss=$(field "$m" peak_rss_mb <"$tmp/al.$m" 2>/dev/null | median)
  mf=$(field "$m" mflop_per_img <"$tmp/al.$m" 2>/dev/null | median)
  gf=$(field "$m" train_gflops <"$tmp/al.$m" 2>/dev/null | median)
  share=$(field "$m" train_share <"$tmp/al.$m" 2>/dev/null | median | awk '$1 != "nan" { printf "%.0f", 100 * $1 }')
  pt=nan pt_runs=
  if [ -n "$py" ] && [ -f "$tmp/pt.$m" ]; then
    # per repetition, the peer's best variant (local: masked dense or unfold)
    if [ "$m" = local ]; then
      pt_list=$(awk '$1 == "local" || $1 == "local-unfold" { if (!($1 in seen)) seen[$1] = 0; seen[$1]++;
                     r = seen[$1]; if (!(r in best) || $3 > best[r]) best[r] = $3; if (r > n) n = r }
                     END { for (i = 1; i <= n; i++) print best[i] }' "$tmp/pt.$m")
    else
      pt_list=$(field "$m" train_img_per_s <"$tmp/pt.$m")
    fi
    pt_runs=$(echo "$pt_list" | tr '\n' ' ')
    pt=$(echo "$pt_list" | median)
  fi
  ratio=$(awk -v a="$al" -v b="$pt" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b }')
  rtxt=${ratio:+${ratio}x} stxt=${share:+$share%}
  printf '%-8s %16s %16s %8s %18s %10s %9s %9s   %s| %s\n' "$m" "$al" "$pt" "${rtxt:--}" "$rss" "$mf" "$gf" "${stxt:--}" \
    "$al_runs" "$pt_runs"
  infer=$(field "$m" infer_img_per_s <"$tmp/al.$m" 2>/dev/null | median)
  echo "$m $al ${ratio:--} $rss ${share:--} $infer" >>"$outdir/images"   # for the targets' summary
done
echo "(medians; ratio = attnlab / PyTorch training img/s; PyTorch local = faster of local and local-unfold;"
echo " MFLOP/img = matmul-class FLOPs of one training step per image (forward + backward); GFLOP/s = MFLOP/img x img/s;"
echo " of gemm = GFLOP/s / the same run's 1024^3 al_gemm rate; sa-p1 = sa --patch 1, 784 tokens, no peer)"
for m in cnn sa local sa-p1; do
  grep -m1 "^  by-op $m " "$tmp/al.$m" 2>/dev/null
done
grep -m3 -E "gemm|attention kernels|convolutions:" "$tmp/al.err" 2>/dev/null | sed 's/^attnlab bench train: /paths: /'
grep -m1 -E "gemm" "$tmp/al.err" 2>/dev/null | sed 's/^attnlab bench train: //' >"$outdir/paths"
# pixel-level sa's evaluation of the 10 000 test images without a tape: peak RSS and time, from a checkpoint
# trained for one epoch on 64 images (the weights do not change the cost)
if [ "${BENCH_EVAL:-1}" != 0 ]; then
  echo
  echo "== pixel-level sa evaluation: $(basename "$bin") eval --load sa-p1.safetensors --threads $threads (10 000 test images)"
  if "$bin" train --task image --model sa --patch 1 --train-size 64 --test-size 64 --epochs 1 --threads "$threads" \
       --save "$tmp/sa-p1.safetensors" >/dev/null 2>"$tmp/ev.err" &&
     /usr/bin/time -f "peak_rss_kb %M elapsed_s %e" -o "$tmp/ev.time" "$bin" eval --load "$tmp/sa-p1.safetensors" \
       --threads "$threads" >"$tmp/ev.out" 2>>"$tmp/ev.err"; then
    cat "$tmp/ev.out"
    awk '{ printf "%.1f", $2 / 1024 }' "$tmp/ev.time" >"$outdir/eval"
    awk -v mb="$(cat "$outdir/eval")" '{ printf "peak RSS %s MB, %.1f s (%.0f img/s)\n", mb, $4, 10000 / $4 }' "$tmp/ev.time"
  else
    echo "   (evaluation failed)"; cat "$tmp/ev.err" >&2; status=1
  fi
fi
rm -rf "$tmp"
echo
# Where each model's training step spends its CPU time, by op (scripts/profile.sh; needs perf).
if [ "${BENCH_PROFILE:-1}" != 0 ]; then
  echo "== where the training step's time goes: scripts/profile.sh (perf record, bench train --train-only)"
  if command -v perf >/dev/null 2>&1; then
    ATTNLAB_BIN=$bin PROFILE_THREADS=$threads "$here/scripts/profile.sh" cnn,sa,local,sa-p1 || echo "   (profile.sh failed)"
  else
    echo "   (skipped: perf not installed; apt-get install linux-perf)"
  fi
  echo
fi
fi

# ---------------- sequence models (POS tagging) ----------------
seq_reps=${BENCH_SEQ_REPS:-3}
seq_models=${BENCH_SEQ_MODELS-fc,window-fc,rnn,sa,trunc}   # empty: skip the whole-epoch table
seq_buckets=${BENCH_SEQ_BUCKETS:-1-10,11-20,21-40,41-80,81-}
bmodels=${BENCH_SEQ_BUCKET_MODELS-rnn,sa,trunc}   # BENCH_SEQ_BUCKET_MODELS= (empty) skips the bucket table
seq_data=$here/datasets/ud-english-ewt
speer=$shared/peers/torch_pos.py bpeer=$here/scripts/torch_pos_buckets.py
spy=$tpy
[ -n "$spy" ] && [ -f "$speer" ] || spy=
seq_peer_note() {
  if [ -n "$spy" ]; then echo "   PyTorch: OPENBLAS_NUM_THREADS=1 $spy $1"
  elif [ -z "$tpy" ]; then echo "   PyTorch: skipped (no python3 can import torch; apt-get install python3-torch)"
  else echo "   PyTorch: skipped ($speer not found)"; fi
}
if want seq && [ -n "$seq_models" ]; then
  echo "== sequence training (POS tagging, UD English EWT), one epoch, batch 32 sentences, $threads threads, $seq_reps alternating repetitions"
  echo "   attnlab: $(basename "$bin") bench seq --models M --threads $threads"
  seq_peer_note "$speer --data $seq_data --models M --epochs 1 --threads $threads"
  tmp=$(mktemp -d)
  for m in ${seq_models//,/ }; do
    for r in $(seq "$seq_reps"); do
      if ! "$bin" bench seq --models "$m" --threads "$threads" >>"$tmp/al.$m" 2>>"$tmp/al.err"; then
        echo "   (attnlab bench seq --models $m failed)"; cat "$tmp/al.err" >&2; status=1
      fi
      if [ -n "$spy" ] && ! OPENBLAS_NUM_THREADS=1 "$spy" "$speer" --data "$seq_data" --models "$m" --epochs 1 \
           --threads "$threads" >>"$tmp/pt.$m" 2>>"$tmp/pt.err"; then
        echo "   (PyTorch torch_pos.py --models $m failed)"; cat "$tmp/pt.err" >&2; status=1
      fi
    done
  done
  printf '\n%-10s %16s %16s %8s   %s\n' model "attnlab tok/s" "PyTorch tok/s" ratio "runs (attnlab | PyTorch)"
  for m in ${seq_models//,/ }; do
    al_list=$(field "$m" train_tokens_per_s <"$tmp/al.$m" 2>/dev/null)
    pt_list=$(awk -v m="$m" '$1 == "RESULT" && $3 == m { for (i = 4; i < NF; i++) if ($i == "train_tokens_per_s") print $(i + 1) }' "$tmp/pt.$m" 2>/dev/null)
    al=$(echo "$al_list" | grep . | median) pt=nan
    [ -n "$pt_list" ] && pt=$(echo "$pt_list" | median)
    ratio=$(awk -v a="$al" -v b="$pt" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }')
    printf '%-10s %16s %16s %8s   %s| %s\n' "$m" "$al" "$pt" "$ratio" "$(echo $al_list)" "$(echo $pt_list) "
  done
  echo "(medians of training tokens/s over one epoch; ratio = attnlab / PyTorch)"
  rm -rf "$tmp"
  echo

fi
if want seq && [ -n "$bmodels" ] && [ -n "$seq_buckets" ]; then
  echo "== sequence training speed vs sentence length: batches of 32 sentences from one length bucket, $threads threads, $seq_reps alternating repetitions"
  echo "   attnlab: $(basename "$bin") bench seq --models $bmodels --buckets $seq_buckets --threads $threads"
  seq_peer_note "$bpeer --data $seq_data --peer $speer --models $bmodels --buckets $seq_buckets --threads $threads"
  tmp=$(mktemp -d)
  for r in $(seq "$seq_reps"); do
    if ! "$bin" bench seq --models "$bmodels" --buckets "$seq_buckets" --threads "$threads" >>"$tmp/al" 2>>"$tmp/al.err"; then
      echo "   (attnlab bench seq --buckets failed)"; cat "$tmp/al.err" >&2; status=1
    fi
    if [ -n "$spy" ] && ! OPENBLAS_NUM_THREADS=1 "$spy" "$bpeer" --data "$seq_data" --peer "$speer" --models "$bmodels" \
         --buckets "$seq_buckets" --threads "$threads" >>"$tmp/pt" 2>>"$tmp/pt.err"; then
      echo "   (PyTorch torch_pos_buckets.py failed)"; cat "$tmp/pt.err" >&2; status=1
    fi
  done
  bfield() { awk -v m="$1" -v b="$2" '$1 == m && $3 == b { for (i = 4; i < NF; i++) if ($i == "train_tokens_per_s") print $(i + 1) }'; }
  printf '\n%-8s %-7s %8s %14s %14s %8s\n' model bucket mean_len "attnlab tok/s" "PyTorch tok/s" ratio
  for m in ${bmodels//,/ }; do
    for bk in ${seq_buckets//,/ }; do
      ml=$(awk -v m="$m" -v b="$bk" '$1 == m && $3 == b { for (i = 4; i < NF; i++) if ($i == "mean_len") { print $(i + 1); exit } }' "$tmp/al" 2>/dev/null)
      al=$(bfield "$m" "$bk" <"$tmp/al" 2>/dev/null | grep . | median) pt=nan
      [ -s "$tmp/pt" ] && pt=$(bfield "$m" "$bk" <"$tmp/pt" | grep . | median)
      ratio=$(awk -v a="$al" -v b="$pt" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }')
      printf '%-8s %-7s %8s %14s %14s %8s\n' "$m" "$bk" "${ml:--}" "$al" "$pt" "$ratio"
    done
  done
  echo "(medians of training tokens/s; each bucket: warm-up steps, then max(10, ceil(20000 / (32 * mean length))) timed steps)"
  rm -rf "$tmp"
  echo
fi

if want all || want speech; then
  # speech: training frames/s and peak RSS of sa, trunc (window 8) and rnn on 1-16 s utterances, 1 thread
  run "speech" bench speech
fi
if want all; then
  run "graph" bench graph
  if [ -n "$py" ]; then
    echo "== PyTorch peer (graph): OPENBLAS_NUM_THREADS=1 $py $peer --threads $threads --models gat"
    OPENBLAS_NUM_THREADS=1 "$py" "$peer" --threads "$threads" --models gat || { echo "   (PyTorch peer failed)"; status=1; }
  fi
fi

[ -s "$outdir/images" ] && summary
rm -rf "$outdir"
exit $status
