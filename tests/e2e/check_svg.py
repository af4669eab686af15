#!/usr/bin/env python3
"""check_svg.py FILE.svg --runs A,B --metrics loss,acc [--log-scale M]... [--linear M]...
               [--png FILE.png]: checks a picture of training curves (flc plot, flrun --plot;
docs/running.md, "Curves").

Structure (the SVG parsed as XML):
 - self-contained: no script, image, foreignObject, style sheet, link (href) or url(...) that a
   browser would fetch or run;
 - one <path class="series"> per run, metric and phase (train, test), each a drawn line ("M ...");
 - each metric's panel has its value axis named (the metric; "(log scale)" for --log-scale M, not
   for --linear M) and its step axis ("step ...");
 - the legend names every run, and train and test.
The picture (--png: a screenshot a browser made of the SVG, decoded here with zlib): as large as
the SVG says, not blank (at least 2% of its pixels differ from the white background), and each
run's colour (its series' stroke) on at least 100 pixels more than its test dots could cover. Prints a summary; exits 1 on a failure.
"""
import argparse
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("check_svg: FAIL: " + msg)
    sys.exit(1)


def png_pixels(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + ": not a PNG")
    i, idat, w = 8, b"", None
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                fail("%s: a PNG of depth %d, colour type %d, interlace %d (8-bit RGB/RGBA expected)" %
                     (path, depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        i += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            elif f != 0:
                fail("%s: filter %d on row %d" % (path, f, y))
        rows.append([tuple(line[k:k + 3]) for k in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svg")
    ap.add_argument("--runs", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--log-scale", action="append", default=[])
    ap.add_argument("--linear", action="append", default=[])
    ap.add_argument("--png")
    a = ap.parse_args()
    runs, metrics = a.runs.split(","), a.metrics.split(",")
    text = open(a.svg, encoding="utf-8").read()
    root = ET.fromstring(text)
    if root.tag != NS + "svg":
        fail("the root element is %s, not svg" % root.tag)
    for el in root.iter():
        tag = el.tag.replace(NS, "")
        if tag in ("script", "image", "foreignObject", "style", "use", "a", "iframe"):
            fail("a <%s> element: the picture must be self-contained" % tag)
        for k, v in el.attrib.items():
            if "href" in k or "url(" in v or k.startswith("on"):
                fail("attribute %s=%r on <%s>: nothing may be fetched or run" % (k, v, tag))
    series = {}
    for p in root.iter(NS + "path"):
        if p.get("class") != "series":
            continue
        key = (p.get("data-run"), p.get("data-metric"), p.get("data-phase"))
        if key in series:
            fail("two paths for %s" % (key,))
        if not re.match(r"^M[-\d.]+ [-\d.]+", p.get("d", "")):
            fail("the path of %s draws nothing: d=%r" % (key, p.get("d", "")[:40]))
        series[key] = p
    want = {(r, m, ph) for r in runs for m in metrics for ph in ("train", "test")}
    if set(series) != want:
        fail("series %s, expected one per run, metric and phase: %s" % (sorted(series), sorted(want)))
    texts = [t.text or "" for t in root.iter(NS + "text")]
    for m in metrics:
        panel = [g for g in root.iter(NS + "g") if g.get("class") == "panel" and g.get("data-metric") == m]
        if len(panel) != 1:
            fail("%d panels for %s" % (len(panel), m))
        names = [t.text or "" for t in panel[0].iter(NS + "text")]
        axis = [t for t in names if t == m or t == m + " (log scale)"]
        if not axis:
            fail("the %s panel's value axis is not named" % m)
        if m in a.log_scale and not axis[0].endswith("(log scale)"):
            fail("the %s panel should have a log scale" % m)
        if m in a.linear and axis[0].endswith("(log scale)"):
            fail("the %s panel should be linear" % m)
        if not any(t.startswith("step") for t in names):
            fail("the %s panel's step axis is not named" % m)
    legend = [g for g in root.iter(NS + "g") if g.get("class") == "legend"]
    if len(legend) != 1:
        fail("%d legends" % len(legend))
    names = {t.text for t in legend[0].iter(NS + "text")}
    for n in runs + ["train", "test"]:
        if n not in names:
            fail("the legend does not name %r (it has %s)" % (n, sorted(names)))
    summary = "%d series, %d panels, legend %s" % (len(series), len(metrics), ", ".join(runs))
    if a.png:
        w, h, rows = png_pixels(a.png)
        if (w, h) != (int(root.get("width")), int(root.get("height"))):
            fail("the screenshot is %dx%d, the picture %sx%s" % (w, h, root.get("width"), root.get("height")))
        ink = sum(1 for row in rows for px in row if px != (255, 255, 255))
        if ink < 0.02 * w * h:
            fail("the screenshot is blank: %d of %d pixels are not white" % (ink, w * h))
        for r in runs:
            colour = series[(r, metrics[0], "train")].get("stroke")
            c = tuple(int(colour[k:k + 2], 16) for k in (1, 3, 5))
            n = sum(1 for row in rows for px in row if max(abs(px[k] - c[k]) for k in range(3)) <= 24)
            # the test figures' dots (about 20 pixels each) alone must not pass for the lines
            dots = sum(1 for d in root.iter(NS + "circle") if d.get("fill") == colour)
            if n < 100 + 30 * dots:
                fail("run %s's colour %s is on %d pixels of the screenshot (its %d dots take about %d)" %
                     (r, colour, n, dots, 20 * dots))
            summary += "; %s: %d pixels of %s" % (r, n, colour)
        summary += "; %d of %d pixels drawn" % (ink, w * h)
    print("check_svg: ok: " + summary)


main()
