#!/usr/bin/env python3
"""The house sizes: every C file of src/ and apps/ at most 700 lines, every function at most 120.

    scripts/check-sizes.py [--root DIR] [--max-file N] [--max-function N]

A function starts at a line that begins (column 0) with a declaration that has a '(' and does not end
in ';', and whose body's '{' opens on that line or one of the next; it ends at the next line that is a
lone '}' (the house style). Prints one line per file or function over its limit, exits 1 if any.
"""
import glob
import os
import re
import sys

START = re.compile(r"^[A-Za-z_][^;]*\(")


def functions(lines):
    i = 0
    while i < len(lines):
        l = lines[i]
        if START.match(l) and not l.startswith(("typedef", "#")) and not l.rstrip().endswith(";"):
            j = i
            while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and "{" in lines[j] and not lines[j].rstrip().endswith(";"):
                name = re.search(r"(\w+)\s*\(", l)
                k = j
                while k < len(lines) and lines[k].rstrip() != "}":
                    k += 1
                yield name.group(1) if name else "?", i + 1, k - i + 1
                i = k
        i += 1


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    max_file, max_fn = 700, 120
    a = list(argv)
    while a:
        flag = a.pop(0)
        if flag == "--root":
            root = a.pop(0)
        elif flag == "--max-file":
            max_file = int(a.pop(0))
        elif flag == "--max-function":
            max_fn = int(a.pop(0))
        else:
            print(f"check-sizes: unknown argument {flag}"); return 2
    bad = nfiles = nfn = 0
    for path in sorted(glob.glob(os.path.join(root, "src", "*", "*.[ch]")) + glob.glob(os.path.join(root, "apps", "*.[ch]"))):
        rel = os.path.relpath(path, root)
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        n = len(lines) - (lines[-1] == "")
        nfiles += 1
        if n > max_file:
            print(f"{rel}: {n} lines, over {max_file}"); bad += 1
        for name, line, length in functions(lines):
            nfn += 1
            if length > max_fn:
                print(f"{rel}:{line}: {name} is {length} lines, over {max_fn}"); bad += 1
    if bad:
        print(f"check-sizes: {bad} over the house sizes")
        return 1
    print(f"check-sizes: {nfiles} files within {max_file} lines, {nfn} functions within {max_fn}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
