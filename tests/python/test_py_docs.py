"""docs/python.md's examples run: its ```sh and ```python blocks, in order, then README.md's
```python blocks (which use the programs python.md's first block compiled), from one scratch
directory that looks like the repository root after a build (the source tree's entries as
symlinks, `build` the build tree, build/tools on PATH; python blocks run with this python3 and
PYTHONPATH=build/python). An ```output block right after a block is what that block prints
(stdout and stderr), line by line; `…` (U+2026) in a line stands for any text within the line.
(```output, not ```text: tests/e2e/test_docs_commands.sh takes a ```text block after anything but
a ```sh block for quoted messages, and runs in builds without the package.)"""
import os
import re
import subprocess
import sys

from pyt_common import SRC, check, done, tmpdir

BUILD = os.path.dirname(os.path.dirname(os.environ["FLUIDC_FLC"]))
DOC = os.path.join(SRC, "docs", "python.md")


def blocks(path):
    """[(lang, text)] of the fenced blocks of a Markdown file."""
    out, lang, buf = [], None, []
    with open(path) as f:
        for line in f:
            m = re.match(r"^```(\w*)\s*$", line)
            if m and lang is None:
                lang, buf = m.group(1), []
            elif line.startswith("```") and lang is not None:
                out.append((lang, "".join(buf)))
                lang = None
            elif lang is not None:
                buf.append(line)
    return out


def matches(want, got):
    w = want.rstrip("\n").split("\n")
    g = got.rstrip("\n").split("\n")
    if len(w) != len(g):
        return False
    for a, b in zip(w, g):
        pat = "^" + ".*".join(re.escape(p) for p in a.split("\u2026")) + "$"
        if not re.match(pat, b):
            return False
    return True


scratch = tmpdir()
for e in os.listdir(SRC):
    if not e.startswith("build"):
        os.symlink(os.path.join(SRC, e), os.path.join(scratch, e))
os.symlink(BUILD, os.path.join(scratch, "build"))
env = dict(os.environ, PATH=os.path.join(BUILD, "tools") + os.pathsep + os.environ["PATH"],
           PYTHONPATH=os.path.join(BUILD, "python"))
bs = blocks(DOC) + [b for b in blocks(os.path.join(SRC, "README.md")) if b[0] == "python"]
ran = shown = 0
for i, (lang, text) in enumerate(bs):
    if lang not in ("sh", "python"):
        continue
    f = os.path.join(scratch, "block_%02d.%s" % (i, lang))
    with open(f, "w") as fh:
        fh.write(text)
    cmd = ["sh", f] if lang == "sh" else [sys.executable, f]
    r = subprocess.run(cmd, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    ran += 1
    first = text.strip().split("\n")[0]
    if i + 1 < len(bs) and bs[i + 1][0] == "output":
        shown += 1
        check(matches(bs[i + 1][1], r.stdout),
              "block %d (%s: %s) printed:\n%s\ninstead of:\n%s" % (i, lang, first, r.stdout, bs[i + 1][1]))
    else:
        check(r.returncode == 0, "block %d (%s: %s) failed (%d):\n%s" % (i, lang, first, r.returncode, r.stdout))
check(ran >= 7 and shown >= 5, "only %d blocks ran, %d with their output" % (ran, shown))
done("docs/python.md and README.md: %d blocks ran, %d printed their shown output" % (ran, shown))
