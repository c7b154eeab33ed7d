#!/usr/bin/env python3
"""Compares two folders written by scripts/bitwise-outputs.sh, allowing only the documented format
additions of attnlab 0.4: the results CSV's two new last columns (config, status) and the image
checkpoints' `class_names` metadata key. Every tensor, every other metadata value, every CSV field,
the attnmap PNG and every printed line must be byte-identical.

    scripts/bitwise-compare.py BEFORE_DIR AFTER_DIR      (exit 1 on any other difference)
Needs numpy (scripts/attnlab_checkpoint.py reads the checkpoints).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attnlab_checkpoint import load  # noqa: E402


def main(before, after):
    bad = n = 0
    for f in sorted(os.listdir(before)):
        if f == "SHA256SUMS":
            continue
        n += 1
        a, b = os.path.join(before, f), os.path.join(after, f)
        if f.endswith(".csv"):
            rows_a = open(a).read().splitlines()
            rows_b = open(b).read().splitlines()
            cut = [",".join(r.split(",")[:-2]) for r in rows_b] if rows_b and rows_b[0].endswith(",config,status") else rows_b
            same = rows_a == cut
        elif f.endswith(".safetensors"):
            ta, ma = load(a)
            tb, mb = load(b)
            same = (list(ta) == list(tb) and all(np.array_equal(ta[k], tb[k]) for k in ta)
                    and all(ma[k] == mb.get(k) for k in ma) and not (set(mb) - set(ma) - {"class_names"}))
        else:
            same = open(a, "rb").read() == open(b, "rb").read()
        if not same:
            print(f"differs: {f}")
            bad += 1
    print(f"{n} files compared; {bad} differ beyond the config/status columns and class_names")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip())
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
