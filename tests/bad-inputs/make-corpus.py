#!/usr/bin/env python3
"""make-corpus.py BIN — (re)writes the generated files of tests/bad-inputs/ (README.md says what each
class covers; cases.tsv says how each file is used and what error it must give).

Python's standard library only. The three valid base checkpoints (an image, a graph and a sequence
model, each a few KB) are trained by BIN on the tiny valid datasets written here, then copied and
poked: a NaN or an infinity in a weight, a zero / negative / NaN std, a wrong dtype, a cut file, a
header that claims more than the file holds, overlapping tensors, a missing tensor. Everything else is
written byte by byte. The reproducers of tests/data/ are not copied: cases.tsv names them there, and
the image-folder cases put copies of them into folders.

    tests/bad-inputs/make-corpus.py bin/attnlab
"""
import gzip, json, math, os, shutil, struct, subprocess, sys, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
KEEP = {"README.md", "cases.tsv", "make-corpus.py"}


def path(*p):
    return os.path.join(HERE, *p)


def write(rel, data, mode="wb"):
    p = path(rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, mode) as f:
        f.write(data)


def copy(src, rel):
    os.makedirs(os.path.dirname(path(rel)), exist_ok=True)
    shutil.copyfile(src, path(rel))


# ---------------------------------------------------------------- IDX (Fashion-MNIST layout)
def idx3(n, rows=28, cols=28, magic=0x803, count=None):
    pix = bytes((i * 7 + j) % 251 if j % 5 == 0 else 0 for i in range(n) for j in range(rows * cols))
    return struct.pack(">IIII", magic, n if count is None else count, rows, cols) + pix


def idx1(labels, magic=0x801, count=None):
    return struct.pack(">II", magic, len(labels) if count is None else count) + bytes(labels)


def idx_dir(name, files):
    """files: the four Fashion-MNIST files (base name -> bytes), gzip unless the name ends in '.raw'."""
    for base, data in files.items():
        if base.endswith(".raw"):
            write(f"idx/{name}/{base[:-4]}", data)
        else:
            write(f"idx/{name}/{base}.gz", gzip.compress(data, mtime=0))


