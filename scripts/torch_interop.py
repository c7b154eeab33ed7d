#!/usr/bin/env python3
"""Loads an attnlab image checkpoint into the equivalent PyTorch module and compares logits.

    bin/attnlab eval --load M.safetensors --test-size 256 --logits L.csv
    python3 scripts/torch_interop.py M.safetensors L.csv [--data-dir DIR] [--tol 1e-4]

L.csv (written by `attnlab eval --logits`) has one row per evaluated test image:
`index,label,logit_0,...,logit_{K-1}` where index is the image's position in the test split. The
same images are read here from the Fashion-MNIST IDX files, normalised with the checkpoint's
mean/std, and run through a PyTorch module built from the checkpoint's metadata (cnn, sa, local:
the architectures of attnlab's include/attnlab/models.h, tensor names = state_dict names). Prints
the largest |logit difference| and exits 1 when it exceeds --tol, 3 when torch is not installed.
Needs numpy and torch (Debian: python3-numpy, python3-torch).
"""
import argparse
import gzip
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attnlab_checkpoint import load  # noqa: E402

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch_interop: torch is not installed (apt-get install python3-torch); skipped")
    sys.exit(3)


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find_idx(d, name):
    for n in (name + ".gz", name):
        if os.path.exists(os.path.join(d, n)):
            return os.path.join(d, n)
    raise FileNotFoundError(f"{d}: no {name}[.gz]")


class CNN(nn.Module):
    def __init__(self, m):
        super().__init__()
        C, H, W, K = int(m["channels"]), int(m["height"]), int(m["width"]), int(m["classes"])
        self.c1, self.c2 = nn.Conv2d(C, 32, 3, padding=1), nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * (H // 4) * (W // 4), K)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        return self.fc(F.max_pool2d(F.relu(self.c2(x)), 2).flatten(1))


def window_index(gh, gw, wh, ww):
    """(N, N) index into a head's relative-bias row (wh*ww = absent) for a wh x ww window."""
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    ys, xs = ys.flatten(), xs.flatten()
    dy, dx, rh, rw = ys[None] - ys[:, None], xs[None] - xs[:, None], wh // 2, ww // 2
    idx = (dy + rh) * ww + (dx + rw)
    idx[(dy.abs() > rh) | (dx.abs() > rw)] = wh * ww
    return idx


class Attention(nn.Module):
    def __init__(self, D, H, window):   # window: None (full) or (gh, gw, wh, ww)
        super().__init__()
        self.qkv, self.proj, self.H = nn.Linear(D, 3 * D), nn.Linear(D, D), H
        if window:
            gh, gw, wh, ww = window
            self.rel = nn.Parameter(torch.zeros(H, wh * ww))
            self.register_buffer("idx", window_index(gh, gw, wh, ww), persistent=False)
        else:
            self.rel = None

    def forward(self, x):
        B, N, D = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.H, D // self.H).permute(2, 0, 3, 1, 4)
        logits = (q / math.sqrt(D // self.H)) @ k.transpose(-2, -1)
        if self.rel is not None:
            logits = logits + torch.cat([self.rel, self.rel.new_full((self.H, 1), float("-inf"))], 1)[:, self.idx]
        o = logits.softmax(-1) @ v
        return self.proj(o.transpose(1, 2).reshape(B, N, D))


class Block(nn.Module):
    def __init__(self, D, H, hidden, window):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(D), Attention(D, H, window), nn.LayerNorm(D)
        self.fc1, self.fc2 = nn.Linear(D, hidden), nn.Linear(hidden, D)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def sincos(gh, gw, D):
    pe, half = np.zeros((gh * gw, D), np.float32), D // 2
    for y in range(gh):
        for x in range(gw):
            for i in range(half // 2):
                f = 10000.0 ** (-2.0 * i / half)
                r = pe[y * gw + x]
                r[2 * i], r[2 * i + 1] = math.sin(y * f), math.cos(y * f)
                r[half + 2 * i], r[half + 2 * i + 1] = math.sin(x * f), math.cos(x * f)
    return torch.from_numpy(pe)


class SA(nn.Module):
    """sa and local: patch embedding, positions, pre-LN blocks, final LN, mean over tokens, linear."""
    def __init__(self, m):
        super().__init__()
        if m.get("score", "dot") != "dot" or m.get("norm", "softmax") != "softmax":
            raise SystemExit(f"torch_interop: score={m.get('score')} norm={m.get('norm')}: only dot/softmax here")
        C, P, D = int(m["channels"]), int(m["patch"]), int(m["dim"])
        self.P, gh, gw = P, int(m["height"]) // P, int(m["width"]) // P
        pos, H = m["pos"], int(m["heads"])
        if m["model"] == "local":
            window = (gh, gw, int(m["window"]), int(m["window"]))
        else:
            window = (gh, gw, 2 * gh - 1, 2 * gw - 1) if pos == "relative" else None
        self.embed = nn.Linear(C * P * P, D)
        self.pos = nn.Parameter(torch.zeros(gh * gw, D)) if pos == "learned" else None
        self.register_buffer("sincos", sincos(gh, gw, D) if pos == "sinusoidal" else None, persistent=False)
        self.blocks = nn.ModuleList([Block(D, H, int(m["hidden"]), window) for _ in range(int(m["depth"]))])
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, int(m["classes"]))

    def forward(self, x):
        B, C, Hh, W = x.shape
        P = self.P
        t = x.reshape(B, C, Hh // P, P, W // P, P).permute(0, 2, 4, 1, 3, 5).reshape(B, (Hh // P) * (W // P), C * P * P)
        h = self.embed(t)
        if self.pos is not None:
            h = h + self.pos
        if self.sincos is not None:
            h = h + self.sincos
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln(h).mean(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("logits")
    ap.add_argument("--data-dir", default=os.environ.get("ATTNLAB_FASHION_MNIST", "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    tensors, meta = load(a.checkpoint)
    kind = meta.get("model")
    model = {"cnn": CNN, "sa": SA, "local": SA}.get(kind)
    if model is None:
        raise SystemExit(f"torch_interop: model '{kind}' has no PyTorch counterpart here (cnn, sa, local)")
    net = model(meta).eval()
    missing, unexpected = net.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    if missing or unexpected:
        raise SystemExit(f"torch_interop: state_dict mismatch: missing {missing}, unexpected {unexpected}")
    rows = np.loadtxt(a.logits, delimiter=",", skiprows=1, ndmin=2)
    idx, ours = rows[:, 0].astype(np.int64), rows[:, 2:].astype(np.float32)
    imgs = read_idx(find_idx(a.data_dir, "t10k-images-idx3-ubyte"))[idx].astype(np.float32) / 255.0
    mean = np.array([float(s) for s in meta["mean"].split(",")], np.float32)
    std = np.array([float(s) for s in meta["std"].split(",")], np.float32)
    x = (imgs[:, None, :, :] - mean[None, :, None, None]) / std[None, :, None, None]
    with torch.no_grad():
        theirs = net(torch.from_numpy(x)).numpy()
    diff = float(np.abs(theirs - ours).max())
    agree = float((theirs.argmax(1) == ours.argmax(1)).mean())
    print(f"torch_interop: {kind} {len(idx)} images, max |logit attnlab - torch| = {diff:.3g}, "
          f"same class {agree * 100:.1f} %")
    return 0 if diff <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
