#!/usr/bin/env python3
"""check_timeline.py FILE.json [--ranks N] [--flows TOL_US] [--span NAME]...

Checks a `flrun --timeline` file as Chrome trace-event JSON (docs/running.md, "Timeline"):
 - it parses; traceEvents is a list; displayTimeUnit is "ms";
 - every event has name, ph, pid, tid; every "X" event numeric ts and dur >= 0, "s"/"f" a ts
   and an id; in file order the "X" events of each (pid, tid) have non-decreasing ts;
 - op spans (cat "op") are there, each with args.block and args.outputs (a list), and at least
   one with args.line "FILE.fl:LINE:COL";
 - every process with events has a process_name metadata event;
 --ranks N   pids are exactly 0..N-1, each with its process_name ("rank R (role i) on HOST")
             and op spans;
 --flows TOL every "s" has exactly one "f" with its id and every "f" one "s"; the "s" lies
             in a "send grad" span of its process and thread, the "f" in a "recv grad" span, on
             another process; f.ts >= s.ts - (rtt_s + rtt_f) / 2 - TOL, where rtt is the round
             trip each process's label gives for its clock offset (the offset's error is at
             most half of it; TOL in microseconds); there is at least one flow;
 --span NAME a span (any cat) of that name is there (repeatable).
Prints a summary line; exits 1 with the first problem found.
"""
import collections
import json
import re
import sys


def fail(msg):
    print("check_timeline: FAIL: " + msg)
    sys.exit(1)


def main(argv):
    path = argv[1]
    ranks, tol, spans = None, None, []
    i = 2
    while i < len(argv):
        if argv[i] == "--ranks":
            ranks = int(argv[i + 1])
        elif argv[i] == "--flows":
            tol = float(argv[i + 1])
        elif argv[i] == "--span":
            spans.append(argv[i + 1])
        else:
            fail("unknown argument " + argv[i])
        i += 2
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s does not parse as JSON: %s" % (path, e))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    if doc.get("displayTimeUnit") != "ms":
        fail("displayTimeUnit is %r, not 'ms'" % doc.get("displayTimeUnit"))
    evs = doc["traceEvents"]
    last = {}
    names = collections.defaultdict(dict)  # pid -> metadata name -> args
    ops = collections.Counter()
    with_line = 0
    for k, e in enumerate(evs):
        for key in ("name", "ph", "pid", "tid"):
            if key not in e:
                fail("event %d has no %r: %r" % (k, key, e))
        ph = e["ph"]
        if ph == "M":
            names[e["pid"]][e["name"]] = e.get("args", {})
            continue
        if not isinstance(e.get("ts"), (int, float)):
            fail("event %d has no numeric ts: %r" % (k, e))
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail("span %d has no dur >= 0: %r" % (k, e))
            lane = (e["pid"], e["tid"])
            if lane in last and e["ts"] < last[lane]:
                fail("span %d (%s) at ts %s comes after ts %s on pid %s tid %s" %
                     (k, e["name"], e["ts"], last[lane], e["pid"], e["tid"]))
            last[lane] = e["ts"]
            if e.get("cat") == "op":
                a = e.get("args", {})
                if not isinstance(a.get("outputs"), list) or "block" not in a:
                    fail("op span %d has no args.block and args.outputs: %r" % (k, e))
                if re.fullmatch(r".+\.fl:\d+:\d+", str(a.get("line", ""))):
                    with_line += 1
                ops[e["pid"]] += 1
        elif ph in ("s", "f"):
            if "id" not in e:
                fail("flow event %d has no id: %r" % (k, e))
        else:
            fail("event %d has an unexpected ph %r" % (k, ph))
    if not ops:
        fail("no op spans")
    if not with_line:
        fail("no op span names its .fl line")
    pids = {e["pid"] for e in evs if e["ph"] != "M"}
    for p in pids:
        if "process_name" not in names[p]:
            fail("pid %s has events but no process_name" % p)
    if ranks is not None:
        if pids != set(range(ranks)):
            fail("pids %s, not 0..%d" % (sorted(pids), ranks - 1))
        for p in range(ranks):
            n = names[p]["process_name"].get("name", "")
            if not re.fullmatch(r"rank %d \((trainer|pserver) \d+\) on .+" % p, n):
                fail("pid %d's process_name is %r" % (p, n))
            if not ops[p]:
                fail("pid %d has no op spans" % p)
    present = {e["name"] for e in evs if e["ph"] == "X"}
    for s in spans:
        if s not in present:
            fail("no span named %r" % s)
    nflows = 0
    if tol is not None:
        starts, ends = collections.defaultdict(list), collections.defaultdict(list)
        for e in evs:
            if e["ph"] == "s":
                starts[e["id"]].append(e)
            elif e["ph"] == "f":
                ends[e["id"]].append(e)
        by_lane = collections.defaultdict(list)
        for e in evs:
            if e["ph"] == "X":
                by_lane[(e["pid"], e["tid"])].append(e)

        def rtt(pid):
            m = re.search(r"round trip ([0-9.]+) us", names[pid].get("process_labels", {}).get("labels", ""))
            return float(m.group(1)) if m else 0.0

        def inside(ev, name):
            return any(x["name"] == name and x["ts"] <= ev["ts"] <= x["ts"] + x["dur"]
                       for x in by_lane[(ev["pid"], ev["tid"])])

        for fid, ss in starts.items():
            if len(ss) != 1:
                fail("flow id %s has %d starts" % (fid, len(ss)))
            ff = ends.get(fid, [])
            if len(ff) != 1:
                fail("flow id %s (a send of pid %s) has %d ends" % (fid, ss[0]["pid"], len(ff)))
            s, f = ss[0], ff[0]
            if s["pid"] == f["pid"]:
                fail("flow id %s starts and ends on pid %s" % (fid, s["pid"]))
            if not inside(s, "send grad"):
                fail("flow id %s starts outside a send grad span" % fid)
            if not inside(f, "recv grad"):
                fail("flow id %s ends outside a recv grad span" % fid)
            slack = (rtt(s["pid"]) + rtt(f["pid"])) / 2 + tol
            if f["ts"] < s["ts"] - slack:
                fail("flow id %s: its receipt (ts %s, pid %s) is %.1f us before its send (ts %s, pid %s), "
                     "more than the clocks' error allows (%.1f us)" %
                     (fid, f["ts"], f["pid"], s["ts"] - f["ts"], s["ts"], s["pid"], slack))
            nflows += 1
        for fid in ends:
            if fid not in starts:
                fail("flow id %s has an end and no start" % fid)
        if not nflows:
            fail("no flows")
    print("check_timeline: ok: %d events, %d op spans, %d processes, %d flows" %
          (len(evs), sum(ops.values()), len(pids), nflows))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    main(sys.argv)
