#!/usr/bin/env python3
"""recordio_seeds.py DIR: writes the seed corpus of fuzz_recordio (tests/fuzz/fuzz_recordio.c)
into DIR: RecordIO files as fluid.recordio_writer writes them (each record a batch: the tensor
streams of its feed vars), built by tests/e2e/fluid_files.py from the format's definition, in
one and several chunks, with an empty record, and Snappy chunks (stored and compressed blocks)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from fluid_files import lod_tensor, recordio, write_files  # noqa: E402


def batch(i):
    return (lod_tensor("float32", [2, 3], [i, 1, 2, 3, 4, 5]) + lod_tensor("int64", [2, 1], [i, -i])
            + lod_tensor("int64", [3, 1], [1, 2, 3], lod=[[0, 1, 3]]))


SEEDS = {
    "one_chunk": recordio([batch(i) for i in range(3)]),
    "chunks_of_2": recordio([batch(i) for i in range(5)], max_num_records=2),
    "empty_record": recordio([b"", b"ab"]),
    "snappy": recordio([batch(0)], compressor=1),
    "snappy_compressed": recordio([batch(i % 2) for i in range(40)], max_num_records=20, compressor=1),
}

if __name__ == "__main__":
    write_files(sys.argv[1], SEEDS)
