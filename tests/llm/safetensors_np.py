"""safetensors_np.py - reading and writing safetensors files with numpy alone (no torch,
no safetensors package), for the tiny checkpoints of tests/llm and their reference.

bf16 has no numpy dtype: bf16 tensors are held as uint16 arrays of their bits, and
bf16_round / bf16_to_f32 convert (round to nearest even, as torch does)."""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "I64": np.int64, "F64": np.float64}


def bf16_round(x):
    """float32 array -> uint16 bf16 bits, rounded to nearest even (NaN kept quiet)."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, 0x7FC0, r).astype(np.uint16)


def bf16_to_f32(bits):
    """uint16 bf16 bits -> float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def write(path, tensors):
    """tensors: list of (name, array, dtype name) with dtype in F32 F16 BF16 I32 I64;
    BF16 arrays are uint16 bits. Header keys sorted, data in the given order."""
    header, blobs, off = {}, [], 0
    for name, arr, dt in tensors:
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    text = json.dumps(dict(sorted(header.items())), separators=(",", ":"))
    text += " " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text.encode())
        for b in blobs:
            f.write(b)


def read(path):
    """{name: (array, dtype name)}; BF16 as uint16 bits."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = e["dtype"]
        npdt = np.uint16 if dt == "BF16" else _DTYPES[dt]
        arr = np.frombuffer(raw[base + b:base + end], dtype=npdt).reshape(e["shape"])
        out[name] = (arr, dt)
    return out


def as_f32(arr, dt):
    """A tensor's values as float32."""
    return bf16_to_f32(arr) if dt == "BF16" else np.asarray(arr, dtype=np.float32)
