#!/usr/bin/env python3
"""Read an attnlab checkpoint (safetensors) with numpy alone.

    from attnlab_checkpoint import load
    tensors, meta = load("cnn.safetensors")     # {name: np.ndarray float32}, {key: str}

    python3 scripts/attnlab_checkpoint.py FILE  # lists the metadata and every tensor's shape

The format is safetensors: an 8-byte little-endian header length, a JSON header mapping each
tensor name to {dtype, shape, data_offsets} (plus "__metadata__", string to string), then the raw
little-endian data. attnlab writes F32 only; its metadata holds the model and its hyperparameters
(format "attnlab-image" for image models, "attnlab-graph" for graph models). Tensor names follow
PyTorch's state_dict names for the same modules, so `model.load_state_dict({k: torch.from_numpy(v)})`
works on the matching PyTorch module (scripts/torch_interop.py shows it for cnn, sa and local).
"""
import json
import struct
import sys

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64, "U8": np.uint8}


def load(path):
    """Returns (tensors, metadata): a dict name -> numpy array (in file order) and the __metadata__ dict."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: {len(raw)} bytes, too short for a safetensors header")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file ({len(raw)} bytes)")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = memoryview(raw)[8 + n:]
    tensors = {}
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        dt = _DTYPES.get(t["dtype"])
        if dt is None:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {t['dtype']}")
        a, b = t["data_offsets"]
        shape = tuple(int(s) for s in t["shape"])
        if not 0 <= a <= b <= len(data) or (b - a) != int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize:
            raise ValueError(f"{path}: tensor {name}: data_offsets {a}..{b} do not fit its shape {shape}")
        tensors[name] = np.frombuffer(data[a:b], dtype=np.dtype(dt).newbyteorder("<")).reshape(shape).copy()
    return tensors, meta


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    tensors, meta = load(argv[1])
    for k in sorted(meta):
        print(f"meta  {k} = {meta[k]}")
    for k, v in tensors.items():
        print(f"tensor {k} {list(v.shape)} {v.dtype}")
    print(f"{len(tensors)} tensors, {sum(v.size for v in tensors.values())} values")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
