/* driver_file.c: files a script opens (docs/driver.md, "Saving and serving" and "Fetched
 * values"). Writing, Fluid's
 *
 *     with open(os.path.join(dir, "main_program"), "wb") as f:
 *         f.write(program.desc.serialize_to_string())
 *
 * `program.desc` is a ProgramDesc record of the program; its serialize_to_string() gives a
 * ProgramBytes record (the program, to be written); the builtin open(file, mode) gives a File
 * record (a path known when the script compiles, mode 'w' or 'wb'), which `with` closes at its end
 * (fl_ev_file_guard); f.write(bytes) appends the driver's save_program op, which writes the
 * program when the driver gets there, as a bundle whose main program it is (fluidc's program
 * format stands for Fluid's ProgramDesc protobuf: flc show prints the file, flrun runs it),
 * replacing the file atomically. Python's open truncates the file at once; here the file is
 * written, whole, by the write.
 *
 * Reading, as Paddle's book label_semantic_roles loads its embedding:
 *
 *     with open(file_name, 'rb') as f:
 *         f.read(16)  # skip header.
 *         return np.fromfile(f, dtype=np.float32).reshape(h, w)
 *
 * open(file, 'rb') gives a File record whose position (`_pos`, bytes from the start) is known
 * when the script compiles: f.read(n) and f.seek(offset, whence) move it (the bytes read(n) gives
 * are read by no op: using them is a located error), f.tell() gives it, and numpy.fromfile(f,
 * dtype, count, offset=k) (driver_tensorfile.c) reads the values from position + k on with the
 * driver's read_file op, when the driver gets there, leaving the position after them (at the end
 * of the file with count -1, where only close() is left to do). A file shorter than the
 * position is an error of the read_file op, naming the file (Python's read(n) would return fewer
 * bytes and fromfile an empty array). Text mode ('r'), appending, reading a file's bytes whole
 * (read()) and writing anything but a program's serialize_to_string() are located errors: the
 * driver reads data through readers and numpy.fromfile.
 */
#include <string.h>

#include "lang/eval_impl.h"

#define FILE_TYPE "File"
#define DESC_TYPE "ProgramDesc"
#define BYTES_TYPE "ProgramBytes"
#define READ_TYPE "FileBytes"

bool fl_ev_is_file(const FlValue *v) { return fl_v_is_rec(v, FILE_TYPE); }

/* ------------------------------------------------------------------ program.desc */

static FlValue *d_serialize(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("serialize_to_string", "", 0);
    (void)v;
    FlValue *b = fl_v_record(c, BYTES_TYPE);
    fl_v_rec_set(c, b, "_program", fl_v_rec_get(self, "_program"));
    return b;
}

FlValue *fl_ev_program_bytes_program(const FlValue *v) {
    return fl_v_is_rec(v, BYTES_TYPE) ? fl_v_rec_get((FlValue *)v, "_program") : NULL;
}

FlValue *fl_ev_program_desc(Ctx *c, FlValue *prog) {
    FlValue *d = fl_v_record(c, DESC_TYPE);
    fl_v_rec_set(c, d, "_program", prog);
    fl_v_rec_set(c, d, "serialize_to_string", fl_v_builtin(c, "serialize_to_string", d_serialize, d));
    return d;
}

/* ------------------------------------------------------------------ open() */

static FlValue *f_write(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("write", "data", 1);
    FlSpan sp = a->span;
    const char *path = fl_v_rec_get(self, "_path")->str.s;
    if (fl_v_rec_get(self, "_closed")->b) return fl_ev_error(c, sp, "write() to '%s' after it was closed", path);
    if (fl_v_rec_get(self, "_written")->b)
        return fl_ev_error(c, sp, "a second write() to '%s': the driver writes a file whole, once per open()", path);
    if (!fl_v_is_rec(v[0], BYTES_TYPE))
        return fl_ev_error(c, sp, "write() to '%s' takes a program's desc.serialize_to_string() here, found %s: the "
                                  "driver writes programs, and reads and writes data through readers and fluid.io",
                           path, fl_v_type_name(v[0]));
    FlValue *prog = fl_v_rec_get(v[0], "_program");
    if (prog->prog == c->bundle->driver)
        return fl_ev_error(c, sp, "write() to '%s': the program is the driver itself (what runs the others)", path);
    const char *pname = fl_ev_program_name(c, prog->prog);
    if (!pname) return fl_ev_error(c, sp, "write() to '%s': the program is not one this script made", path);
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "save_program", sp);
    fl_ir_op_set_string(op, "program", pname);
    fl_ir_op_set_string(op, "path", path);
    bool ok = fl_ev_infer(c, c->b.block, op, sp);
    fl_ev_driver_leave(c, &s);
    fl_v_rec_set(c, self, "_written", fl_v_bool(c, true));
    return ok ? c->none : c->error;
}

