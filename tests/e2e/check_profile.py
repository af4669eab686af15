#!/usr/bin/env python3
"""check_profile.py OUT TRACE.json [--sort KEY] [--ranks N]: checks the profiler's tables flrun
printed (OUT: its stdout) against the op spans of a Chrome trace of the same span (flrun
--timeline with --profile, or a fluid.profiler region's profile_path; docs/running.md,
"Profiling").

 - OUT holds one table per process (--ranks N: N, in rank order, each naming its rank), each with
   Fluid's header (place CPU, time unit ms, the sorting) and columns Event, Calls, Total, Min.,
   Max., Ave., Ratio.;
 - per op type, its calls are the trace's op spans of that name on that process, and its total
   is their durations summed, within 5%; min <= ave <= max, ave * calls = total and the ratios
   sum to 1, within the table's rounding; every op type of the trace is in the table;
 - the rows are sorted by --sort (calls, total, max, min, ave: descending).
Prints a summary line; exits 1 on a failure.
"""
import argparse
import json
import re
import sys

COLS = {"calls": 1, "total": 2, "min": 3, "max": 4, "ave": 5}


def fail(msg):
    print("check_profile: FAIL: " + msg)
    sys.exit(1)


def tables(text):
    out = []
    for part in text.split("------------------------->     Profiling Report     <-------------------------")[1:]:
        lines = part.strip("\n").split("\n")
        head = dict(l.split(": ", 1) for l in lines[:3] if ": " in l)
        if head.get("Place") != "CPU" or head.get("Time unit") != "ms":
            fail("a table's header: %s" % lines[:4])
        i = next((k for k, l in enumerate(lines) if l.startswith("Event ")), None)
        if i is None or lines[i].split() != ["Event", "Calls", "Total", "Min.", "Max.", "Ave.", "Ratio."]:
            fail("no column header in the table of %s" % head.get("Process"))
        rows = []
        for l in lines[i + 1:]:
            f = l.split()
            if len(f) != 7:
                break
            rows.append([f[0], int(f[1])] + [float(x) for x in f[2:]])
        out.append({"process": head.get("Process"), "sorted": lines[3], "rows": rows})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("trace")
    ap.add_argument("--sort")
    ap.add_argument("--ranks", type=int, default=0)
    a = ap.parse_args()
    tabs = tables(open(a.out).read())
    want = max(a.ranks, 1)
    if len(tabs) != want:
        fail("%d tables, expected %d" % (len(tabs), want))
    spans = {}
    for ev in json.load(open(a.trace))["traceEvents"]:
        if ev.get("ph") == "X" and ev.get("cat") == "op":
            s = spans.setdefault(ev["pid"], {}).setdefault(ev["name"], [0, 0.0])
            s[0] += 1
            s[1] += float(ev["dur"]) / 1000.0  # us -> ms
    compared = 0
    for k, t in enumerate(tabs):
        pid = k
        if a.ranks and not t["process"].startswith("rank %d " % k):
            fail("table %d is of %r, not rank %d" % (k, t["process"], k))
        mine = spans.get(pid, {})
        names = [r[0] for r in t["rows"]]
        if sorted(names) != sorted(mine):
            fail("%s: the table's op types %s are not the trace's %s" % (t["process"], sorted(names), sorted(mine)))
        ratio = 0.0
        for name, calls, total, mn, mx, ave, r in t["rows"]:
            n, ms = mine[name]
            if calls != n:
                fail("%s: %s: %d calls in the table, %d spans in the trace" % (t["process"], name, calls, n))
            if abs(total - ms) > 0.05 * ms + 1e-6:
                fail("%s: %s: total %g ms in the table, %g ms of spans in the trace (more than 5%% apart)" %
                     (t["process"], name, total, ms))
            if not (mn <= ave * (1 + 1e-5) and ave <= mx * (1 + 1e-5)) or abs(ave * calls - total) > 1e-4 * total + 1e-9:
                fail("%s: %s: min %g, ave %g, max %g, calls %d, total %g do not fit" % (t["process"], name, mn, ave, mx,
                                                                                    calls, total))
            ratio += r
            compared += 1
        if t["rows"] and abs(ratio - 1) > 1e-4:
            fail("%s: the ratios sum to %g" % (t["process"], ratio))
        if a.sort:
            col = [r[COLS[a.sort]] for r in t["rows"]]
            if a.sort == "ave":
                col = [r[2] / r[1] for r in t["rows"]]
            if any(x < y * (1 - 1e-5) for x, y in zip(col, col[1:])):
                fail("%s: not sorted by %s: %s" % (t["process"], a.sort, col[:8]))
    print("check_profile: ok: %d table%s, %d op types, each within 5%% of the trace's spans" %
          (len(tabs), "" if len(tabs) == 1 else "s", compared))


main()
