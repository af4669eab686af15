#!/usr/bin/env python3
"""ckpt_seeds.py DIR: writes the seed corpus of fuzz_ckpt (tests/fuzz/fuzz_ckpt.c) into DIR:
checkpoints as flrun --save writes them (docs/running.md, "Saving, loading, predicting"), in the
target's input form: 8 bytes that choose the var and the rows to read, then one record per entry
of the directory (u8 name length, name, u8 kind: 0 file, 1 FIFO, 2 directory, 3 link; u16
length, bytes). Whole vars, shards (read whole and as a pserver's block), version 1, escaped
names, and a few hostile ones (a FIFO, a newer FORMAT, a link to a device). Paddle's layouts:
a file per var and the combined file "__params__" (with fuzz_ckpt's second var "b", float32 [2])
in Fluid's stream format, made by tests/e2e/fluid_files.py, and fluidc's formats 4 and 5 of it."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from fluid_files import lod_tensor  # noqa: E402

NAMES = ["T", "fc_0.w_0", "MANIFEST", "a/b@c.d", ".hidden", "x%shard-0-1", "format"]
SIZES = [4, 8, 4, 8, 1]  # float32, float64, int32, int64, bool (FlDType codes 0-4)
FORMAT = b"fluidc checkpoint 2\n"


def escape(name):
    """A var's file name in a version-2 checkpoint (runtime/params.c, escape_name)."""
    out = []
    reserved = name.upper() in ("MANIFEST", "FORMAT")
    for i, c in enumerate(name.encode()):
        if c in b"%/" or c < 0x20 or c == 0x7F or (i == 0 and (c == ord(".") or reserved)):
            out.append("%%%02X" % c)
        else:
            out.append(chr(c))
    return "".join(out)


def head(name, dtype, dims, block=None):
    """The target's first 8 bytes: var name, dtype, rank, dims; block = (row0, rows) or None."""
    d = list(dims) + [1] * (3 - len(dims))
    b6, b7 = (0x80 | block[0], block[1]) if block else (0, 0)
    return bytes([NAMES.index(name), dtype, len(dims), d[0] - 1, d[1] - 1, d[2] - 1, b6, b7])


def tensor(dtype, dims, rows=None):
    """A tensor file: version 1 (the var whole), or 2 (a shard: rows = (first, count))."""
    n = 1
    for x in dims:
        n *= x
    out = b"FLTENSOR" + struct.pack("<4I", 2 if rows else 1, dtype, len(dims), 0)
    out += struct.pack("<%dq" % len(dims), *dims)
    if rows:
        out += struct.pack("<2q", *rows)
        n = n // dims[0] * rows[1]
    return out + bytes((7 * i + 3) % 251 for i in range(n * SIZES[dtype]))


FLUID_DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def fluid(dtype, dims, lod=()):
    """A tensor of Fluid's stream format, of the dtype code and dims (values like tensor()'s)."""
    n = 1
    for x in dims:
        n *= x
    return lod_tensor(FLUID_DTYPES[dtype], dims, [i % 2 for i in range(n)], lod=lod)


def rec(name, body=b"", kind=0):
    name = name.encode() if isinstance(name, str) else name
    return bytes([len(name)]) + name + bytes([kind]) + struct.pack("<H", len(body)) + body


def whole(name, dtype, dims, fmt=FORMAT, block=None):
    f = escape(name) if fmt is not None else name
    out = head(name, dtype, dims, block) + rec(f, tensor(dtype, dims)) + rec("MANIFEST", (f + "\n").encode())
    return out + (rec("FORMAT", fmt) if fmt is not None else b"")


def sharded(name, dtype, dims, cuts, block=None):
    f = escape(name)
    out = head(name, dtype, dims, block) + rec("FORMAT", FORMAT)
    manifest = ""
    for a, b in zip(cuts, cuts[1:]):
        s = "%s%%shard-%d-%d" % (f, a, b)
        out += rec(s, tensor(dtype, dims, (a, b - a)))
        manifest += s + "\n"
    return out + rec("MANIFEST", manifest.encode())


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    seeds = {
        "whole_f32": whole("T", 0, [4, 3]),
        "whole_i64_scalar": whole("fc_0.w_0", 3, []),
        "whole_block": whole("T", 1, [6, 2], block=(2, 3)),
        "escaped_manifest": whole("MANIFEST", 0, [2, 2]),
        "escaped_slash": whole("a/b@c.d", 2, [3]),
        "escaped_dot": whole(".hidden", 4, [5, 1, 2]),
        "v1": whole("T", 0, [4, 3], fmt=None),
        "shards": sharded("T", 0, [6, 3], [0, 2, 6]),
        "shards_block": sharded("fc_0.w_0", 3, [8, 2], [0, 3, 5, 8], block=(2, 4)),
        "shards_gap": sharded("T", 0, [6, 3], [0, 2]) + rec("T%shard-3-6", tensor(0, [6, 3], (3, 3))),
        "newer_format": whole("T", 0, [4, 3], fmt=b"fluidc checkpoint 3\n"),
        "fifo_format": whole("T", 0, [4, 3], fmt=None) + rec("FORMAT", kind=1),
        "fifo_var": head("T", 0, [4, 3]) + rec("FORMAT", FORMAT) + rec("MANIFEST", b"T\n") + rec("T", kind=1),
        "dir_var": head("T", 0, [4, 3]) + rec("FORMAT", FORMAT) + rec("MANIFEST", b"T\n") + rec("T", kind=2),
        "link_zero": head("T", 0, [4, 3]) + rec("FORMAT", FORMAT) + rec("MANIFEST", b"T\n") +
                     rec("T", b"/dev/zero", kind=3),
        "link_entry": head("T", 0, [4, 3]) + rec("FORMAT", FORMAT) + rec("MANIFEST", b"T\n") +
                      rec("U", tensor(0, [4, 3])) + rec("T", b"U", kind=3),
        "fluid_var": head("T", 0, [4, 3]) + rec("T", fluid(0, [4, 3])) + rec("other", b"x"),
        "fluid_block": head("fc_0.w_0", 3, [6, 2], block=(2, 3)) + rec("fc_0.w_0", fluid(3, [6, 2])),
        "fluid_lod": head("T", 1, [3, 1]) + rec("T", fluid(1, [3, 1], lod=[[0, 1, 3]])),
        "fluid_tail": head("T", 0, [4]) + rec("T", fluid(0, [4]) + b"\0"),
        "fluid_combined": head("T", 0, [4, 3]) + rec("__params__", fluid(0, [4, 3]) + fluid(0, [2])),
        "fluid_combined_tail": head("T", 2, [2]) + rec("__params__", fluid(2, [2]) + fluid(0, [2]) + b"\0\0"),
        "fluid_combined_fifo": head("T", 0, [2]) + rec("__params__", kind=1),
        "fluid_format4": head("T", 0, [4, 3]) + rec("FORMAT", b"fluidc checkpoint 4\n") + rec("MANIFEST", b"T\n") +
                         rec("T", fluid(0, [4, 3])),
        "fluid_format5": head("fc_0.w_0", 3, [6, 2], block=(1, 4)) + rec("FORMAT", b"fluidc checkpoint 5\n") +
                         rec("MANIFEST", b"all\nT\nfc_0.w_0\n") + rec("all", fluid(1, [2, 2], lod=[[0, 2]]) + fluid(3, [6, 2])),
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), d))


if __name__ == "__main__":
    main()