def idx_corpus():
    ok = {"train-images-idx3-ubyte": idx3(20), "train-labels-idx1-ubyte": idx1([i % 10 for i in range(20)]),
          "t10k-images-idx3-ubyte": idx3(10), "t10k-labels-idx1-ubyte": idx1(list(range(10)))}
    idx_dir("ok", ok)

    imgs = "train-images-idx3-ubyte"
    full = gzip.compress(ok[imgs], mtime=0)
    # a gzip stream cut in the middle
    f = dict(ok); f.pop(imgs); idx_dir("truncated-gzip", f); write(f"idx/truncated-gzip/{imgs}.gz", full[: len(full) // 2])
    # gzip magic and header, then bytes that are not deflate data
    f = dict(ok); f.pop(imgs); idx_dir("corrupt-gzip", f)
    write(f"idx/corrupt-gzip/{imgs}.gz", full[:10] + bytes([0xff, 0xfe, 0xfd] * 40))
    # an uncompressed file cut short: the pixels run out
    f = dict(ok); f.pop(imgs); f[imgs + ".raw"] = ok[imgs][: 16 + 28 * 28 * 5 + 100]; idx_dir("truncated-raw", f)
    f = dict(ok); f[imgs] = idx3(20, magic=0x804); idx_dir("bad-magic", f)
    f = dict(ok); f["train-labels-idx1-ubyte"] = idx1([1] * 19); idx_dir("count-mismatch", f)
    # the header claims 2^31 - 1 images: more than any limit, in a file of a few hundred bytes
    f = dict(ok); f[imgs] = idx3(2, count=0x7fffffff); idx_dir("huge-count", f)
    # 100000 images claimed, 20 present: the memory is budgeted, then the data runs out
    f = dict(ok); f[imgs] = idx3(20, count=100000); f["train-labels-idx1-ubyte"] = idx1([1] * 20, count=100000)
    idx_dir("count-larger-than-file", f)
    f = dict(ok); f[imgs] = struct.pack(">IIII", 0x803, 1, 65535, 65535); idx_dir("absurd-image-size", f)
    f = dict(ok); f[imgs] = ok[imgs] + b"\0" * 10; idx_dir("trailing-data", f)
    f = dict(ok); f.pop("t10k-labels-idx1-ubyte"); idx_dir("missing-file", f)
    f = dict(ok); f["t10k-images-idx3-ubyte"] = idx3(10, 10, 10); idx_dir("not-28x28", f)
    f = dict(ok); f["t10k-labels-idx1-ubyte"] = idx1([200] * 10); idx_dir("label-200", f)
    f = dict(ok); f.pop(imgs); f[imgs + ".raw"] = b""; idx_dir("empty-file", f)


# ---------------------------------------------------------------- graphs
G_FEAT = ["0 1:1 2:1", "1 2:1 3:1", "2 3:1 4:1", "0 1:1 4:1", "1 1:1 2:1", "2 2:1 4:1",
          "0 1:1 3:1", "1 3:1 4:1", "2 1:1 2:1", "0 2:1 3:1", "1 1:1 3:1", "2 2:1 3:1"]
G_EDGES = [f"{i} {(i + 1) % 12}" for i in range(12)] + [f"{(i + 1) % 12} {i}" for i in range(12)]
G_SPLIT = {"train.idx": [0, 1, 2], "val.idx": [3, 4, 5], "test.idx": [6, 7, 8, 9, 10, 11]}


def graph_dir(name, feat=None, edges=None, splits=None, drop=()):
    files = {"features.libsvm": "\n".join(feat or G_FEAT) + "\n", "edges.txt": "\n".join(edges or G_EDGES) + "\n"}
    for k, v in G_SPLIT.items():
        files[k] = "\n".join(map(str, (splits or {}).get(k, v))) + "\n"
    for k, v in files.items():
        if k not in drop:
            write(f"graph/{name}/{k}", v, "w")


def graph_corpus():
    graph_dir("ok")
    feat = list(G_FEAT); feat[4] = "x 1:1"; graph_dir("bad-label", feat)
    feat = list(G_FEAT); feat[2] = "2 3:1 2000000000:1"; graph_dir("absurd-feature-index", feat)
    feat = list(G_FEAT); feat[5] = "2 2:1 4:1e99"; graph_dir("infinite-feature", feat)
    feat = list(G_FEAT); feat[3] = "0 3:1 1:1"; graph_dir("feature-index-order", feat)
    graph_dir("bad-edge-line", edges=G_EDGES[:5] + ["3 x"] + G_EDGES[5:])
    graph_dir("edge-out-of-range", edges=G_EDGES + ["3 99"])
    graph_dir("missing-edges", drop=("edges.txt",))
    graph_dir("split-overlap", splits={"test.idx": [6, 7, 0]})
    feat = list(G_FEAT); feat[1] = "-1 2:1 3:1"; graph_dir("unlabelled-in-train", feat)
    graph_dir("empty-features", feat=[""])
    write("graph/empty-features/features.libsvm", "", "w")
    graph_dir("blank-line", feat=G_FEAT[:6] + [""] + G_FEAT[6:])
    # LINQS import: a .content line with one field too few
    content = "".join(f"p{i}\t{'1' if i % 2 else '0'}\t{'0' if i % 3 else '1'}\tc{i % 2}\n" for i in range(6))
    write("graph/linqs-short-line/toy.content", content + "p6\t1\tc0\n", "w")
    write("graph/linqs-short-line/toy.cites", "p0\tp1\np1\tp2\n", "w")
    # OGB import: a label near INT_MAX (the class count, label + 1, sized the random split's tables: 16 GiB)
    write("graph/ogb-huge-label/node-feat.csv", "".join(f"{i % 2},{i % 3}\n" for i in range(8)), "w")
    write("graph/ogb-huge-label/node-label.csv", "0\n1\n2147483646\n0\n1\n0\n1\n0\n", "w")
    write("graph/ogb-huge-label/edge.csv", "0,1\n1,2\n2,3\n", "w")


# ---------------------------------------------------------------- image folders
def png(w, h, grey, val):
    ch = 1 if grey else 3
    rows = b"".join(bytes([0]) + bytes((x * 9 + y * 5 + val + c * 40) % 256 for x in range(w) for c in range(ch))
                    for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0 if grey else 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def folder(name, train=3, test=2, extra=None, classes=("a", "b")):
    for split, n in (("train", train), ("test", test)):
        for k, c in enumerate(classes):
            for i in range(n):
                write(f"images/{name}/{split}/{c}/{i}.png", png(28, 28, True, 20 + 100 * k + 10 * i))
    for rel, data in (extra or {}).items():
        write(f"images/{name}/{rel}", data)


def images_corpus():
    folder("ok")
    # every image of a folder forged: each is skipped with a warning, then nothing is left
    for name, src, ext in (("forged-bmp", "bmp-70-bytes-claims-8194x4098.bmp", "bmp"),
                           ("forged-png", "png-idat-length-1.3GB-in-85-bytes.png", "png"),
                           ("pnm-overflow", "pnm-width-overflows-int.ppm", "ppm")):
        data = open(os.path.join(DATA, src), "rb").read()
        for split in ("train", "test"):
            write(f"images/{name}/{split}/a/x.{ext}", data)
    for split in ("train", "test"):   # where the images should be, directories named like images
        write(f"images/directory-as-file/{split}/a/0.png/keep", b"")
    for split in ("train", "test"):   # the only files of the folder are not images at all
        write(f"images/not-images/{split}/a/x.png", b"this is text, not a PNG\n")
    folder("train-without-test", test=0)
    shutil.rmtree(path("images/train-without-test/test"), ignore_errors=True)
    for k, c in enumerate("abc"):     # DIR/CLASS/IMAGE: a test fraction of one image per class holds out none
        write(f"images/too-small-for-test-split/{c}/0.png", png(28, 28, True, 50 * k))
    folder("test-class-unknown", extra={"test/zebra/0.png": png(28, 28, True, 3)})
    folder("empty-class", extra={})
    os.makedirs(path("images/empty-class/train/c"), exist_ok=True)
    write("images/empty-class/train/c/notes.txt", b"no images here\n")
    write("images/no-classes/train/README", b"no class directories\n")
    write("images/no-classes/test/README", b"no class directories either (and git keeps no empty directory)\n")


# ---------------------------------------------------------------- audio folders (attnlab data audio-stats)
def wav(ch, rate, claimed=None, data=None, fmt=1, bits=16):
    """A WAV written byte by byte: fmt chunk (PCM or IEEE float), a data chunk claiming `claimed` bytes."""
    if data is None:
        data = b"".join(struct.pack("<h", int(8000 * math.sin(i * 0.3))) for i in range(1600))
    claimed = len(data) if claimed is None else claimed
    blk = max(ch, 1) * bits // 8
    return (b"RIFF" + struct.pack("<I", (36 + claimed) & 0xffffffff) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, fmt, ch, rate, (rate * blk) & 0xffffffff, blk, bits)
            + b"data" + struct.pack("<I", claimed) + data)


def flac_streaminfo(total, ch, rate=16000):
    """A FLAC file of its STREAMINFO block only: the header's claims, no audio frames."""
    v = (rate << 44) | ((ch - 1) << 41) | (15 << 36) | total
    return b"fLaC" + bytes([0x80, 0, 0, 34]) + struct.pack(">HH", 4096, 4096) + bytes(6) + v.to_bytes(8, "big") + bytes(16)


def audio_corpus():
    for c in "ab":   # 4 speakers in each class: the held-out speaker leaves 3 in train
        for k in range(1, 5):
            write(f"audio/ok/{c}/s{k}_0.wav", wav(1, 16000 if k < 4 else 8000))
    # one class, one file, and it is broken: skipped with a warning naming it, then nothing is left
    nan = struct.pack("<8f", 0, 0.1, 0.2, float("nan"), 0, 0, 0, 0)
    loud = struct.pack("<8f", 0, 0.5, 1e18, 0, 0, 0, 0, 0)   # finite, but its spectrum overflows float
    for name, data in (("truncated-wav", wav(1, 16000, claimed=64000, data=bytes(300))),
                       ("data-size-4gb", wav(1, 16000, claimed=0xfffffff0)),
                       ("zero-channels", wav(0, 16000)),
                       ("rate-2e9", wav(1, 2000000000)),
                       ("rate-100", wav(1, 100)),
                       ("1000-channels", wav(1000, 16000, data=bytes(4000))),
                       ("not-audio", b"this is text, not a WAV file\n"),
                       ("empty-file", b""),
                       ("nan-sample", wav(1, 16000, data=nan, fmt=3, bits=32)),
                       ("loud-sample", wav(1, 16000, data=loud, fmt=3, bits=32))):
        write(f"audio/{name}/a/s1_x.wav", data)
    write("audio/claims-hours/a/s1_x.flac", flac_streaminfo(16000 * 3600 * 5, 1))
    write("audio/forged-flac/a/s1_x.flac", flac_streaminfo(16000 * 300, 8))
    write("audio/empty-class/a/s1_0.wav", wav(1, 16000))
    write("audio/empty-class/b/.keep", b"")   # git keeps no empty directory; hidden files are not audio
    write("audio/no-classes/README", b"no class directories\n")
    write("audio/train-without-test/train/a/s1_0.wav", wav(1, 16000))
    write("audio/directory-as-file/a/s1_0.wav/keep", b"")


# ---------------------------------------------------------------- CoNLL-U and text
UD = [("The", "DET"), ("cat", "NOUN"), ("sat", "VERB"), ("on", "ADP"), ("the", "DET"), ("mat", "NOUN"), (".", "PUNCT")]


def sent(words, sid):
    lines = [f"# sent_id = {sid}"]
    for i, (f, u) in enumerate(words, 1):
        lines.append(f"{i}\t{f}\t{f.lower()}\t{u}\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_")
    return "\n".join(lines) + "\n\n"


def conllu_dir(name, train=None, test=None, raw=None):
    ok = "".join(sent(UD[: 3 + i % 5], f"s{i}") for i in range(8))
    write(f"conllu/{name}/train.conllu", (train if train is not None else ok).encode() if raw is None else raw, "wb")
    write(f"conllu/{name}/test.conllu", (test if test is not None else ok).encode(), "wb")


def conllu_corpus():
    conllu_dir("ok")
    good = sent(UD, "a")
    nine = good.replace("1\tThe\tthe\tDET\t_\t_\t0\troot\t_\t_", "1\tThe\tthe\tDET\t_\t_\t0\troot\t_")
    conllu_dir("nine-fields", train=good + nine)
    conllu_dir("unknown-upos", train=good + good.replace("\tNOUN\t", "\tNOUNISH\t", 1))
    conllu_dir("not-utf8", raw=(good + sent([("caf\udce9", "NOUN")], "b")).encode("utf-8", "surrogateescape"))
    conllu_dir("empty-file", train="")
    conllu_dir("bad-id", train=good + good.replace("\n3\t", "\nthree\t", 1))
    conllu_dir("long-sentence", train=good + sent(UD * 3, "long"))
    write("text/long-line.txt", " ".join(["word"] * 40) + "\n", "w")
    write("text/ok.txt", "The cat sat .\n", "w")


# ---------------------------------------------------------------- results CSVs
HDR = "run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,epoch_seconds,samples_per_second,params,config,status"


SMALL_MOLS = (
    "attnlab-molecules 1\nelements C N O\ntargets y\nmolecules 4\n"
    "mol 0 3 2 -0.5\nC 1 0 3 0 0\nC 2 0 2 0 0\nO 1 0 1 0 0\n0 1 1\n1 2 1\n"
    "mol 1 2 1 1.25\nC 1 0 2 0 0\nO 1 0 0 0 0\n0 1 2\n"
    "mol 2 5 4 nan\nC 2 0 1 1 1\nC 2 0 1 1 1\nN 2 0 0 1 1\nC 2 0 1 1 1\nN 0 1 4 0 0\n0 1 4\n1 2 4\n2 3 4\n0 3 4\n"
    "mol 3 1 0 2.0\nC 0 0 4 0 0\n")
SMALL_XY = ("attnlab-coords 1\nmolecules 4\nmol 0 3 ethanol\n0 0\n1.5 0\n2.25 1.299\nmol 1 2 formaldehyde\n0 0\n1.5 0\n"
            "mol 2 5 ring with an ion\n0 0\n1.5 0\n1.5 1.5\n0 1.5\n3 3\nmol 3 1 methane\n0 0\n")


def mol_dir(name, coords=SMALL_XY):
    for f, text in (("molecules.txt", SMALL_MOLS), ("train.idx", "0\n2\n"), ("val.idx", "1\n"), ("test.idx", "3\n")):
        write("molecules/%s/%s" % (name, f), text.encode())
    if coords is not None:
        write("molecules/%s/coords.txt" % name, coords.encode())


def molecules_corpus():
    mol_dir("ok")
    mol_dir("coords-nan", SMALL_XY.replace("1.5 1.5", "1.5 nan"))
    mol_dir("coords-atoms", SMALL_XY.replace("mol 1 2 formaldehyde", "mol 1 3 formaldehyde"))
    mol_dir("coords-short", SMALL_XY.replace("mol 3 1 methane\n0 0\n", ""))


def results_corpus():
    rows = [f"r1,image,d,cnn,10,1,{e},0.5,0.5,,0.4,1.0,10.0,100,,{'done' if e == 2 else ''}" for e in (1, 2)]
    write("results/wrong-header.csv", "run,task,data\n" + "\n".join(rows) + "\n", "w")
    write("results/bad-number.csv", HDR + "\n" + rows[0].replace(",1,1,", ",1,one,") + "\n", "w")
    write("results/empty.csv", "", "w")
    write("results/short-row.csv", HDR + "\n" + rows[0] + "\nr1,image,d,cnn\n", "w")
    write("results/binary.csv", bytes(range(256)) * 4)
    write("results/attention-bad-row.csv", "layer,head,src,dst,weight\n1,0,1,2,0.5\n1,0,x,2,0.5\n", "w")
    write("results/attention-wrong-header.csv", "a,b,c\n1,2,3\n", "w")
    write("results/foreign.csv", "name,value\nx,1\n", "w")


# ---------------------------------------------------------------- sweep presets
PRESETS = {
    "no-equals": "# a preset whose third line has no =\ntask = image\nmodels cnn,sa\n",
    "unknown-key": "# a preset with a key the sweep does not know\ntask = image\nmodels = cnn\ntrain-sizes = 100\nseeds = 1\n"
                   "learning-rate = 0.1\n",
    "other-task-flag": "# a flag of the image task in a graph preset\ntask = graph\nmodels = gcn\nplanetoid = yes\nseeds = 1\n"
                       "patch = 2\n",
    "bad-epochs": "# an epoch rule that is none\ntask = image\nmodels = cnn\ntrain-sizes = 100\nseeds = 1\nepochs = steps many\n",
    "steps-overflow": "# a step budget past a long (its epochs overflowed)\ntask = image\nmodels = cnn\ntrain-sizes = 100\n"
                      "seeds = 1\nepochs = steps 9223372036854775807\n",
    "init-from-later": "# a stage started from one that does not come before it\ntask = image\ntrain-sizes = 100\nseeds = 1\n"
                       "[stage ft]\nmodels = conv-attn-ft\ninit-from = cnn\n[stage cnn]\nmodels = cnn\n",
}


def presets_corpus():
    for name, text in PRESETS.items():
        write(f"presets/{name}.preset", text, "w")
    write("presets/nul-byte.preset", b"\0binary")


# ---------------------------------------------------------------- checkpoints
def st_read(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def st_write(rel, header, data, pad=True):
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    write(rel, struct.pack("<Q", len(h)) + h + data)


def poke(rel, src, fn):
    header, data = st_read(src)
    header, data = fn(json.loads(json.dumps(header)), bytearray(data))
    st_write(rel, header, bytes(data))


def first_tensor(h):
    return next(k for k in h if k != "__metadata__")


def set_float(h, d, value):
    name = first_tensor(h)
    beg = h[name]["data_offsets"][0]
    d[beg + 8:beg + 12] = struct.pack("<f", value)
    return h, d


def set_meta(key, value):
    def f(h, d):
        h["__metadata__"][key] = value
        return h, d
    return f


def checkpoint_corpus(bin_):
    tmp = path("ckpt/.tmp")
    os.makedirs(tmp, exist_ok=True)

    def train(args, out):
        cmd = [bin_, "train"] + args + ["--epochs", "1", "--quiet", "--save", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    img, gr, sq, mo = (os.path.join(tmp, n) for n in ("img.st", "graph.st", "seq.st", "mol.st"))
    train(["--model", "sa", "--dim", "8", "--depth", "1", "--heads", "1", "--patch", "7", "--data", path("images/ok")], img)
    train(["--task", "graph", "--model", "gcn", "--hidden", "4", "--data", path("graph/ok")], gr)
    train(["--task", "sequence", "--model", "fc", "--max-len", "16", "--data", path("conllu/ok")], sq)
    train(["--task", "molecule", "--model", "gt", "--readout", "attn", "--dim", "4", "--heads", "2", "--depth", "1", "--hidden", "4",
           "--data", path("molecules/ok")], mo)
    for src, rel in ((img, "ckpt/image-ok.safetensors"), (gr, "ckpt/graph-ok.safetensors"), (sq, "ckpt/seq-ok.safetensors"),
                     (mo, "ckpt/mol-ok.safetensors")):
        shutil.copyfile(src, path(rel))
    poke("ckpt/nan-weight.safetensors", img, lambda h, d: set_float(h, d, float("nan")))
    poke("ckpt/inf-weight.safetensors", img, lambda h, d: set_float(h, d, float("-inf")))
    poke("ckpt/zero-std.safetensors", img, set_meta("std", "0"))
    poke("ckpt/negative-std.safetensors", img, set_meta("std", "-0.5"))
    poke("ckpt/nan-std.safetensors", img, set_meta("std", "nan"))
    poke("ckpt/nan-mean.safetensors", img, set_meta("mean", "nan"))
    poke("ckpt/graph-nan-weight.safetensors", gr, lambda h, d: set_float(h, d, float("nan")))
    poke("ckpt/seq-nan-weight.safetensors", sq, lambda h, d: set_float(h, d, float("nan")))
    poke("ckpt/mol-zero-std.safetensors", mo, set_meta("y_std", "0"))
    poke("ckpt/mol-bad-dim.safetensors", mo, set_meta("dim", "4x"))
    poke("ckpt/mol-unknown-element.safetensors", mo, set_meta("elements", "C O"))

    def dtype(h, d):
        h[first_tensor(h)]["dtype"] = "F16"
        return h, d
    poke("ckpt/wrong-dtype.safetensors", img, dtype)

    def overlap(h, d):
        names = [k for k in h if k != "__metadata__"]
        h[names[1]]["data_offsets"] = [h[names[0]]["data_offsets"][0], h[names[0]]["data_offsets"][0]
                                       + h[names[1]]["data_offsets"][1] - h[names[1]]["data_offsets"][0]]
        return h, d
    poke("ckpt/overlapping-tensors.safetensors", img, overlap)

    def missing(h, d):
        del h["head.bias"]
        return h, d
    poke("ckpt/missing-tensor.safetensors", img, missing)

    def huge_shape(h, d):   # a graph checkpoint whose layer1.bias claims 2^40 x 2^40 values
        h["layer1.bias"]["shape"] = [1 << 40, 1 << 40]
        return h, d
    poke("ckpt/graph-huge-shape.safetensors", gr, huge_shape)
    # the training state of a molecule run (one epoch), forged in one field each
    state = os.path.join(tmp, "mol.train")
    train(["--task", "molecule", "--model", "mlp", "--hidden", "4", "--data", path("molecules/ok"), "--checkpoint", state,
           "--checkpoint-every", "1"], os.path.join(tmp, "mol-state.st"))
    poke("ckpt/state-epoch.train", state, set_meta("epoch", "1000000000"))
    poke("ckpt/state-steps.train", state, set_meta("steps", str((1 << 63) - 1)))

    def repeat_order(h, d):   # data.order[1] = data.order[0]: not a permutation
        beg = h["data.order"]["data_offsets"][0]
        d[beg + 4:beg + 8] = d[beg:beg + 4]
        return h, d
    poke("ckpt/state-order.train", state, repeat_order)
    b = open(img, "rb").read()
    write("ckpt/truncated.safetensors", b[: len(b) - 300])
    write("ckpt/header-overreads.safetensors", struct.pack("<Q", 1 << 20) + b[8:200])
    write("ckpt/empty.safetensors", b"")
    write("ckpt/not-json.safetensors", struct.pack("<Q", 16) + b"this is not json")
    write("ckpt/header-not-object.safetensors", struct.pack("<Q", 8) + b"[1,2,3] ")
    shutil.rmtree(tmp)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-corpus.py BIN")
    for e in os.listdir(HERE):
        if e not in KEEP:
            p = path(e)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    idx_corpus()
    graph_corpus()
    images_corpus()
    audio_corpus()
    conllu_corpus()
    results_corpus()
    molecules_corpus()
    presets_corpus()
    checkpoint_corpus(os.path.abspath(sys.argv[1]))


if __name__ == "__main__":
    main()
