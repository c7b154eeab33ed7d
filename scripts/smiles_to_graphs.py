#!/usr/bin/python3
"""smiles_to_graphs.py — a molecule CSV (name,smiles,target[,target...]) to attnlab's plain-text
many-graphs format (datasets/README.md, "Molecules"), with RDKit (Debian python3-rdkit; the shebang
is the system Python because that is where Debian installs rdkit).

usage: scripts/smiles_to_graphs.py IN.csv OUT.txt [--smiles-column smiles] [--name-column name]
                                  [--coords COORDS.txt]

Every column other than the name and the SMILES is a target (a number; empty = missing, written "nan").
Output is deterministic: molecules in CSV order, atoms in RDKit's order, bonds in RDKit's order with
i < j; the target fields are copied from the CSV verbatim (after checking they are numbers), so running
the script again reproduces the file byte for byte. A SMILES that RDKit rejects is an error naming the
CSV line (exit 1); nothing is written then. The output goes to OUT.tmp.PID, renamed over OUT.

--coords COORDS.txt also writes each molecule's name (the name column; its number when the CSV has none
or the cell is empty) and 2-D depiction coordinates of its atoms, in the atoms' order of OUT.txt, from
RDKit's own depictor (rdDepictor.Compute2DCoords, CoordGen off: deterministic), rounded to 4 decimals
(format in datasets/README.md, "Molecule names and 2-D coordinates"). attnlab attnmap draws molecules
with them; OUT.txt is the same with or without the flag.
"""
import csv
import math
import os
import sys

FORMAT = "attnlab-molecules 1"
COORDS_FORMAT = "attnlab-coords 1"
BOND = {"SINGLE": 1, "DOUBLE": 2, "TRIPLE": 3, "AROMATIC": 4}


def die(msg):
    sys.stderr.write("smiles_to_graphs: %s\n" % msg)
    sys.exit(1)


def parse_args(argv):
    opts = {"smiles": "smiles", "name": "name", "coords": None}
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            sys.exit(0)
        if a in ("--smiles-column", "--name-column", "--coords"):
            if i + 1 >= len(argv):
                die("%s needs a value" % a)
            opts[{"--smiles-column": "smiles", "--name-column": "name", "--coords": "coords"}[a]] = argv[i + 1]
            i += 2
            continue
        if a.startswith("--"):
            die("unknown option %s (see --help)" % a)
        pos.append(a)
        i += 1
    if len(pos) != 2:
        die("expected IN.csv OUT.txt (see --help)")
    return pos[0], pos[1], opts


def check_target(path, line, col, v):
    v = v.strip()
    if v == "":
        return "nan"
    try:
        x = float(v)
    except ValueError:
        die("%s:%d: target column '%s' holds '%s', not a number" % (path, line, col, v))
    if not math.isfinite(x):
        die("%s:%d: target column '%s' holds '%s', not a finite number" % (path, line, col, v))
    if any(ch.isspace() for ch in v):
        die("%s:%d: target column '%s' holds '%s' with spaces" % (path, line, col, v))
    return v


def convert(path, opts):
    try:
        from rdkit import Chem, RDLogger
    except ImportError:
        die("RDKit is not installed (apt-get install python3-rdkit)")
    RDLogger.DisableLog("rdApp.*")
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    with f:
        rd = csv.reader(f)
        try:
            header = next(rd)
        except StopIteration:
            die("%s:1: empty file (expected a header name,smiles,target...)" % path)
        if opts["smiles"] not in header:
            die("%s:1: no column '%s' in the header" % (path, opts["smiles"]))
        si = header.index(opts["smiles"])
        ni = header.index(opts["name"]) if opts["name"] in header else -1
        ti = [k for k in range(len(header)) if k not in (si, ni)]
        if not ti:
            die("%s:1: no target column (expected name,smiles,target...)" % path)
        for k in ti:
            if not header[k] or any(ch.isspace() or ch == "," for ch in header[k]):
                die("%s:1: target column name '%s' is empty or has spaces" % (path, header[k]))
        mols = []
        for row in rd:
            line = rd.line_num
            if len(row) != len(header):
                die("%s:%d: %d fields, the header has %d" % (path, line, len(row), len(header)))
            smi = row[si]
            m = Chem.MolFromSmiles(smi) if smi else None
            if m is None or m.GetNumAtoms() == 0:
                die("%s:%d: RDKit rejects the SMILES '%s'" % (path, line, smi))
            name = " ".join(row[ni].split()) if ni >= 0 else ""
            mols.append((m, [check_target(path, line, header[k], row[k]) for k in ti], name))
    if not mols:
        die("%s: no molecules" % path)
    return [header[k] for k in ti], mols


def render(targets, mols):
    elements = sorted({a.GetSymbol() for m, _, _ in mols for a in m.GetAtoms()})
    out = [FORMAT, "elements " + " ".join(elements), "targets " + " ".join(targets), "molecules %d" % len(mols)]
    for g, (m, ys, _) in enumerate(mols):
        out.append("mol %d %d %d %s" % (g, m.GetNumAtoms(), m.GetNumBonds(), " ".join(ys)))
        for a in m.GetAtoms():
            out.append("%s %d %d %d %d %d" % (a.GetSymbol(), a.GetDegree(), a.GetFormalCharge(), a.GetTotalNumHs(),
                                              int(a.GetIsAromatic()), int(a.IsInRing())))
        for b in m.GetBonds():
            i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
            t = BOND.get(str(b.GetBondType()))
            if t is None:
                die("molecule %d: bond %d-%d has type %s (only single, double, triple, aromatic)" % (g, i, j, b.GetBondType()))
            out.append("%d %d %d" % (min(i, j), max(i, j), t))
    return "\n".join(out) + "\n"


def coord(v):
    v = round(v, 4) + 0.0          # no "-0.0000"
    return "%.4f" % v


def render_coords(mols):
    from rdkit.Chem import rdDepictor
    rdDepictor.SetPreferCoordGen(False)
    out = [COORDS_FORMAT, "molecules %d" % len(mols)]
    for g, (m, _, name) in enumerate(mols):
        rdDepictor.Compute2DCoords(m)
        conf = m.GetConformer()
        out.append("mol %d %d %s" % (g, m.GetNumAtoms(), name or str(g)))
        for i in range(m.GetNumAtoms()):
            p = conf.GetAtomPosition(i)
            out.append("%s %s" % (coord(p.x), coord(p.y)))
    return "\n".join(out) + "\n"


def write_atomic(dst, text):
    tmp = "%s.tmp.%d" % (dst, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dst)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        die("%s: %s" % (dst, e.strerror))


def main():
    src, dst, opts = parse_args(sys.argv[1:])
    targets, mols = convert(src, opts)
    text = render(targets, mols)
    coords = render_coords(mols) if opts["coords"] else None
    write_atomic(dst, text)
    if coords is not None:
        write_atomic(opts["coords"], coords)
    sys.stderr.write("smiles_to_graphs: %d molecules, %d targets -> %s\n" % (len(mols), len(targets), dst))


if __name__ == "__main__":
    main()
