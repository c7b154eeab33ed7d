#!/usr/bin/env python3
"""Compares two folders written by scripts/bitwise-outputs.sh, allowing only the documented format
additions since: the results CSV's new last columns (config, status in 0.4; unseen_acc, ambig_acc,
test_rmse, test_mae later, empty for image and graph runs) and the image checkpoints' `class_names`
metadata key. Every tensor, every other metadata value, every CSV field,
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
            ncol = len(rows_a[0].split(",")) if rows_a else 0
            header_b = rows_b[0].split(",") if rows_b else []
            added = header_b[ncol:]
            known = ["config", "status", "unseen_acc", "ambig_acc", "test_rmse", "test_mae"]
            cut = [",".join(r.split(",")[:ncol]) for r in rows_b]
            # the added columns must be the known ones, and the four metric columns empty
            extra_ok = added == known[:len(added)] and all(
                all(v == "" for v in r.split(",")[ncol:][2:]) for r in rows_b[1:])
            same = rows_a == cut and extra_ok
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
    print(f"{n} files compared; {bad} differ beyond the added CSV columns and class_names")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip())
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
