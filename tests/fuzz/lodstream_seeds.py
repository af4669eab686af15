#!/usr/bin/env python3
"""lodstream_seeds.py DIR: writes the seed corpus of fuzz_lodstream (tests/fuzz/fuzz_lodstream.c)
into DIR: LoDTensor streams as Fluid's save op writes them (tensors of each dtype fluidc reads,
one and two LoD levels, an empty tensor, a packed dims field), built by tests/e2e/fluid_files.py
from the format's definition, and a few that are wrong (a float16 tensor, a level that does not
cut the rows)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from fluid_files import lod_tensor, write_files  # noqa: E402

SEEDS = {
    "fp32_2x3": lod_tensor("float32", [2, 3], [1, 2, 3, 4, 5, 6]),
    "fp64_lod1": lod_tensor("float64", [3, 1], [0.5, -1, 2], lod=[[0, 1, 3]]),
    "int64_lod2": lod_tensor("int64", [4, 1], [1, -2, 3, 1 << 40], lod=[[0, 2, 3], [0, 1, 3, 4]]),
    "int32_packed": lod_tensor("int32", [2, 2], [7, 8, -9, 10], packed=True),
    "bool": lod_tensor("bool", [3], [1, 0, 1]),
    "empty": lod_tensor("float32", [0, 4], []),
    "fp16": lod_tensor("float16", [2], [1.0, 2.0]),
    "bad_lod": lod_tensor("float32", [2], [1, 2], lod=[[0, 1, 3]]),
}

if __name__ == "__main__":
    write_files(sys.argv[1], SEEDS)
