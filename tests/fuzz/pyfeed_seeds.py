#!/usr/bin/env python3
"""pyfeed_seeds.py DIR: writes the seed corpus of fuzz_pyfeed (tests/fuzz/fuzz_pyfeed.c) into
DIR: calls as the Python package makes them (a training step, a prediction, a set and a get of
a parameter) and a few hostile ones, in the target's input form (each byte picks from the
target's tables: keep them in step with fuzz_pyfeed.c)."""
import os
import struct
import sys

NAMES = ["x", "ids", "y", "fc_0.w_0", "fc_0.b_0", "embedding_0.w_0", "mean_0.tmp_0",
         "learning_rate_0", "nope", "", "elementwise_add_1.tmp_0", "fc_0.w_0@GRAD"]
CODES = {"float32": 0, "float64": 1, "int32": 2, "int64": 3, "bool": 4, "bad": 7}  # index into codes[]
DIMS = [1, 2, 3, 4, 0, 5, 8, 16, 1, 3, -1, -7, 2**63 - 1, -2**63, 2**40, 10]
RUN, PREDICT, SET, GET = 0, 1, 2, 3


def name(n):
    if n in NAMES:
        return bytes([NAMES.index(n)])
    b = n.encode()
    return bytes([len(NAMES), len(b)]) + b


def feed(n, dtype, shape, values=b""):
    """A feed: its name, dtype, rank and 8 dims, then the bytes of its elements."""
    dims = [DIMS.index(d) for d in shape] + [0] * (8 - len(shape))
    return name(n) + bytes([CODES[dtype], len(shape) + 1]) + bytes(dims) + values


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def i64(*v):
    return struct.pack("<%dq" % len(v), *v)


def run(kind, feeds, fetches, scratch=2):
    out = bytes([kind, len(feeds)]) + b"".join(feeds)
    return out + bytes([len(fetches)]) + b"".join(name(f) for f in fetches) + bytes([scratch])


STEP = [feed("x", "float32", [2, 3], f32(1, 2, 3, 4, 5, 6)), feed("ids", "int64", [2, 1], i64(1, 9)),
        feed("y", "float32", [2, 1], f32(0.5, -1))]


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    seeds = {
        "train_step": run(RUN, STEP, ["mean_0.tmp_0", "fc_0.w_0"]),
        "two_steps_small_scratch": run(RUN, STEP, ["mean_0.tmp_0"], 0) + run(RUN, STEP, ["fc_0.w_0"], 1),
        "predict": run(PREDICT, STEP[:2], ["elementwise_add_1.tmp_0"]),
        "set_get": bytes([SET]) + feed("fc_0.w_0", "float32", [3, 1], f32(1, 2, 3)) + bytes([GET]) + name("fc_0.w_0"),
        "set_typo": bytes([SET]) + feed("fc_0.w0", "float32", [3, 1], f32(1, 2, 3)),
        "set_wrong_shape_then_step": bytes([SET]) + feed("fc_0.w_0", "float32", [2, 1], f32(1, 2)) +
                                     run(RUN, STEP, ["mean_0.tmp_0"]),
        "id_out_of_range": run(RUN, [STEP[0], feed("ids", "int64", [2, 1], i64(1, 10**12)), STEP[2]],
                               ["mean_0.tmp_0"]),
        "bad_dtype": run(RUN, [feed("x", "bad", [2, 3])] + STEP[1:], ["mean_0.tmp_0"]),
        "negative_dim": run(RUN, [feed("x", "float32", [-1, 3])] + STEP[1:], ["mean_0.tmp_0"]),
        "overflowing_shape": run(RUN, [feed("x", "float32", [2**40, 2**40, 2**40])] + STEP[1:], ["mean_0.tmp_0"]),
        "empty_batch": run(RUN, [feed("x", "float32", [0, 3]), feed("ids", "int64", [0, 1]),
                                 feed("y", "float32", [0, 1])], ["mean_0.tmp_0"]),
        "wrong_dtype_and_names": run(PREDICT, [feed("x", "float64", [2, 3], b"\x00" * 48), feed("nope", "float32", [1])],
                                     ["nope", ""]),
        "get_unknown": bytes([GET]) + name("zz\x01") + bytes([GET]) + name("fc_0.w_0@GRAD"),
    }
    for n, data in seeds.items():
        with open(os.path.join(d, n), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), d))


if __name__ == "__main__":
    main()