/* _driver.write_dot(program, path): the driver's save_program op in format dot, which writes the
 * program's Graphviz DOT (flc dot's) to path when the driver gets there. */
FlValue *fl_ev_driver_write_dot(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("write_dot", "program path", 2);
    (void)self;
    FlSpan sp = a->span;
    if (v[0]->kind != VK_PROGRAM) return fl_ev_error(c, sp, "write_dot() takes a Program, found %s", fl_v_type_name(v[0]));
    if (v[1]->kind != VK_STR || !v[1]->str.n)
        return fl_ev_error(c, sp, "write_dot() takes a file name, found %s", fl_v_type_name(v[1]));
    const char *pname = fl_ev_program_name(c, v[0]->prog);
    if (!pname || v[0]->prog == c->bundle->driver)
        return fl_ev_error(c, sp, "write_dot(): the program is not one this script made");
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "save_program", sp);
    fl_ir_op_set_string(op, "program", pname);
    fl_ir_op_set_string(op, "path", v[1]->str.s);
    fl_ir_op_set_string(op, "format", "dot");
    bool ok = fl_ev_infer(c, c->b.block, op, sp);
    fl_ev_driver_leave(c, &s);
    return ok ? c->none : c->error;
}

static FlValue *f_close(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("close", "", 0);
    (void)v;
    fl_v_rec_set(c, self, "_closed", fl_v_bool(c, true));
    return c->none;
}

/* ------------------------------------------------------------------ reading */

/* Whether f is open for reading; else reported, naming what (the call). */
static bool want_reading(Ctx *c, FlValue *f, const char *what, FlSpan sp) {
    const char *path = fl_v_rec_get(f, "_path")->str.s;
    if (!fl_v_rec_get(f, "_reading")->b) {
        fl_ev_error(c, sp, "%s of '%s', which is open for writing ('%s')", what, path, fl_v_rec_get(f, "mode")->str.s);
        return false;
    }
    if (fl_v_rec_get(f, "_closed")->b) {
        fl_ev_error(c, sp, "%s of '%s' after it was closed", what, path);
        return false;
    }
    if (fl_v_rec_get(f, "_pos")->i < 0) {
        fl_ev_error(c, sp, "%s of '%s' after numpy.fromfile read the rest of it (count=-1): nothing is left", what,
                    path);
        return false;
    }
    return true;
}

bool fl_ev_file_read_at(Ctx *c, FlValue *f, const char *what, FlSpan sp, const char **path, int64_t *pos) {
    if (!want_reading(c, f, what, sp)) return false;
    *path = fl_v_rec_get(f, "_path")->str.s;
    *pos = fl_v_rec_get(f, "_pos")->i;
    return true;
}

void fl_ev_file_moved(Ctx *c, FlValue *f, int64_t pos) { fl_v_rec_set(c, f, "_pos", fl_v_int(c, pos < 0 ? -1 : pos)); }

/* f.read(size): skips size bytes (a compile-time int >= 0); what it gives is a FileBytes record
 * no op reads. */
static FlValue *f_read(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("read", "size=", 1);
    const char *path;
    int64_t pos, n;
    if (!fl_ev_file_read_at(c, self, "read()", a->span, &path, &pos)) return c->error;
    if (!v[0] || v[0]->kind == VK_NONE || (v[0]->kind == VK_INT && v[0]->i < 0))
        return fl_ev_error(c, a->span, "read() of '%s' whole is not compiled: read(n) skips n bytes, and "
                                       "numpy.fromfile(f, dtype) reads the values after them when the driver runs",
                           path);
    if (!fl_ev_want_int(c, v[0], "read(size)", a->span, &n)) return c->error;
    fl_ev_file_moved(c, self, pos + n);
    FlValue *b = fl_v_record(c, READ_TYPE);
    fl_v_rec_set(c, b, "_path", fl_v_rec_get(self, "_path"));
    return b;
}

/* f.seek(offset, whence=0): the position, from the start (0) or from where it is (1); from the
 * end (2) is refused: the file's size is known only when the driver runs. Gives the position. */
