#!/usr/bin/env python3
# check_dist_losses.py LOCAL JOB MODE: the losses a script prints (one "[x]" per step), locally
# (LOCAL) and on a job's two trainers (JOB: mpirun --tag-output). MODE mean: the trainers' mean
# is the local loss at every step (each fed half of the batch), and they differ somewhere; MODE
# each: each trainer's loss is the local loss (each fed the whole batch). Tolerance 1e-4.
import re
import sys

local = [float(l.strip()[1:-1]) for l in open(sys.argv[1]) if l.strip()]
tr = {}
for l in open(sys.argv[2]):
    m = re.match(r'\[\d+,(\d+)\]<stdout>:\s*\[(.*)\]\s*$', l)
    if m:
        tr.setdefault(int(m.group(1)), []).append(float(m.group(2)))
if sorted(tr) != [0, 1] or any(len(v) != len(local) for v in tr.values()):
    sys.exit("the trainers' losses: %r (local: %d steps)" % (tr, len(local)))
for i, want in enumerate(local):
    got = [("mean", (tr[0][i] + tr[1][i]) / 2)] if sys.argv[3] == "mean" else \
          [("trainer 0", tr[0][i]), ("trainer 1", tr[1][i])]
    for who, g in got:
        if abs(g - want) > 1e-4:
            sys.exit("step %d: %s %.7f, local %.7f" % (i, who, g, want))
if sys.argv[3] == "mean" and tr[0] == tr[1]:
    sys.exit("both trainers fed the same rows")
