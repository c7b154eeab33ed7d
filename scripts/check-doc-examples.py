#!/usr/bin/env python3
"""Checks that the code examples of a document are the tree's own code, word for word.

    scripts/check-doc-examples.py DOC.md [DOC.md ...]

A fenced code block preceded by the line `<!-- from: PATH -->` (PATH relative to the repository) is an
excerpt of that file: every non-empty line of the block, with its leading and trailing white space
removed, must be a line of PATH, and in the file's order. Prints one line per block that is not, and
exits 1 if there is any; else prints how many excerpts it checked.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"^<!-- from: (\S+) -->\s*$")


def excerpts(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            j = i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield i + 1, m.group(1), [l.strip() for l in lines[i + 2:j] if l.strip()]
            i = j
        i += 1


def main(docs):
    bad = n = 0
    for doc in docs:
        for line, src, block in excerpts(doc):
            n += 1
            path = os.path.join(ROOT, src)
            if not os.path.isfile(path):
                print(f"{doc}:{line}: {src} does not exist"); bad += 1
                continue
            text = [l.strip() for l in open(path, encoding="utf-8", errors="replace").read().split("\n")]
            k = 0
            for b in block:
                while k < len(text) and text[k] != b:
                    k += 1
                if k == len(text):
                    print(f"{doc}:{line}: not in {src} (in this order): {b}"); bad += 1
                    break
                k += 1
    if bad:
        return 1
    print(f"check-doc-examples: {n} excerpts, each the tree's own code")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else 2)
