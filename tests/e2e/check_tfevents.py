#!/usr/bin/env python3
"""check_tfevents.py DIR --proto PROTO --log LOG.csv [--lr] [--same-lr OTHERDIR]: checks the
TensorBoard event file flrun --tensorboard wrote into DIR (docs/running.md, "TensorBoard").

 - DIR holds one file, events.out.tfevents.*, made of TFRecords: every record's length and data
   carry a masked CRC32C, recomputed here with an implementation of its own (the Castagnoli
   polynomial, bit by bit) and compared, and no byte is left over;
 - every record decodes with `protoc --decode=tfevents.Event PROTO` (the project's .proto, written
   from TensorFlow's event.proto and summary.proto); the first is the file_version
   "brain.Event:2", the others hold summary values;
 - every row of the log LOG.csv is in the file: its figures as "train/<name>" or "test/<name>" at
   its step, equal within float32 rounding (1e-6 relative);
 - every training step has "samples_per_second" > 0, and with --lr a "learning_rate" > 0;
 - --same-lr OTHERDIR: the learning rates per step equal those of OTHERDIR's file (a job and its
   local run: the pservers' decayed rate is the local one, step by step).
Prints a summary line and exits 1 on the first failure.
"""
import argparse
import csv
import glob
import os
import re
import struct
import subprocess
import sys

from crc32c import crc32c, masked


def fail(msg):
    print("check_tfevents: FAIL: " + msg)
    sys.exit(1)


def records(path):
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        if i + 12 > len(data):
            fail("%s: %d bytes at offset %d: a cut record header" % (path, len(data) - i, i))
        (n,) = struct.unpack("<Q", data[i:i + 8])
        (lcrc,) = struct.unpack("<I", data[i + 8:i + 12])
        if lcrc != masked(crc32c(data[i:i + 8])):
            fail("%s: offset %d: the length's CRC is %08x, not %08x" % (path, i, lcrc, masked(crc32c(data[i:i + 8]))))
        if i + 16 + n > len(data):
            fail("%s: offset %d: a record of %d bytes runs past the end" % (path, i, n))
        rec = data[i + 12:i + 12 + n]
        (dcrc,) = struct.unpack("<I", data[i + 12 + n:i + 16 + n])
        if dcrc != masked(crc32c(rec)):
            fail("%s: offset %d: the data's CRC is %08x, not %08x" % (path, i, dcrc, masked(crc32c(rec))))
        yield rec
        i += 16 + n


def decode(proto, rec):
    d, name = os.path.split(os.path.abspath(proto))
    p = subprocess.run(["protoc", "--decode=tfevents.Event", "--proto_path=" + d, name], input=rec,
                       capture_output=True)
    if p.returncode != 0:
        fail("protoc --decode: " + p.stderr.decode())
    text = p.stdout.decode()
    ev = {"values": {}}
    m = re.search(r"^step: (-?\d+)$", text, re.M)
    ev["step"] = int(m.group(1)) if m else 0
    m = re.search(r'^file_version: "(.*)"$', text, re.M)
    ev["file_version"] = m.group(1) if m else None
    ev["wall_time"] = float(re.search(r"^wall_time: (\S+)$", text, re.M).group(1))
    for tag, v in re.findall(r'tag: "([^"]*)"\s*simple_value: (\S+)', text):
        ev["values"][tag] = float(v)
    return ev


def load(directory, proto):
    files = glob.glob(os.path.join(directory, "events.out.tfevents.*"))
    if len(files) != 1:
        fail("%s holds %d event files, not 1" % (directory, len(files)))
    evs = [decode(proto, r) for r in records(files[0])]
    if not evs or evs[0]["file_version"] != "brain.Event:2":
        fail("the first record is not the file_version brain.Event:2")
    at = {}
    for ev in evs[1:]:
        if not ev["values"]:
            fail("a record at step %d holds no value" % ev["step"])
        for tag, v in ev["values"].items():
            at.setdefault(tag, {})[ev["step"]] = v
    return evs, at


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--proto", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--lr", action="store_true")
    ap.add_argument("--same-lr")
    a = ap.parse_args()
    evs, at = load(a.dir, a.proto)
    rows = list(csv.reader(open(a.log)))
    names = rows[0][4:]
    steps = set()
    for r in rows[1:]:
        phase, step = r[0], int(r[3])
        if phase == "train":
            steps.add(step)
        for name, v in zip(names, r[4:]):
            tag = phase + "/" + name
            got = at.get(tag, {}).get(step)
            if got is None:
                fail("no %s at step %d" % (tag, step))
            want = float(v)  # the log's double, to 9 digits; the file holds it as a float32
            if abs(got - want) > 1e-6 * abs(want) + 1e-30 and not (got != got and want != want):
                fail("%s at step %d is %r, the log says %s" % (tag, step, got, v))
    for s in steps:
        if not at.get("samples_per_second", {}).get(s, 0) > 0:
            fail("no samples_per_second > 0 at step %d" % s)
        if a.lr and not at.get("learning_rate", {}).get(s, 0) > 0:
            fail("no learning_rate > 0 at step %d" % s)
    if a.same_lr:
        _, other = load(a.same_lr, a.proto)
        mine, theirs = at.get("learning_rate", {}), other.get("learning_rate", {})
        if sorted(mine) != sorted(theirs) or not mine:
            fail("the learning rates are at steps %s here and %s there" % (sorted(mine)[:5], sorted(theirs)[:5]))
        for s in mine:
            if abs(mine[s] - theirs[s]) > 1e-6 * abs(theirs[s]):
                fail("the learning rate at step %d is %r here and %r there" % (s, mine[s], theirs[s]))
    lrs = at.get("learning_rate", {})
    print("check_tfevents: ok: %d records, %d steps, %d tags%s" % (
        len(evs), len(steps), len(at),
        ", learning rate %g to %g" % (lrs[min(lrs)], lrs[max(lrs)]) if lrs else ""))


main()
