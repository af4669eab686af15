"""Helpers of the tests/python tests: compile .fl programs with flc, fail with a message."""
import os
import subprocess
import sys
import tempfile

import fluidc  # noqa: F401 (PYTHONPATH=build/python, set by CTest)

FLC = os.environ["FLUIDC_FLC"]
FLRUN = os.environ["FLUIDC_FLRUN"]
SRC = os.environ["FLUIDC_SOURCE_DIR"]

_failures = []


def tmpdir():
    return tempfile.mkdtemp(prefix="fluidc_py_")


def build(fl, out_dir):
    """flc build fl -o out_dir/<name>.flp; returns the .flp path."""
    out = os.path.join(out_dir, os.path.splitext(os.path.basename(fl))[0] + ".flp")
    r = subprocess.run([FLC, "build", fl, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("flc build %s failed: %s%s" % (fl, r.stdout, r.stderr))
    return out


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def check(cond, msg):
    """Records a failure (printed now, counted by done())."""
    if not cond:
        _failures.append(msg)
        print("FAIL: " + msg, flush=True)


def raises(fn, *want):
    """fn() must raise fluidc.Error whose message holds every string of want; returns it."""
    try:
        fn()
    except fluidc.Error as e:
        msg = str(e)
        for w in want:
            check(w in msg, "error %r lacks %r" % (msg, w))
        return msg
    check(False, "no fluidc.Error (expected one holding %r)" % (want,))
    return None


def done(summary):
    if _failures:
        print("%d failure(s)" % len(_failures))
        sys.exit(1)
    print(summary)
