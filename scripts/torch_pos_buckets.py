#!/usr/bin/env python3
"""Training tokens/s of the PyTorch POS taggers on sentences bucketed by length: the PyTorch side of
`attnlab bench seq --buckets` (same protocol, same line format). The models, features, batching and
training step are the peer's own (peers/torch_pos.py, imported, not copied).

Per bucket LO-HI (inclusive; "81-" has no upper end): the training sentences of that length, in a
seeded order, cycled through (reshuffled each pass); batches of --batch of them; --warmup untimed
steps, then max(10, ceil(--tokens / (batch * mean length))) timed steps. tokens/s = real (unpadded)
tokens of the timed batches / seconds of those steps (batchify, forward, loss, backward, AdamW).

usage: OPENBLAS_NUM_THREADS=1 python3 torch_pos_buckets.py --data DIR [--peer PATH]
       [--models rnn,sa,trunc] [--buckets 1-10,11-20,21-40,41-80,81-] [--threads 2] [--seed 1]
prints per model and bucket:
  MODEL bucket B train_tokens_per_s X tokens N steps S seconds T cpu_seconds C mean_len L
"""
import argparse
import importlib.util
import math
import os
import random
import sys
import time


def load_peer(path):
    spec = importlib.util.spec_from_file_location("torch_pos", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_bucket(s):
    lo, _, hi = s.partition("-")
    if not _:
        return int(lo), int(lo)
    return int(lo), (int(hi) if hi else None)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="directory with train.conllu.gz (UD English EWT)")
    ap.add_argument("--peer", default=os.path.join(here, "..", "..", "shared", "peers", "torch_pos.py"))
    ap.add_argument("--models", default="rnn,sa,trunc")
    ap.add_argument("--buckets", default="1-10,11-20,21-40,41-80,81-")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=20000)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not os.path.isfile(a.peer):
        sys.exit(f"torch_pos_buckets.py: peer {a.peer} not found (--peer PATH)")
    peer = load_peer(a.peer)
    torch, F = peer.torch, peer.F
    torch.set_num_threads(a.threads)
    train = peer.read_conllu(os.path.join(a.data, "train.conllu.gz"))
    fz = peer.Featurizer(train)
    enc = [fz.encode(s) for s in train]
    for spec in a.buckets.split(","):
        lo, hi = parse_bucket(spec)
        ids = [i for i, s in enumerate(enc) if len(s[0]) >= lo and (hi is None or len(s[0]) <= hi)]
        if not ids:
            print(f"torch_pos_buckets.py: no training sentence in bucket {spec}", file=sys.stderr)
            continue
        mean_len = sum(len(enc[i][0]) for i in ids) / len(ids)
        steps = max(10, math.ceil(a.tokens / (a.batch * mean_len)))
        rnd = random.Random(a.seed)
        pick, order = [], list(ids)
        while len(pick) < (steps + a.warmup) * a.batch:
            if len(pick) % len(order) == 0:
                rnd.shuffle(order)
            pick.append(order[len(pick) % len(order)])
        for kind in a.models.split(","):
            torch.manual_seed(a.seed)
            model = peer.Tagger(kind, len(fz.words) + 2, len(fz.suffixes) + 2)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
            ntok, t0, c0 = 0, None, None
            for k in range(steps + a.warmup):
                if k == a.warmup:
                    t0, c0 = time.perf_counter(), time.process_time()
                items = [enc[j] for j in pick[k * a.batch:(k + 1) * a.batch]]
                W, P, S, Y, M = peer.batchify(items)
                loss = F.cross_entropy(model(W, P, S, M).reshape(-1, 17), Y.reshape(-1), ignore_index=-100)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if k >= a.warmup:
                    ntok += sum(len(it[0]) for it in items)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            print(f"{kind:<10} bucket {spec:<6} train_tokens_per_s {ntok / dt:9.0f} tokens {ntok:8d} steps {steps:5d} "
                  f"seconds {dt:7.3f} cpu_seconds {dc:7.3f} mean_len {mean_len:5.1f}", flush=True)


if __name__ == "__main__":
    main()
