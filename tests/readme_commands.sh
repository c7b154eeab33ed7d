#!/usr/bin/env bash
# Runs every `bin/attnlab` command of the README's sh code blocks, in README order, in a scratch
# directory, with tiny sizes so that the whole README runs in a few minutes: training sizes 200,
# 1 epoch (graphs 5), one seed, quick benchmark settings, presets as --dry-run. Each command must
# exit 0. The inputs the README assumes (a photo folder, a LINQS graph) are made here.
#   tests/readme_commands.sh [BIN]          (tests/test_cli_scripts.c runs it)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/attnlab}")
work=$(mktemp -d /tmp/attnlab-readme-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
ln -s "$root/results" results
mkdir -p datasets
export HOME="$work" OMP_NUM_THREADS=2
py=/usr/bin/python3; [ -x "$py" ] || py=python3
# ~/photos: two classes of 16x16 PNGs in train/ and test/ (Python's zlib and struct: no imaging library)
"$py" - <<'PY'
import os, struct, zlib
def png(path, w, h, val):
    rows = [bytes([0] + [c for x in range(w) for c in ((x * 16 + val) % 256, (y * 16) % 256, val)]) for y in range(h)]
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))
home = os.environ["HOME"]
for split, n in (("train", 12), ("test", 4)):
    for k, cls in enumerate(("cat", "dog")):
        d = os.path.join(home, "photos", split, cls); os.makedirs(d, exist_ok=True)
        for i in range(n): png(os.path.join(d, f"{i}.png"), 16, 16, 40 + 150 * k + i)
png("shoe.png", 16, 16, 90)
os.makedirs("photos/extra", exist_ok=True)
png("photos/extra/1.png", 16, 16, 120)
# citeseer/: a tiny graph in LINQS form (.content: id, binary words, label; .cites: cited citing)
os.makedirs("citeseer", exist_ok=True)
with open("citeseer/citeseer.content", "w") as f:
    for i in range(60):
        words = ["1" if (i * 7 + j) % 5 == 0 or j == i % 6 else "0" for j in range(12)]
        f.write("\t".join([f"p{i}"] + words + [f"c{i % 3}"]) + "\n")
with open("citeseer/citeseer.cites", "w") as f:
    for i in range(60):
        for j in (i + 3, i + 6):
            if j < 60: f.write(f"p{i}\tp{j}\n")
PY
# The README's commands, continuation lines joined, in order.
awk '/^```sh/{b=1; next} /^```/{b=0} b' "$root/README.md" | sed -e ':a' -e '/\\$/N; s/\\\n[ ]*/ /; ta' \
  | grep 'bin/attnlab' > commands.txt
shrink() {
  sed -E -e 's/ +#.*$//' \
    -e 's#bin/attnlab#'"$bin"'#' \
    -e 's/--train-sizes [0-9,]+/--train-sizes 200/' \
    -e 's/--train-size [0-9]+/--train-size 200/' \
    -e 's/--test-size [0-9]+/--test-size 200/' \
    -e 's/--seeds [0-9,-]+/--seeds 1/' \
    -e 's/--epochs [0-9]+//' \
    -e 's/--labels-per-class [0-9,]+/--labels-per-class 2/'
}
fails=0; n=0
while IFS= read -r line; do
  cmd=$(printf '%s\n' "$line" | shrink)
  case "$cmd" in
    *" sweep --preset"*) cmd="$cmd --dry-run" ;;
    *" bench gemm"*) cmd="$cmd --reps 1 --threads 1" ;;
    *" bench attention"*) cmd="$cmd --reps 1 --only window" ;;
    *" bench train"*) cmd="$cmd --steps 2 --warmup 1" ;;
    *" bench graph"*) cmd="$cmd --epochs 2" ;;
    *" bench seq"*) cmd="$cmd --buckets 11-20 --tokens 1 --warmup 0" ;;
    *" train --task graph"*|*" sweep --task graph"*) cmd="$cmd --epochs 5" ;;
    *" train --task sequence"*) cmd="$cmd --epochs 1 --train-size 200" ;;
    *" train --task molecule"*) cmd="$cmd --epochs 2 --train-frac 0.2" ;;
    *" train --model conv-attn-ft"*) cmd="$cmd --epochs 1 --test-size 200" ;;
    *" train --model conv-attn"*) cmd="$cmd --test-size 200" ;;
    *" data speech-digits"*) cmd="$cmd --speakers 3 --repeats 2 --sequences 4" ;;
    *" train --task speech"*)  # the corpus above (2 training voices); ~/speech_commands: its digits folder
      ln -sfn "$work/speech/digits" "$HOME/speech_commands"; cmd="$cmd --epochs 1 --batch 4" ;;
    *" train "*) cmd="$cmd --epochs 1"; case "$cmd" in *--train-size*|*"--data ~/photos"*) ;; *) cmd="$cmd --train-size 200" ;; esac
                 case "$cmd" in *--test-size*) ;; *"--data ~/photos"*) ;; *) cmd="$cmd --test-size 200" ;; esac ;;
    *" sweep --task image"*) cmd="$cmd --epochs 1 --test-size 200" ;;
    *" sweep --task sequence"*) cmd="$cmd --epochs 1" ;;
    *" attnmap "*)  # the maps need sa and local checkpoints: the README's training lines save none
      for m in sa local; do [ -f $m.safetensors ] || "$bin" train --model $m --train-size 200 --test-size 200 \
        --epochs 1 --quiet --save $m.safetensors > /dev/null 2>&1; done ;;
  esac
  n=$((n + 1))
  t0=$(date +%s)
  if bash -c "$cmd" > out.txt 2> err.txt < /dev/null; then
    echo "ok   $(( $(date +%s) - t0 ))s  $line"
  else
    rc=$?
    echo "FAIL (exit $rc)  $line"; echo "     ran: $cmd"; sed 's/^/     | /' err.txt | tail -5
    fails=$((fails + 1))
  fi
done < commands.txt
echo "readme commands: $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$n" -gt 10 ]
