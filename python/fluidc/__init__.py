"""fluidc: run compiled fluidc programs (.flp) from Python, from many threads at once.

Pure Python over the C embedding API (runtime/api.h) through ctypes and libfluidc_py.so, which
sits beside this file; numpy arrays in and out. See docs/python.md.

    import numpy as np
    import fluidc

    prog = fluidc.load("model.flp")          # flc build model.fl -o model.flp
    exe = fluidc.Executor(prog, seed=0)       # runs the startup program: parameters initialised
    loss, = exe.run(feed={"x": xs, "y": ys}, fetch_list=["mean_0.tmp_0"])   # a training step
    pred, = exe.predict(feed={"x": xs}, fetch_list=["elementwise_add_0.tmp_0"])  # no update

Threads: ctypes releases the GIL during each call into the library, so run() and predict() of
one Executor from many Python threads run at the same time, each with its own feeds and
fetches, sharing the parameters (runtime/api.h's rules: a reader sees whole parameter tensors;
concurrent training steps update them last-writer-wins). close() waits for the calls in flight
on the Executor to return, then frees it; later calls raise fluidc.Error. An Executor holds its
Program (so does the library: the C program lives while an executor runs it).
"""

import ctypes
import os
import threading
import numpy as np

__all__ = ["Error", "Program", "Executor", "load"]

_ABI_VERSION = 4
_ERRLEN = 4096

# FlDType codes (compiler/ir/dtype.h) <-> numpy dtypes.
_DTYPES = {
    0: np.dtype(np.float32),
    1: np.dtype(np.float64),
    2: np.dtype(np.int32),
    3: np.dtype(np.int64),
    4: np.dtype(np.bool_),
    5: np.dtype(np.float16),
    6: np.dtype(np.int8),
    7: np.dtype(np.uint8),
}
_CODES = {dt: code for code, dt in _DTYPES.items()}
_MAX_DIMS = 8
_META = 12                 # int64 per fetch in flpy_executor_run_into's meta (fluidc_shim.c)
_SMALL_FEED = 16384        # feeds up to this many bytes are passed as bytes (cheaper than .ctypes)
_SCRATCH = 65536           # initial bytes of a thread's buffer for fetched tensors


class Error(Exception):
    """An error of the fluidc runtime: the message names what failed (a feed, an op and its .fl
    line, a file)."""


class _Feed(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("data", ctypes.c_char_p),  # a pointer (an int address, or a bytes object's buffer)
    ]