static FlValue *f_seek(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("seek", "offset whence=", 2);
    const char *path = fl_v_rec_get(self, "_path")->str.s;
    int64_t off, whence = 0, pos = 0;
    if (!fl_ev_want_int(c, v[0], "seek(offset)", a->span, &off)) return c->error;
    if (v[1] && !fl_ev_want_int(c, v[1], "seek(whence)", a->span, &whence)) return c->error;
    if (whence != 0 && whence != 1)
        return fl_ev_error(c, a->span, "seek(offset, %lld) of '%s': only from the start (0) or from the position "
                                       "(1): the file's size is known when the driver runs", (long long)whence, path);
    if (whence == 0) fl_ev_file_moved(c, self, 0); /* from the start: where an earlier read ended is no matter */
    if (!fl_ev_file_read_at(c, self, "seek()", a->span, &path, &pos)) return c->error;
    if (pos + off < 0)
        return fl_ev_error(c, a->span, "seek() of '%s' to %lld, before its start", path, (long long)(pos + off));
    fl_ev_file_moved(c, self, pos + off);
    return fl_v_int(c, pos + off);
}

static FlValue *f_tell(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("tell", "", 0);
    (void)v;
    const char *path;
    int64_t pos;
    if (!fl_ev_file_read_at(c, self, "tell()", a->span, &path, &pos)) return c->error;
    return fl_v_int(c, pos);
}

/* ------------------------------------------------------------------ open() */

/* open(file, mode='r'): a File record to write a program to ('w', 'wb') or to read values from
 * ('rb'); other modes are refused. */
static FlValue *b_open(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("open", "file mode=", 2);
    (void)self;
    FlSpan sp = a->span;
    if (v[0]->kind != VK_STR)
        return fl_ev_error(c, sp, "open(file) takes a path known when the script compiles (a str), found %s",
                           fl_v_type_name(v[0]));
    const char *mode = v[1] ? (v[1]->kind == VK_STR ? v[1]->str.s : NULL) : "r";
    if (!mode) return fl_ev_error(c, sp, "open(mode=...) takes a str, found %s", fl_v_type_name(v[1]));
    bool reading = strcmp(mode, "rb") == 0;
    if (!reading && strcmp(mode, "w") != 0 && strcmp(mode, "wb") != 0)
        return fl_ev_error(c, sp, "open('%s', '%s'): a script opens a file to write a program to it ('w' or 'wb': "
                                  "f.write(program.desc.serialize_to_string())) or to read values from it ('rb': "
                                  "numpy.fromfile(f, dtype)); other data is read through readers (paddle.dataset, "
                                  "fluid.io.csv) and fluid.io's load functions",
                           v[0]->str.s, mode);
    if (!v[0]->str.s[0]) return fl_ev_error(c, sp, "open(''): the path is empty");
    FlValue *f = fl_v_record(c, FILE_TYPE);
    fl_v_rec_set(c, f, "_path", v[0]);
    fl_v_rec_set(c, f, "_closed", fl_v_bool(c, false));
    fl_v_rec_set(c, f, "_written", fl_v_bool(c, false));
    fl_v_rec_set(c, f, "_reading", fl_v_bool(c, reading));
    fl_v_rec_set(c, f, "_pos", fl_v_int(c, 0));
    fl_v_rec_set(c, f, "name", v[0]);
    fl_v_rec_set(c, f, "mode", fl_v_cstr(c, mode));
    if (reading) {
        fl_v_rec_set(c, f, "read", fl_v_builtin(c, "read", f_read, f));
        fl_v_rec_set(c, f, "seek", fl_v_builtin(c, "seek", f_seek, f));
        fl_v_rec_set(c, f, "tell", fl_v_builtin(c, "tell", f_tell, f));
    } else {
        fl_v_rec_set(c, f, "write", fl_v_builtin(c, "write", f_write, f));
    }
    fl_v_rec_set(c, f, "close", fl_v_builtin(c, "close", f_close, f));
    return f;
}

/* `with open(...) as f:`: a guard whose entering gives f and whose leaving closes it. */
static FlValue *g_enter(Ctx *c, FlValue *self, CallArgs *a) {
    (void)a;
    (void)c;
    return self;
}

FlValue *fl_ev_file_guard(Ctx *c, FlValue *f) {
    FlValue *g = fl_v_new(c, VK_GUARD);
    g->guard.kind = GK_CALLS;
    g->guard.a = fl_v_builtin(c, "__enter__", g_enter, f);
    g->guard.b = fl_v_rec_get(f, "close");
    return g;
}

void fl_ev_driver_file_install(Ctx *c) {
    fl_env_set(c->builtins, fl_intern_str(&c->in, "open"), fl_v_builtin(c, "open", b_open, NULL));
}
