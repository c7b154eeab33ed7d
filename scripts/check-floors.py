#!/usr/bin/env python3
"""Checks that every floor of libattnlab calls only the floors below it (src/floors.txt).

    scripts/check-floors.py [--root DIR] [BUILD]

1. Includes: a file of src/FLOOR/ includes only public headers (include/attnlab/X.h) and internal
   headers (src/G/*_impl.h as "G/...") of FLOOR or lower floors; a public header includes only
   headers of its own floor or lower ones; every folder of src/ and every public header but
   attnlab.h has a floor, and attnlab.h includes every public header.
2. Symbols (with BUILD, the folder holding src/FLOOR/*.o): an object of FLOOR refers to no symbol
   defined by an object of a higher floor — this catches a call that crosses floors through a
   declaration, whatever header it came from — and no two objects depend on each other, directly or
   through others (a circle).
Prints one line per violation and exits 1 if there is any, else prints a summary and exits 0.
"""
import collections
import os
import re
import subprocess
import sys


def read_floors(root):
    order, header_floor = [], {}
    with open(os.path.join(root, "src", "floors.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            order.append(line[0])
            for h in line[1:]:
                header_floor[h] = line[0]
    return order, header_floor


INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(root, order, header_floor, bad):
    rank = {f: i for i, f in enumerate(order)}
    inc_dir = os.path.join(root, "include", "attnlab")
    headers = sorted(h for h in os.listdir(inc_dir) if h.endswith(".h"))
    for h in headers:
        if h != "attnlab.h" and h not in header_floor:
            bad.append(f"include/attnlab/{h}: no floor in src/floors.txt")
    for h in header_floor:
        if h not in headers:
            bad.append(f"src/floors.txt: {h} is not a header of include/attnlab/")
    for d in sorted(os.listdir(os.path.join(root, "src"))):
        if os.path.isdir(os.path.join(root, "src", d)) and d not in rank:
            bad.append(f"src/{d}/: a folder that is no floor of src/floors.txt")

    def target_floor(name, here):
        """The floor of an included file, or None (a system or same-folder header)."""
        if name.startswith("attnlab/"):
            return header_floor.get(name[len("attnlab/"):], "?")
        if "/" in name:
            return name.split("/", 1)[0] if name.split("/", 1)[0] in rank else None
        if here == "include" and name in header_floor:
            return header_floor[name]
        return None

    def scan(path, floor, here):
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in INC.finditer(text):
            t = target_floor(m.group(1), here)
            line = text.count("\n", 0, m.start()) + 1
            rel = os.path.relpath(path, root)
            if t == "?":
                bad.append(f"{rel}:{line}: includes {m.group(1)}, which has no floor")
            elif t is not None and rank[t] > rank[floor]:
                bad.append(f"{rel}:{line}: the {floor} floor includes {m.group(1)} of the higher {t} floor")

    for h in headers:
        if h == "attnlab.h":
            text = open(os.path.join(inc_dir, h)).read()
            missing = [x for x in header_floor if f'"{x}"' not in text]
            if missing:
                bad.append(f"include/attnlab/attnlab.h: does not include {', '.join(missing)}")
            continue
        if h in header_floor:
            scan(os.path.join(inc_dir, h), header_floor[h], "include")
    for floor in order:
        d = os.path.join(root, "src", floor)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")):
                scan(os.path.join(d, f), floor, "src")
    return len(headers)


def check_symbols(build, order, bad):
    rank = {f: i for i, f in enumerate(order)}
    defs, undef = {}, collections.defaultdict(set)
    objs = []
    for floor in order:
        d = os.path.join(build, "src", floor)
        if os.path.isdir(d):
            objs += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".o")]
    if not objs:
        bad.append(f"{build}/src: no objects (build the library first)")
        return 0
    out = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        obj, rest = line.split(":", 1)
        p = rest.split()
        if len(p) == 3 and p[1] in "TDBRVWG":
            defs[p[2]] = obj
        elif len(p) == 2 and p[0] == "U":
            undef[obj].add(p[1])

    def floor_of(o):
        return os.path.basename(os.path.dirname(o))

    def name(o):
        return os.path.relpath(o, os.path.join(build, "src"))

    graph = {o: set() for o in objs}
    for o in objs:
        for s in sorted(undef[o]):
            d = defs.get(s)
            if d is None or d == o:
                continue
            graph[o].add(d)
            if rank[floor_of(d)] > rank[floor_of(o)]:
                bad.append(f"{name(o)}: the {floor_of(o)} floor calls {s} of the higher "
                           f"{floor_of(d)} floor ({name(d)})")
    # circles: strongly connected components of more than one object (Tarjan, iterative)
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
    for v0 in objs:
        if v0 in index:
            continue
        work = [(v0, iter(sorted(graph[v0])))]
        index[v0] = low[v0] = n[0]; n[0] += 1; stack.append(v0); on.add(v0)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]; n[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    for comp in comps:
        bad.append("a circle of objects that call each other: " + ", ".join(name(o) for o in comp))
    return len(objs)


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = list(argv)
    if args[:1] == ["--root"]:
        root = os.path.abspath(args[1]); args = args[2:]
    order, header_floor = read_floors(root)
    bad = []
    nh = check_includes(root, order, header_floor, bad)
    no = check_symbols(os.path.abspath(args[0]), order, bad) if args else 0
    for b in bad:
        print(b)
    if bad:
        print(f"check-floors: {len(bad)} violation(s) of src/floors.txt")
        return 1
    print(f"check-floors: {len(order)} floors, {nh} public headers"
          + (f", {no} objects: no upward include, call or circle" if args else ": no upward include"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