def _load_library():
    path = os.environ.get("FLUIDC_PY_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "libfluidc_py.so")
    try:
        lib = ctypes.CDLL(path)  # CDLL, not PyDLL: every call releases the GIL
    except OSError as e:
        raise ImportError("fluidc: cannot load %s: %s" % (path, e)) from None
    P, C, S, I = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
    sigs = {
        "flpy_abi_version": (I, []),
        "flpy_program_load": (P, [C, C, S]),
        "flpy_program_free": (None, [P]),
        "flpy_program_model_names": (ctypes.c_long, [P, I, C, S]),
        "flpy_executor_new": (P, [P, ctypes.c_uint64, C, S]),
        "flpy_executor_free": (None, [P]),
        "flpy_executor_run_startup": (I, [P, C, S]),
        "flpy_executor_run": (I, [P, I, ctypes.POINTER(_Feed), S, ctypes.POINTER(C), S,
                                  ctypes.POINTER(P), C, S]),
        "flpy_executor_run_into": (I, [P, I, ctypes.POINTER(_Feed), S, ctypes.POINTER(C), S,
                                       ctypes.POINTER(P), P, P, S, C, S]),
        "flpy_executor_get": (I, [P, C, ctypes.POINTER(P), C, S]),
        "flpy_executor_set": (I, [P, ctypes.POINTER(_Feed), C, S]),
        "flpy_executor_save": (I, [P, C, C, S]),
        "flpy_executor_load": (I, [P, C, C, S]),
        "flpy_tensor_dtype": (I, [P]),
        "flpy_tensor_ndim": (I, [P]),
        "flpy_tensor_shape": (None, [P, ctypes.POINTER(ctypes.c_int64)]),
        "flpy_tensor_has_data": (I, [P]),
        "flpy_tensor_nbytes": (S, [P]),
        "flpy_tensor_copy_out": (I, [P, P, S, C, S]),
        "flpy_tensor_free": (None, [P]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    v = lib.flpy_abi_version()
    if v != _ABI_VERSION:
        raise ImportError("fluidc: %s has ABI version %d, this package needs %d"
                          % (path, v, _ABI_VERSION))
    return lib


_lib = _load_library()


def _errbuf():
    return ctypes.create_string_buffer(_ERRLEN)


def _raise(buf):
    raise Error(buf.value.decode("utf-8", "replace"))


def _path(p, what):
    try:
        b = os.fsencode(p)
    except TypeError:
        raise Error("%s: a path must be a str, bytes or os.PathLike, not %s"
                    % (what, type(p).__name__)) from None
    if b"\0" in b:  # C would cut it there: another path
        raise Error("%s: the path %r holds a NUL byte" % (what, p))
    return b


def _name(n, what):
    if isinstance(n, bytes):
        b = n
    elif isinstance(n, str):
        b = n.encode("utf-8")
    else:
        raise Error("%s: a var name must be a str, not %s" % (what, type(n).__name__))
    if b"\0" in b:  # C would cut it there: another name
        raise Error("%s: the var name %r holds a NUL byte" % (what, n))
    return b


def _as_feed(name, value, keep):
    """Fills a _Feed for value (converted with np.asarray; C-contiguous); keep holds the objects
    the struct points into until the call returns."""
    bname = _name(name, "feed")
    arr = np.ascontiguousarray(value)
    code = _CODES.get(arr.dtype)
    if code is None:
        raise Error("feed '%s': numpy dtype %s is not one of float32, float64, int32, int64, "
                    "bool, float16, int8, uint8" % (bname.decode("utf-8", "replace"), arr.dtype))
    if arr.ndim > _MAX_DIMS:
        raise Error("feed '%s': %d dimensions (at most %d)"
                    % (bname.decode("utf-8", "replace"), arr.ndim, _MAX_DIMS))
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    keep.extend((bname, arr, shape))
    return _Feed(bname, code, arr.ndim, shape, arr.ctypes.data)


def _take(handle):
    """A numpy array holding a copy of the tensor handle's elements; frees the handle."""
    try:
        t = ctypes.c_void_p(handle)
        dtype = _DTYPES.get(_lib.flpy_tensor_dtype(t))
        if dtype is None:
            raise Error("fetch: a tensor of unknown dtype code %d" % _lib.flpy_tensor_dtype(t))
        ndim = _lib.flpy_tensor_ndim(t)
        shape = (ctypes.c_int64 * max(ndim, 1))()
        _lib.flpy_tensor_shape(t, shape)
        out = np.empty(tuple(shape[:ndim]), dtype=dtype)
        if not _lib.flpy_tensor_has_data(t):
            raise Error("fetch: the var holds no data")
        buf = _errbuf()
        if _lib.flpy_tensor_copy_out(t, out.ctypes.data, out.nbytes, buf, _ERRLEN):
            _raise(buf)
        return out
    finally:
        _lib.flpy_tensor_free(ctypes.c_void_p(handle))


class _Prepared:
    """The ctypes arguments of run/predict calls with one set of feed and fetch names, made once
    per thread (their fields are filled per call, so a thread never shares one)."""

    def __init__(self, feed_names, fetch_names):
        self.feed_names = feed_names
        self.nfeed = len(feed_names)
        self.nfetch = len(fetch_names)
        names = [_name(n, "feed") for n in feed_names]
        self.shapes = [(ctypes.c_int64 * _MAX_DIMS)() for _ in names]
        self.feeds = (_Feed * max(self.nfeed, 1))()
        for i, bname in enumerate(names):
            f = self.feeds[i]
            f.name = bname
            f.shape = self.shapes[i]
        fetch = [_name(n, "fetch") for n in fetch_names]
        self.cnames = (ctypes.c_char_p * max(self.nfetch, 1))(*fetch)
        self.out = (ctypes.c_void_p * max(self.nfetch, 1))()
        self.meta = (ctypes.c_int64 * (self.nfetch * _META + 1))()
        self.meta_addr = ctypes.addressof(self.meta)
        self.feed_kinds = [None] * self.nfeed  # (dtype, shape) of each feed in the last call
        self.views = [None] * self.nfetch      # (meta, scratch, view) of each fetch's last place


class _ThreadState(threading.local):
    """Per thread: an error buffer, a scratch buffer that the runtime copies fetches into, and
    the prepared calls of this thread."""

    def __init__(self):
        self.err = _errbuf()
        self.calls = {}
        self.grow(_SCRATCH)

    def grow(self, nbytes):
        if getattr(self, "scratch", None) is None or nbytes > self.scratch.nbytes:
            self.scratch = np.empty(max(nbytes, _SCRATCH), np.uint8)
            self.scratch_addr = self.scratch.ctypes.data


_tls = _ThreadState()


def _thread_state():
    return _tls


class Program:
    """A loaded .flp bundle (flc build model.fl -o model.flp): its startup and main programs; or
    an inference model (a directory fluid.io.save_inference_model wrote, or its model file),
    whose feed_names and fetch_names say what to feed and fetch (None for other programs) and
    whose saved parameters an Executor starts with."""

    def __init__(self, path):
        buf = _errbuf()
        self.path = path
        self._h = None
        h = _lib.flpy_program_load(_path(path, "fluidc.load"), buf, _ERRLEN)
        if not h:
            _raise(buf)
        self._h = h
        self.feed_names = self._model_names(0)
        self.fetch_names = self._model_names(1)

    def _model_names(self, targets):
        n = _lib.flpy_program_model_names(self._h, targets, None, 0)
        if n < 0:
            return None
        buf = ctypes.create_string_buffer(max(n, 1))
        _lib.flpy_program_model_names(self._h, targets, buf, n)
        return [b.decode("utf-8", "replace") for b in buf.raw[:n].split(b"\0")[:-1]]

    def __del__(self):
        # Drops the Program's reference to the C program; executors made from it hold their own
        # (flpy_executor_new), so it is freed when the last of them is.
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.flpy_program_free(h)

    def __repr__(self):
        return "fluidc.Program(%r)" % (self.path,)


def load(path):
    """Loads a compiled program (.flp) or an inference model directory (save_inference_model's:
    its __model__ and parameters). Raises fluidc.Error (I/O, not a .flp, corrupt, a directory
    without a model, a parameter missing or of another shape)."""
    return Program(path)


class _InFlight:
    """The calls running on an Executor's handle: close() waits for them before it frees it,
    and refuses new ones from then on (a call that read the handle before close() freed it would
    use freed memory)."""

    def __init__(self, handle):
        self.handle = handle
        self.busy = 0
        self.cond = threading.Condition(threading.Lock())

    def enter(self):
        with self.cond:
            if not self.handle:
                raise Error("fluidc.Executor: used after close()")
            self.busy += 1
            return self.handle

    def leave(self):
        with self.cond:
            self.busy -= 1
            if not self.busy:
                self.cond.notify_all()

    def close(self):
        """The handle, once no call uses it (None when closed already)."""
        with self.cond:
            h, self.handle = self.handle, None
            while self.busy:
                self.cond.wait()
        return h


class Executor:
    """The program's startup and main programs, prepared once, and a scope holding its
    parameters. Construction runs the startup program (pass startup=False to skip it, e.g.
    before load()). run() and predict() may be called from any number of threads at once;
    close() waits for them."""

    def __init__(self, program, seed=0, startup=True):
        if not isinstance(program, Program):
            raise Error("fluidc.Executor: expected a fluidc.Program (fluidc.load), not %s"
                        % type(program).__name__)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 64:
            raise Error("fluidc.Executor: seed must be an int in [0, 2**64), not %r" % (seed,))
        self._program = program
        buf = _errbuf()
        h = _lib.flpy_executor_new(program._h, seed, buf, _ERRLEN)
        if not h:
            _raise(buf)
        self._calls = _InFlight(h)
        if startup:
            self.run_startup()

    @property
    def program(self):
        """The Program this Executor runs (read-only: the Executor holds it)."""
        return self._program

    def _lib_call(self, fn, *args):
        """fn(handle, *args), the handle kept from close() until fn returns."""
        calls = self._calls
        h = calls.enter()
        try:
            return fn(h, *args)
        finally:
            calls.leave()

    def run_startup(self):
        """Runs the startup program: creates and initialises the parameters (again, if they
        exist: a re-initialisation)."""
        buf = _errbuf()
        if self._lib_call(_lib.flpy_executor_run_startup, buf, _ERRLEN):
            _raise(buf)

    def _call(self, predict, feed, fetch_list):
        feed = {} if feed is None else feed
        fetch_list = [] if fetch_list is None else fetch_list
        if not hasattr(feed, "items"):
            raise Error("feed must be a dict of var name -> array, not %s" % type(feed).__name__)
        if isinstance(fetch_list, (str, bytes)):
            fetch_list = [fetch_list]
        t = _thread_state()
        try:
            key = (tuple(feed), tuple(fetch_list))
            p = t.calls.get(key)
        except TypeError:  # an unhashable fetch name: _name says what is wrong with it
            for n in fetch_list:
                _name(n, "fetch")
            raise
        if p is None:
            p = _Prepared(key[0], key[1])
            if len(t.calls) >= 64:
                t.calls.clear()
            t.calls[key] = p
        keep = []
        fs, shapes, last = p.feeds, p.shapes, p.feed_kinds
        for i, value in enumerate(feed.values()):
            arr = value if type(value) is np.ndarray else np.asarray(value)
            if not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)
            f = fs[i]
            kind = (arr.dtype, arr.shape)
            if kind != last[i]:  # dtype and shape as in the last call: the struct holds them
                code = _CODES.get(arr.dtype)
                if code is None or arr.ndim > _MAX_DIMS:
                    _as_feed(p.feed_names[i], arr, keep)  # raises the error
                f.dtype = code
                f.ndim = arr.ndim
                sh = shapes[i]
                for j, d in enumerate(arr.shape):
                    sh[j] = d
                last[i] = kind
            if arr.nbytes <= _SMALL_FEED:
                f.data = arr.tobytes()  # kept by the struct until the next call
            else:
                f.data = arr.ctypes.data
                keep.append(arr)
        n = p.nfetch
        sc = t.scratch
        calls = self._calls  # _lib_call, inline: this is the fast path
        h = calls.enter()
        try:
            rc = _lib.flpy_executor_run_into(h, 1 if predict else 0, fs, p.nfeed, p.cnames, n,
                                             p.out, p.meta_addr, t.scratch_addr, sc.nbytes, t.err,
                                             _ERRLEN)
        finally:
            calls.leave()
        if rc < 0:
            _raise(t.err)
        m = p.meta
        if rc == 0:
            results = []
            views = p.views
            for i in range(n):
                b = i * _META
                mi = m[b:b + _META]
                v = views[i]
                if v is None or v[0] != mi or v[1] is not sc:
                    # a view of the fetch's place in the scratch buffer, made again when its
                    # dtype, shape or place changes
                    v = views[i] = (mi, sc, np.ndarray(tuple(mi[4:4 + mi[1]]), _DTYPES[mi[0]],
                                                       sc, mi[2]))
                results.append(v[2].copy())
            return results
        # the fetches did not fit in the thread's scratch buffer: take them one by one, and grow it
        t.grow(m[n * _META])
        out = p.out
        results = []
        try:
            for i in range(n):
                h, out[i] = out[i], None
                results.append(_take(h))
        finally:
            for i in range(n):
                if out[i]:
                    _lib.flpy_tensor_free(out[i])
                    out[i] = None
        return results

    def run(self, feed=None, fetch_list=None):
        """Runs the main program once (a training program: one step, forward, backward and
        optimizer) with feed (dict: data var name -> numpy array) and returns the fetched vars
        (list of names: outputs, losses, parameters) as a list of numpy arrays."""
        return self._call(False, feed, fetch_list)

    def predict(self, feed=None, fetch_list=None):
        """Like run(), but runs only the ops the fetches depend on and never changes the
        parameters (no labels needed, no optimizer step; dropout and batch_norm in test mode)."""
        return self._call(True, feed, fetch_list)

    def get(self, name):
        """A copy of the current value of scope var `name` (a parameter), as a numpy array."""
        buf = _errbuf()
        h = ctypes.c_void_p()
        if self._lib_call(_lib.flpy_executor_get, _name(name, "get"), ctypes.byref(h), buf,
                          _ERRLEN):
            _raise(buf)
        return _take(h.value)

    def set(self, name, value):
        """Replaces scope var `name` (a parameter, or another var of the program) with a copy of
        value, whole. A name the program does not have is an error."""
        keep = []
        f = _as_feed(name, value, keep)
        buf = _errbuf()
        if self._lib_call(_lib.flpy_executor_set, ctypes.byref(f), buf, _ERRLEN):
            _raise(buf)

    def save(self, dirname):
        """Saves the persistable vars (parameters, optimizer state) into directory dirname, in
        flrun --save's format (flrun --load reads it; runtime/params.h)."""
        buf = _errbuf()
        if self._lib_call(_lib.flpy_executor_save, _path(dirname, "save"), buf, _ERRLEN):
            _raise(buf)

    def load(self, dirname):
        """Loads the persistable vars from a checkpoint directory (flrun --save's or save()'s);
        every var is checked before any is set."""
        buf = _errbuf()
        if self._lib_call(_lib.flpy_executor_load, _path(dirname, "load"), buf, _ERRLEN):
            _raise(buf)

    def close(self):
        """Frees the executor and its scope, once the calls on it that are running (from other
        threads) have returned; calls made after close() raise fluidc.Error."""
        calls = getattr(self, "_calls", None)  # None: __init__ failed before the handle
        h = calls.close() if calls else None
        if h:
            _lib.flpy_executor_free(h)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
