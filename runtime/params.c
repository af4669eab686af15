/* params.c: the --save / --load directory format (see params.h). */
#define _GNU_SOURCE
#include "runtime/params.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "runtime/lodstream.h"

#define MAGIC "FLTENSOR"

typedef FL_VEC(const FlVarDesc *) VarList;

/* Persistable dense vars of the main program's global block, in declaration order. */
static void persistables(const FlLoadedProgram *p, VarList *out) {
    const FlBlock *b = fl_ir_block(fl_program_bundle(p)->main, 0);
    for (size_t i = 0; i < b->vars.len; i++)
        if (b->vars.data[i]->persistable && b->vars.data[i]->kind == FL_VAR_DENSE) FL_VEC_PUSH(out, b->vars.data[i]);
}

#define FORMAT_WORDS "fluidc checkpoint "
#define FORMAT_SPLIT 2    /* a file per var (and shards) */
#define FORMAT_COMBINED 3 /* every var in one file that MANIFEST names: fl_params_write_combined */
#define FORMAT_FLUID 4    /* format 2 with the whole vars in Fluid's stream format */
#define FORMAT_FLUID_COMBINED 5 /* format 3 in Fluid's stream format, the file's vars sorted by name */
#define FORMAT_VERSION FORMAT_FLUID_COMBINED /* the newest this code reads */
/* A shard's file name: the escaped var name, this, "FIRST-END". An escaped name never holds it
 * (its '%' are followed by two hex digits), so no var's file is another's shard. */
#define SHARD_MARK "%shard-"

/* A v1 checkpoint's file name was the var name itself. */
static bool safe_name(const char *n) {
    return n[0] && n[0] != '.' && !strchr(n, '/');
}

static bool reserved(const char *n) { return !strcasecmp(n, "MANIFEST") || !strcasecmp(n, "FORMAT"); }

/* A v2 file name: the var name with '%', '/', control bytes, a leading '.' and the first byte of
 * a reserved name (MANIFEST, FORMAT, in any case) written as %XX. The mapping is one to one and
 * never gives a reserved name, "." or "..". */
static void escape_name(const char *n, FlBuf *out) {
    bool res = reserved(n);
    for (size_t i = 0; n[i]; i++) {
        unsigned char c = (unsigned char)n[i];
        if (c == '%' || c == '/' || c < 0x20 || c == 0x7f || (i == 0 && (c == '.' || res)))
            fl_buf_printf(out, "%%%02X", c);
        else
            fl_buf_putc(out, (char)c);
    }
}

void fl_params_remove(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    FlBuf path = {0};
    while ((ent = readdir(d))) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", dir, ent->d_name);
        remove(fl_buf_str(&path));
    }
    closedir(d);
    rmdir(dir);
    fl_buf_free(&path);
}

/* Test hook, for tests/e2e/test_train.c only: FLUIDC_TEST_DIE_AT=<point> kills the process with
 * SIGKILL at that point of a save, to show what a crash there leaves. Points: "save-written"
 * (the new checkpoint complete beside DIR, not switched in yet) and "save-switch" (switched in,
 * the old one not removed yet). */
static void test_die_at(const char *point) {
    const char *v = getenv("FLUIDC_TEST_DIE_AT");
    if (v && !strcmp(v, point)) raise(SIGKILL);
}

/* Whether the regular file at path is an inference model's program (a bundle with an inference
 * spec: fluid.io.save_inference_model's __model__), which a save may replace with its checkpoint. */
static bool is_model_file(const char *path) {
    /* a .flp starts with its FlFile's magic field (1, length 6, "fluidc"): other files are not
     * read whole */
    static const char head[8] = {0x0a, 0x06, 'f', 'l', 'u', 'i', 'd', 'c'};
    char got[8] = {0};
    FlErr e0;
    FILE *f = fl_open_regular(path, &e0);
    bool flp = f && fread(got, 1, 8, f) == 8 && !memcmp(got, head, 8);
    if (f) fclose(f);
    if (!flp) return false;
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    FlErr e;
    bool model = fl_ir_read(path, &b, &p, &e) == FL_OK && b && b->inference;
    fl_ir_bundle_free(b);
    fl_ir_plan_free(p);
    return model;
}

/* Is dir an earlier checkpoint: a MANIFEST whose every entry is a saved tensor file, and no
 * other files (but FORMAT, and inference models' programs)? If not, *why says what is there
 * instead. */
static bool is_checkpoint(const char *dir, FlBuf *why) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/MANIFEST", dir);
    size_t len;
    FlErr e2;
    struct stat sb;
    bool there = lstat(fl_buf_str(&path), &sb) == 0;
    char *m = there ? fl_read_regular_file(fl_buf_str(&path), &len, &e2) : NULL;
    bool ok = m != NULL;
    if (!there) fl_buf_printf(why, "it has no MANIFEST");
    else if (!m && stat(fl_buf_str(&path), &sb) == 0 && !S_ISREG(sb.st_mode))
        fl_buf_printf(why, "its MANIFEST is not a regular file");
    else if (!m)
        fl_buf_printf(why, "%s", e2.msg);
    DIR *d = ok ? opendir(dir) : NULL;
    struct dirent *ent;
    while (ok && d && (ent = readdir(d))) {
        const char *n = ent->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "MANIFEST")) continue;
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", dir, n);
        if (!strcmp(n, "FORMAT")) { /* ours only when it is a file (nothing reads it here) */
            if (lstat(fl_buf_str(&path), &sb) != 0 || !S_ISREG(sb.st_mode)) {
                fl_buf_printf(why, "its FORMAT is not a regular file");
                ok = false;
            }
            continue;
        }
        bool listed = false;
        size_t k = strlen(n);
        for (const char *l = m; l < m + len && !listed;) {
            const char *nl = memchr(l, '\n', (size_t)(m + len - l));
            size_t ll = nl ? (size_t)(nl - l) : (size_t)(m + len - l);
            listed = ll == k && !memcmp(l, n, k);
            l += ll + 1;
        }
        char magic[8] = {0};
        bool regular = stat(fl_buf_str(&path), &sb) == 0 && S_ISREG(sb.st_mode);
        if (!listed && regular && is_model_file(fl_buf_str(&path))) continue; /* an inference model's */
        FILE *f = listed && regular ? fl_open_regular(fl_buf_str(&path), &e2) : NULL;
        bool tensor = f && fread(magic, 1, 8, f) == 8 && (!memcmp(magic, MAGIC, 8) || !memcmp(magic, "\0\0\0\0", 4));
        if (f) fclose(f);
        if (!tensor) {
            fl_buf_printf(why, "it holds '%s', which is not %s", n,
                          !listed ? "in its MANIFEST" : regular ? "a saved tensor" : "a regular file");
            ok = false;
        }
    }
    if (d) closedir(d);
    free(m);
    fl_buf_free(&path);
    return ok;
}

/* The directory a save writes: dir without trailing slashes, its symlinks resolved when it
 * exists; checked to be a new path in a writable directory or an earlier checkpoint. */
static char *save_path(const char *dir, FlErr *err) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (n == 0 || (n == 1 && dir[0] == '/')) {
        fl_err(err, "--save: '%s' cannot be a checkpoint directory", dir);
        return NULL;
    }
    char *p = fl_xmalloc(n + 1);
    memcpy(p, dir, n);
    p[n] = 0;
    struct stat sb;
    if (lstat(p, &sb) == 0) {
        char *real = realpath(p, NULL);
        FlBuf why = {0};
        bool ok = real && stat(real, &sb) == 0 && S_ISDIR(sb.st_mode) && is_checkpoint(real, &why);
        if (!ok) {
            if (real && S_ISDIR(sb.st_mode))
                fl_err(err, "--save: '%s' is a directory but not a checkpoint (%s); refusing to replace it: "
                            "name a new path or an earlier checkpoint", dir, fl_buf_str(&why));
            else
                fl_err(err, "--save: '%s' exists and is not a checkpoint directory; refusing to replace it: "
                            "name a new path or an earlier checkpoint", dir);
            free(real);
            free(p);
            fl_buf_free(&why);
            return NULL;
        }
        fl_buf_free(&why);
        free(p);
        p = real;
    } else if (errno != ENOENT) {
        fl_err(err, "--save: cannot use '%s': %s", dir, strerror(errno));
        free(p);
        return NULL;
    }
    /* the new checkpoint is written beside it: try that now */
    FlBuf probe = {0};
    fl_buf_printf(&probe, "%s.tmp.%d", p, (int)getpid());
    fl_params_remove(fl_buf_str(&probe));
    if (mkdir(fl_buf_str(&probe), 0777) != 0) {
        fl_err(err, "--save: cannot create '%s': %s", fl_buf_str(&probe), strerror(errno));
        fl_buf_free(&probe);
        free(p);
        return NULL;
    }
    rmdir(fl_buf_str(&probe));
    fl_buf_free(&probe);
    return p;
}

FlStatus fl_params_check_target(const char *dir, FlErr *err) {
    char *p = save_path(dir, err);
    free(p);
    return p ? FL_OK : FL_ERROR;
}

/* Puts the complete directory tmp in place of dir in one step: rename(2) when dir is new,
 * renameat2(RENAME_EXCHANGE) when it is an earlier checkpoint (which then sits at tmp and is
 * removed). A filesystem without RENAME_EXCHANGE gets two renames, the old one aside first. */
static FlStatus switch_in(const char *tmp, const char *dir, FlErr *err) {
    struct stat sb;
    if (lstat(dir, &sb) != 0) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) == 0 ||
            ((errno == EINVAL || errno == ENOSYS) && rename(tmp, dir) == 0))
            return FL_OK;
        return fl_err(err, "--save: cannot create '%s': %s", dir, strerror(errno));
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        test_die_at("save-switch");
        fl_params_remove(tmp);
        return FL_OK;
    }
    if (errno != EINVAL && errno != ENOSYS) return fl_err(err, "--save: cannot replace '%s': %s", dir, strerror(errno));
    FlBuf old = {0};
    fl_buf_printf(&old, "%s.old.%d", dir, (int)getpid());
    FlStatus st = FL_OK;
    if (rename(dir, fl_buf_str(&old)) != 0) {
        st = fl_err(err, "--save: cannot replace '%s': %s", dir, strerror(errno));
    } else if (rename(tmp, dir) != 0) {
        st = fl_err(err, "--save: cannot create '%s': %s", dir, strerror(errno));
        (void)rename(fl_buf_str(&old), dir);
    } else {
        fl_params_remove(fl_buf_str(&old));
    }
    fl_buf_free(&old);
    return st;
}

/* The header of a tensor file: version 1 (the var whole) or 2 (a shard: rows [row0, row0 + rows)
 * of the var, whose whole shape is ne). */
static void put_header(FlBuf *file, const FlTensor *t, int64_t height, int64_t row0) {
    fl_buf_append(file, MAGIC, 8);
    bool shard = height >= 0;
    uint32_t hdr[4] = {shard ? 2 : 1, (uint32_t)t->dtype, (uint32_t)t->ndim, 0};
    fl_buf_append(file, (const char *)hdr, sizeof hdr);
    int64_t ne[FL_MAX_DIMS];
    memcpy(ne, t->ne, sizeof(int64_t) * (size_t)t->ndim);
    if (shard) ne[0] = height;
    fl_buf_append(file, (const char *)ne, sizeof(int64_t) * (size_t)t->ndim);
    if (shard) {
        int64_t range[2] = {row0, t->ne[0]};
        fl_buf_append(file, (const char *)range, sizeof range);
    }
}

/* Writes t's header and elements to path (the elements straight from the tensor: a shard may be
 * gigabytes). */
static FlStatus put_tensor(FILE *f, const char *path, const FlTensor *t, int64_t height, int64_t row0, FlErr *err) {
    FlBuf head = {0};
    put_header(&head, t, height, row0);
    bool ok = fwrite(head.data, 1, head.len, f) == head.len &&
              fwrite(fl_tensor_data(t), 1, fl_tensor_nbytes(t), f) == fl_tensor_nbytes(t);
    fl_buf_free(&head);
    if (!ok) return fl_err(err, "--save: cannot write '%s': %s", path, strerror(errno));
    return FL_OK;
}

static FlStatus write_tensor(const char *path, const FlTensor *t, int64_t height, int64_t row0, FlErr *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return fl_err(err, "--save: cannot write '%s': %s", path, strerror(errno));
    FlStatus st = put_tensor(f, path, t, height, row0, err);
    if (fclose(f) != 0 && st == FL_OK) st = fl_err(err, "--save: cannot write '%s': %s", path, strerror(errno));
    return st;
}

struct FlParamsSaving {
    char *target;  /* DIR resolved */
    FlBuf tmp;     /* DIR.tmp.PID, being filled */
    FlBuf manifest; /* the whole vars' files, in var order (combined: the file, then the vars) */
    bool combined;
    bool fluid; /* formats 4 and 5: the whole vars in Fluid's stream format, a combined file sorted by name */
};

/* A var's value in Fluid's stream format (formats 4 and 5), with its LoD levels. */
static FlStatus put_fluid(FILE *f, const char *path, const FlNamedTensor *nt, FlErr *err) {
    FlBuf head = {0};
    FlErr e2;
    if (fl_lodstream_write_head(&e2, &head, &nt->t, nt->nlevels, nt->lod) != FL_OK) {
        fl_buf_free(&head);
        return fl_err(err, "--save: '%s': %s", nt->name, e2.msg);
    }
    bool ok = fwrite(head.data, 1, head.len, f) == head.len &&
              fwrite(fl_tensor_data(&nt->t), 1, fl_tensor_nbytes(&nt->t), f) == fl_tensor_nbytes(&nt->t);
    fl_buf_free(&head);
    if (!ok) return fl_err(err, "--save: cannot write '%s': %s", path, strerror(errno));
    return FL_OK;
}

static int cmp_named(const void *a, const void *b) {
    return strcmp((*(const FlNamedTensor *const *)a)->name, (*(const FlNamedTensor *const *)b)->name);
}

/* Checks that `file` can name a combined checkpoint's file: a plain name of the directory that
 * is none of the checkpoint's own files. */
static FlStatus check_combined_name(const char *file, FlErr *err) {
    if (!file[0] || strchr(file, '/') || file[0] == '.' || reserved(file))
        return fl_err(err, "--save: '%s' cannot name the file of a combined checkpoint (a plain file name, not "
                      "MANIFEST or FORMAT, not starting with '.')", file);
    for (const char *p = file; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return fl_err(err, "--save: the name of a combined checkpoint's file holds a control character");
    return FL_OK;
}

/* fl_params_write_begin, or with `combined` (a file name) every var into that one file. */
static FlStatus write_begin(const char *dir, const FlNamedTensors *v, const char *combined, bool fluid,
                            FlParamsSaving **out, FlErr *err) {
    *out = NULL;
    FlBuf path = {0}, fname = {0};
    char *target = save_path(dir, err);
    if (!target) return FL_ERROR;
    FlParamsSaving *s = fl_xcalloc(1, sizeof *s);
    s->target = target;
    s->fluid = fluid;
    /* the order of the files' vars: v's, or (Fluid's combined file) sorted by name */
    const FlNamedTensor **order = fl_xcalloc(v->len + 1, sizeof *order);
    for (size_t i = 0; i < v->len; i++) order[i] = &v->data[i];
    if (fluid && combined && v->len) qsort(order, v->len, sizeof *order, cmp_named);
    fl_buf_printf(&s->tmp, "%s.tmp.%d", target, (int)getpid());
    fl_params_remove(fl_buf_str(&s->tmp));
    FlStatus st = FL_ERROR;
    FILE *cf = NULL;
    if (mkdir(fl_buf_str(&s->tmp), 0777) != 0) {
        fl_err(err, "--save: cannot create '%s': %s", fl_buf_str(&s->tmp), strerror(errno));
        goto fail;
    }
    if (combined) {
        s->combined = true;
        fl_buf_printf(&s->manifest, "%s\n", combined);
        fl_buf_printf(&path, "%s/%s", fl_buf_str(&s->tmp), combined);
        if (!(cf = fopen(fl_buf_str(&path), "wb"))) {
            fl_err(err, "--save: cannot write '%s': %s", fl_buf_str(&path), strerror(errno));
            goto fail;
        }
    }
    for (size_t i = 0; i < v->len; i++) {
        const FlNamedTensor *nt = order[i];
        if (!nt->name[0]) {
            fl_err(err, "--save: a var has an empty name");
            goto fail;
        }
        if (fluid && i && combined && !strcmp(nt->name, order[i - 1]->name)) continue; /* Fluid's: once */
        fname.len = 0;
        escape_name(nt->name, &fname);
        fl_buf_printf(&s->manifest, "%s\n", fl_buf_str(&fname));
        if (cf) {
            if ((fluid ? put_fluid(cf, fl_buf_str(&path), nt, err) : put_tensor(cf, fl_buf_str(&path), &nt->t, -1, 0, err)) !=
                FL_OK)
                goto fail;
            continue;
        }
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", fl_buf_str(&s->tmp), fl_buf_str(&fname));
        if (!fluid) {
            if (write_tensor(fl_buf_str(&path), &nt->t, -1, 0, err) != FL_OK) goto fail;
            continue;
        }
        FILE *f = fopen(fl_buf_str(&path), "wb");
        if (!f) {
            fl_err(err, "--save: cannot write '%s': %s", fl_buf_str(&path), strerror(errno));
            goto fail;
        }
        FlStatus ws = put_fluid(f, fl_buf_str(&path), nt, err);
        if (fclose(f) != 0 && ws == FL_OK) ws = fl_err(err, "--save: cannot write '%s': %s", fl_buf_str(&path), strerror(errno));
        if (ws != FL_OK) goto fail;
    }
    if (cf) {
        int bad = fclose(cf);
        cf = NULL;
        if (bad) {
            fl_err(err, "--save: cannot write '%s': %s", fl_buf_str(&path), strerror(errno));
            goto fail;
        }
    }
    st = FL_OK;
    *out = s;
fail:
    if (cf) fclose(cf);
    if (st != FL_OK) fl_params_write_abandon(s);
    free(order);
    fl_buf_free(&path);
    fl_buf_free(&fname);
    return st;
}

FlStatus fl_params_write_begin(const char *dir, const FlNamedTensors *v, FlParamsSaving **out, FlErr *err) {
    return write_begin(dir, v, NULL, false, out, err);
}

FlStatus fl_params_write_begin_combined(const char *dir, const char *file, const FlNamedTensors *v, FlParamsSaving **out,
                                        FlErr *err) {
    *out = NULL;
    if (file && check_combined_name(file, err) != FL_OK) return FL_ERROR;
    return write_begin(dir, v, file, false, out, err);
}

FlStatus fl_params_write_begin_fluid(const char *dir, const char *file, const FlNamedTensors *v, FlParamsSaving **out,
                                     FlErr *err) {
    *out = NULL;
    if (file && check_combined_name(file, err) != FL_OK) return FL_ERROR;
    return write_begin(dir, v, file, true, out, err);
}

FlStatus fl_params_write_combined(const char *dir, const char *file, const FlNamedTensors *v, FlErr *err) {
    FlParamsSaving *s;
    if (fl_params_write_begin_combined(dir, file, v, &s, err) != FL_OK) return FL_ERROR;
    return fl_params_write_end(s, err);
}

const char *fl_params_msg(const char *m) {
    if (!strncmp(m, "--save: ", 8)) return m + 8;
    if (!strncmp(m, "--load", 6)) {
        const char *p = strstr(m, ": ");
        if (p) return p + 2;
    }
    return m;
}

const char *fl_params_saving_dir(const FlParamsSaving *s) { return fl_buf_str(&s->tmp); }

void fl_params_write_abandon(FlParamsSaving *s) {
    if (!s) return;
    if (s->tmp.len) fl_params_remove(fl_buf_str(&s->tmp));
    free(s->target);
    fl_buf_free(&s->tmp);
    fl_buf_free(&s->manifest);
    free(s);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

FlStatus fl_params_write_end(FlParamsSaving *s, FlErr *err) {
    FlBuf path = {0};
    FlStatus st = FL_ERROR;
    /* the shards the pservers wrote: listed after the whole vars, sorted */
    FL_VEC(char *) shards = {0};
    DIR *d = opendir(fl_buf_str(&s->tmp));
    for (struct dirent *ent; d && (ent = readdir(d));)
        if (strstr(ent->d_name, SHARD_MARK)) FL_VEC_PUSH(&shards, fl_xstrdup(ent->d_name));
    if (d) closedir(d);
    if (shards.len) qsort(shards.data, shards.len, sizeof *shards.data, cmp_str);
    for (size_t i = 0; i < shards.len; i++) fl_buf_printf(&s->manifest, "%s\n", shards.data[i]);
    fl_buf_printf(&path, "%s/FORMAT", fl_buf_str(&s->tmp));
    char line[64];
    int ln = snprintf(line, sizeof line, "%s%d\n", FORMAT_WORDS,
                      s->fluid ? (s->combined ? FORMAT_FLUID_COMBINED : FORMAT_FLUID)
                               : s->combined ? FORMAT_COMBINED : FORMAT_SPLIT);
    if (fl_write_file(fl_buf_str(&path), line, (size_t)ln, err) != FL_OK) goto fail;
    path.len = 0;
    fl_buf_printf(&path, "%s/MANIFEST", fl_buf_str(&s->tmp));
    if (fl_write_file(fl_buf_str(&path), fl_buf_str(&s->manifest), s->manifest.len, err) != FL_OK) goto fail;
    test_die_at("save-written");
    if (switch_in(fl_buf_str(&s->tmp), s->target, err) != FL_OK) goto fail;
    s->tmp.len = 0; /* switched in: nothing to remove */
    st = FL_OK;
fail:
    for (size_t i = 0; i < shards.len; i++) free(shards.data[i]);
    FL_VEC_FREE(&shards);
    fl_buf_free(&path);
    fl_params_write_abandon(s);
    return st;
}

FlStatus fl_params_write(const char *dir, const FlNamedTensors *v, FlErr *err) {
    FlParamsSaving *s;
    if (fl_params_write_begin(dir, v, &s, err) != FL_OK) return FL_ERROR;
    return fl_params_write_end(s, err);
}

FlStatus fl_params_write_shard(const char *dir, const char *name, int64_t height, int64_t row0, const FlTensor *t,
                               FlErr *err) {
    if (t->ndim < 1 || row0 < 0 || row0 > height || t->ne[0] > height - row0)
        return fl_err(err, "--save: rows [%lld, %lld) are not rows of '%s' (%lld rows)", (long long)row0,
                      (long long)(row0 + (t->ndim ? t->ne[0] : 0)), name, (long long)height);
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/", dir);
    escape_name(name, &path);
    fl_buf_printf(&path, "%%shard-%lld-%lld", (long long)row0, (long long)(row0 + t->ne[0]));
    FlStatus st = write_tensor(fl_buf_str(&path), t, height, row0, err);
    fl_buf_free(&path);
    return st;
}

FlStatus fl_params_collect(const FlLoadedProgram *p, FlScope *scope, FlNamedTensors *out, FlErr *err) {
    VarList vars = {0};
    persistables(p, &vars);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < vars.len && st == FL_OK; i++) {
        FlNamedTensor nt = {.name = vars.data[i]->name, .t = FL_TENSOR_INIT};
        st = fl_scope_get_tensor(scope, nt.name, &nt.t, err);
        FL_VEC_PUSH(out, nt);
    }
    FL_VEC_FREE(&vars);
    return st;
}

void fl_params_free(FlNamedTensors *v) {
    for (size_t i = 0; i < v->len; i++) {
        fl_tensor_fini(&v->data[i].t);
        for (int l = 0; l < v->data[i].nlevels; l++) fl_tensor_fini(&v->data[i].lod[l]);
    }
    FL_VEC_FREE(v);
}

FlStatus fl_params_save(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) {
    FlNamedTensors v = {0};
    FlStatus st = fl_params_collect(p, scope, &v, err);
    if (st == FL_OK) st = fl_params_write(dir, &v, err);
    fl_params_free(&v);
    return st;
}

/* A row number of a shard's name: decimal digits from *p up to `stop`, at most INT64_MAX, no
 * sign, no leading zero (but "0"); *p moves past them. */
static bool parse_row(const char **p, const char *end, char stop, int64_t *out) {
    const char *q = *p;
    int64_t v = 0;
    if (q == end || *q < '0' || *q > '9' || (*q == '0' && q + 1 < end && q[1] != stop)) return false;
    for (; q < end && *q != stop; q++)
        if (*q < '0' || *q > '9' || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *q - '0', &v))
            return false;
    *p = q;
    *out = v;
    return true;
}

/* The checkpoint format of dir into *version: 1 without a FORMAT file (or with one that is a
 * tensor file: a version-1 var named FORMAT), else the N of its line "fluidc checkpoint N" (the
 * final newline optional). Errors: a FORMAT that is not a regular
 * file, cannot be read or holds anything else, and formats this reader does not know (newer
 * ones: "written by a newer fluidc", as a .flp of a newer format is refused). */
static FlStatus read_format(const char *dir, int *version, FlErr *err) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/FORMAT", dir);
    struct stat sb;
    *version = 1;
    if (lstat(fl_buf_str(&path), &sb) != 0 && errno == ENOENT) {
        fl_buf_free(&path);
        return FL_OK;
    }
    size_t len;
    FlErr e2;
    char *fmt = fl_read_regular_file(fl_buf_str(&path), &len, &e2);
    fl_buf_free(&path);
    if (!fmt) return fl_err(err, "--load %s: %s", dir, e2.msg);
    if (len >= 8 && !memcmp(fmt, MAGIC, 8)) { /* version 1, which named files after vars: a var "FORMAT" */
        free(fmt);
        return FL_OK;
    }
    FlStatus st = FL_OK;
    size_t kw = strlen(FORMAT_WORDS), n = len && fmt[len - 1] == '\n' ? len - 1 : len;
    const char *q = fmt + kw;
    int64_t ver = 0;
    if (n > kw && !memcmp(fmt, FORMAT_WORDS, kw) && parse_row(&q, fmt + n, 0, &ver) && q == fmt + n) {
        if (ver > FORMAT_VERSION)
            st = fl_err(err, "--load %s: the checkpoint was written by a newer fluidc (checkpoint format %lld; this one "
                        "reads up to %d)", dir, (long long)ver, FORMAT_VERSION);
        else if (ver < FORMAT_SPLIT)
            st = fl_err(err, "--load %s: its FORMAT names checkpoint format %lld, which this fluidc does not know (it "
                        "reads format 1, which has no FORMAT file, and %d to %d)", dir, (long long)ver, FORMAT_SPLIT,
                        FORMAT_VERSION);
        else
            *version = (int)ver;
    } else {
        FlBuf shown = {0};
        for (size_t i = 0; i < n && i < 40; i++) fl_buf_putc(&shown, fmt[i] >= 0x20 && fmt[i] < 0x7f ? fmt[i] : '?');
        if (n > 40) fl_buf_puts(&shown, "...");
        st = fl_err(err, "--load %s: its FORMAT is %s%s%s (expected '%s%d')", dir, n ? "not a checkpoint's: '" : "empty",
                    fl_buf_str(&shown), n ? "'" : "", FORMAT_WORDS, FORMAT_SPLIT);
        fl_buf_free(&shown);
    }
    free(fmt);
    return st;
}

/* A tensor file's header as read: the var's whole shape and the rows it holds. */
typedef struct FileHead {
    uint32_t version;
    FlDType dtype;
    int ndim;
    int64_t ne[FL_MAX_DIMS];
    int64_t row0, rows; /* version 1: all of them (ne[0], or 1 for a scalar) */
    size_t off;         /* where the elements begin */
} FileHead;

/* Reads f's header into *h; false on a malformed one. */
static bool read_head(FILE *f, FileHead *h) {
    char magic[8];
    uint32_t hdr[4];
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 8) || fread(hdr, sizeof hdr, 1, f) != 1) return false;
    if ((hdr[0] != 1 && hdr[0] != 2) || hdr[1] >= FL_DT_COUNT || hdr[2] > FL_MAX_DIMS || (hdr[0] == 2 && hdr[2] < 1))
        return false;
    h->version = hdr[0];
    h->dtype = (FlDType)hdr[1];
    h->ndim = (int)hdr[2];
    if (h->ndim && fread(h->ne, sizeof(int64_t), (size_t)h->ndim, f) != (size_t)h->ndim) return false;
    for (int k = 0; k < h->ndim; k++)
        if (h->ne[k] < 0) return false;
    h->row0 = 0;
    h->rows = h->ndim ? h->ne[0] : 1;
    if (h->version == 2) {
        int64_t range[2];
        /* ne[0] - range[0] cannot overflow: both are >= 0 */
        if (fread(range, sizeof range, 1, f) != 1 || range[0] < 0 || range[1] < 0 || range[0] > h->ne[0] ||
            range[1] > h->ne[0] - range[0])
            return false;
        h->row0 = range[0];
        h->rows = range[1];
    }
    h->off = 8 + sizeof hdr + (size_t)h->ndim * sizeof(int64_t) + (h->version == 2 ? 2 * sizeof(int64_t) : 0);
    return true;
}

/* Elements per row of v (all of them for a scalar) and its rows. */
static int64_t var_rows(const FlVarDesc *v) { return v->ndim ? v->shape[0] : 1; }
static size_t row_bytes(const FlVarDesc *v) {
    size_t n = fl_dtype_size(v->dtype);
    for (int k = 1; k < v->ndim; k++) n *= (size_t)v->shape[k];
    return n;
}

/* From the file `path` (shown as `file`), which must hold v's dtype and whole shape, the rows
 * [lo, hi) of v that it has into dst (rows [lo, hi) of v, contiguous). base >= 0: the tensor
 * begins at that offset of a combined checkpoint's file, which may hold more after it; else it
 * is the whole file. */
static FlStatus read_file_rows(const char *dir, const char *path, const char *file, uint32_t version, const FlVarDesc *v,
                               int64_t lo, int64_t hi, int64_t base, char *dst, FlErr *err) {
    FlErr e2;
    FILE *f = fl_open_regular(path, &e2);
    if (!f) return fl_err(err, "--load %s: %s", dir, e2.msg);
    FlStatus st = FL_ERROR;
    FileHead h;
    bool alone = base < 0;
    if (alone) base = 0;
    if (fseeko(f, (off_t)base, SEEK_SET) != 0 || !read_head(f, &h) || h.version != version) {
        fl_err(err, "--load %s: '%s' is not a saved %s (bad header)", dir, file, version == 1 ? "tensor" : "shard");
        goto done;
    }
    bool same = h.ndim == v->ndim && h.dtype == v->dtype;
    for (int k = 0; same && k < v->ndim; k++) same = h.ne[k] == v->shape[k];
    if (!same) {
        FlBuf want = {0}, got = {0};
        fl_ir_shape_str(v->ndim, v->shape, &want);
        fl_ir_shape_str(h.ndim, h.ne, &got);
        if (h.version == 1)
            fl_err(err, "--load %s: '%s' is %s %s in the file but %s %s in the program", dir, v->name,
                   fl_dtype_name(h.dtype), fl_buf_str(&got), fl_dtype_name(v->dtype), fl_buf_str(&want));
        else
            fl_err(err, "--load %s: the shard '%s' is of a %s %s var but '%s' is %s %s in the program", dir, file,
                   fl_dtype_name(h.dtype), fl_buf_str(&got), v->name, fl_dtype_name(v->dtype), fl_buf_str(&want));
        fl_buf_free(&want);
        fl_buf_free(&got);
        goto done;
    }
    size_t rb = row_bytes(v), want;
    struct stat sb;
    if (__builtin_mul_overflow((size_t)h.rows, rb, &want) || __builtin_add_overflow(want, h.off, &want) ||
        __builtin_add_overflow(want, (size_t)base, &want)) {
        fl_err(err, "--load %s: '%s' is not a saved %s (its header claims more than %zu bytes)", dir, file,
               version == 1 ? "tensor" : "shard", SIZE_MAX);
        goto done;
    }
    if (fstat(fileno(f), &sb) != 0 || (alone ? (size_t)sb.st_size != want : (size_t)sb.st_size < want)) {
        h.off += (size_t)base; /* the bytes before the tensor's data */
        if (h.version == 1)
            fl_err(err, "--load %s: '%s' holds %zu bytes of data, expected %zu", dir, v->name,
                   (size_t)sb.st_size > h.off ? (size_t)sb.st_size - h.off : 0, want - h.off);
        else
            fl_err(err, "--load %s: the shard '%s' holds %zu bytes of data, expected %zu", dir, file,
                   (size_t)sb.st_size > h.off ? (size_t)sb.st_size - h.off : 0, want - h.off);
        goto done;
    }
    int64_t a = lo > h.row0 ? lo : h.row0, b = hi < h.row0 + h.rows ? hi : h.row0 + h.rows;
    if (a < b) {
        size_t n = (size_t)(b - a) * rb;
        if (fseeko(f, (off_t)((size_t)base + h.off + (size_t)(a - h.row0) * rb), SEEK_SET) != 0 ||
            fread(dst + (size_t)(a - lo) * rb, 1, n, f) != n) {
            fl_err(err, "--load %s: cannot read '%s': %s", dir, file, ferror(f) ? strerror(errno) : "it is shorter than its header says");
            goto done;
        }
    }
    st = FL_OK;
done:
    fclose(f);
    return st;
}

/* A shard file of a var: its name in the directory and its rows [first, end). */
typedef struct Shard {
    char *file;
    int64_t first, end;
} Shard;
typedef FL_VEC(Shard) Shards;

static int cmp_shard(const void *a, const void *b) {
    const Shard *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* The shards of the var whose escaped name is `esc`, from the MANIFEST of dir, sorted by rows.
 * Errors: a MANIFEST that cannot be read (missing: no shards). */
static FlStatus find_shards(const char *dir, const char *esc, Shards *out, FlErr *err) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/MANIFEST", dir);
    size_t len = 0;
    FlErr e2;
    struct stat sb;
    bool there = lstat(fl_buf_str(&path), &sb) == 0;
    char *m = there ? fl_read_regular_file(fl_buf_str(&path), &len, &e2) : NULL;
    fl_buf_free(&path);
    if (there && !m) return fl_err(err, "--load %s: %s", dir, e2.msg);
    size_t k = strlen(esc), mk = strlen(SHARD_MARK);
    for (const char *l = m; m && l < m + len;) {
        const char *nl = memchr(l, '\n', (size_t)(m + len - l));
        size_t ll = nl ? (size_t)(nl - l) : (size_t)(m + len - l);
        const char *q = l + k + mk, *end = l + ll;
        int64_t a, b;
        if (ll > k + mk && !memcmp(l, esc, k) && !memcmp(l + k, SHARD_MARK, mk) && parse_row(&q, end, '-', &a) &&
            q < end && (q++, parse_row(&q, end, 0, &b)) && q == end && a <= b) {
            Shard sh = {fl_xmalloc(ll + 1), a, b};
            memcpy(sh.file, l, ll);
            sh.file[ll] = 0;
            FL_VEC_PUSH(out, sh);
        }
        l += ll + 1;
    }
    free(m);
    if (out->len) qsort(out->data, out->len, sizeof *out->data, cmp_shard);
    return FL_OK;
}

static FlStatus check_fluid(const char *dir, const char *file, const FlVarDesc *v, const FlLodTensor *lt, bool any,
                            FlErr *err);
static FlStatus take_rows(const FlLodTensor *lt, int64_t row0, int64_t rows, FlTensor *out, FlErr *err);

/* v's value (rows [row0, row0 + rows); row0 < 0: all of it) from the `size` bytes of f at `base`
 * (of the file `file` of dir), one tensor of Fluid's stream format, into *out and its LoD levels
 * into *levels (NULL: not asked). */
static FlStatus read_fluid_at(const char *dir, FILE *f, const char *file, const FlVarDesc *v, int64_t base,
                              uint64_t size, int64_t row0, int64_t rows, FlTensor *out, FlLodTensor *levels, FlErr *err) {
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || (uint64_t)sb.st_size < (uint64_t)base || size > (uint64_t)sb.st_size - (uint64_t)base)
        return fl_err(err, "--load %s: the combined file '%s' ends inside '%s' (it needs %llu bytes at byte %lld)", dir,
                      file, v->name, (unsigned long long)size, (long long)base);
    char *bytes = fl_xmalloc(size ? (size_t)size : 1);
    FlStatus st = FL_ERROR;
    FlLodTensor lt;
    fl_lodtensor_init(&lt);
    size_t used = 0;
    FlErr e2;
    if (fseeko(f, (off_t)base, SEEK_SET) != 0 || fread(bytes, 1, (size_t)size, f) != (size_t)size)
        fl_err(err, "--load %s: cannot read '%s': %s", dir, file, ferror(f) ? strerror(errno) : "it is shorter than it was");
    else if (fl_lodstream_read(&e2, bytes, (size_t)size, (size_t)base, &used, &lt) != FL_OK)
        fl_err(err, "--load %s: the combined file '%s' does not hold '%s' in Fluid's format: %s", dir, file, v->name,
               e2.msg);
    else if (used != size)
        fl_err(err, "--load %s: the combined file '%s' does not hold '%s' in Fluid's format: its tensor is not the "
               "size its header says", dir, file, v->name);
    else if (check_fluid(dir, file, v, &lt, row0 < 0, err) == FL_OK && take_rows(&lt, row0, row0 < 0 ? -1 : rows, out, err) == FL_OK) {
        if (levels) {
            levels->nlevels = lt.nlevels;
            for (int l = 0; l < lt.nlevels; l++) fl_tensor_ref(&levels->lod[l], &lt.lod[l]);
        }
        st = FL_OK;
    }
    fl_lodtensor_fini(&lt);
    free(bytes);
    return st;
}

/* Format 3, a combined checkpoint: MANIFEST's first line names the file, its other lines the
 * vars (escaped) in the file's order; the file is their tensor files, version 1, one after the
 * other. Rows [row0, row0 + rows) of v into *out (released first). */
static FlStatus read_combined(const char *dir, const FlVarDesc *v, int64_t row0, int64_t rows, bool fluid, FlTensor *out,
                              FlLodTensor *levels, FlErr *err) {
    FlBuf path = {0}, esc = {0};
    fl_buf_printf(&path, "%s/MANIFEST", dir);
    size_t len = 0;
    FlErr e2;
    char *m = fl_read_regular_file(fl_buf_str(&path), &len, &e2);
    FlStatus st = FL_ERROR;
    FlTensor t = FL_TENSOR_INIT;
    FILE *f = NULL;
    if (!m) {
        fl_err(err, "--load %s: %s", dir, e2.msg);
        goto done;
    }
    escape_name(v->name, &esc);
    char *file = NULL;
    int64_t index = -1, k = 0;
    for (char *l = m; l < m + len; k++) {
        char *nl = memchr(l, '\n', (size_t)(m + len - l));
        size_t ll = nl ? (size_t)(nl - l) : (size_t)(m + len - l);
        l[ll] = 0; /* the newline, or the byte past the data that fl_read_regular_file adds */
        if (k == 0) file = l;
        else if (index < 0 && ll == esc.len && !memcmp(l, fl_buf_str(&esc), ll)) index = k - 1;
        l += ll + 1;
    }
    if (!file || !file[0] || check_combined_name(file, &e2) != FL_OK) {
        fl_err(err, "--load %s: its MANIFEST does not name the file of a combined checkpoint on its first line", dir);
        goto done;
    }
    if (index < 0) {
        fl_err(err, "--load %s: no saved value for '%s'", dir, v->name);
        goto done;
    }
    path.len = 0;
    fl_buf_printf(&path, "%s/%s", dir, file);
    if (!(f = fl_open_regular(fl_buf_str(&path), &e2))) {
        fl_err(err, "--load %s: %s", dir, e2.msg);
        goto done;
    }
    int64_t base = 0; /* where the tensors before v's end */
    for (int64_t i = 0; fluid && i <= index; i++) { /* format 5: Fluid's tensors, v's read whole */
        uint64_t size;
        if (fseeko(f, (off_t)base, SEEK_SET) != 0 || fl_lodstream_size(&e2, f, (size_t)base, &size) != FL_OK) {
            fl_err(err, "--load %s: '%s' is not a combined checkpoint's file: %s", dir, file, e2.msg);
            goto done;
        }
        if (i == index) {
            st = read_fluid_at(dir, f, file, v, base, size, rows == var_rows(v) ? -1 : row0, rows, out, levels, err);
            goto done;
        }
        base += (int64_t)size;
    }
    for (int64_t i = 0; i < index; i++) {
        FileHead h;
        size_t n = 1, size;
        bool ok = fseeko(f, (off_t)base, SEEK_SET) == 0 && read_head(f, &h) && h.version == 1;
        for (int d = 0; ok && d < h.ndim; d++) ok = !__builtin_mul_overflow(n, (size_t)h.ne[d], &n);
        ok = ok && !__builtin_mul_overflow(n, fl_dtype_size(h.dtype), &size) &&
             !__builtin_add_overflow(size, h.off, &size) && size <= (size_t)INT64_MAX - (size_t)base;
        if (!ok) {
            fl_err(err, "--load %s: '%s' is not a combined checkpoint's file (a bad header at byte %lld)", dir, file,
                   (long long)base);
            goto done;
        }
        base += (int64_t)size;
    }
    FILE *g = f;
    f = NULL;
    fclose(g);
    int64_t ne[FL_MAX_DIMS];
    for (int d = 0; d < v->ndim; d++) ne[d] = v->shape[d];
    if (v->ndim) ne[0] = rows;
    if (fl_tensor_alloc_uninit(err, &t, v->dtype, v->ndim, ne) != FL_OK) goto done;
    if (read_file_rows(dir, fl_buf_str(&path), file, 1, v, row0, row0 + rows, base, fl_tensor_data(&t), err) != FL_OK)
        goto done;
    fl_tensor_fini(out);
    *out = t;
    t = (FlTensor)FL_TENSOR_INIT;
    st = FL_OK;
done:
    if (f) fclose(f);
    fl_tensor_fini(&t);
    free(m);
    fl_buf_free(&path);
    fl_buf_free(&esc);
    return st;
}

/* ---------------------------------------------------------------- Fluid's layouts
 *
 * Paddle's save op writes a var to the file named after it, its save_combine op the vars of a
 * call to one file, sorted by name; each tensor in the stream format of runtime/lodstream.h.
 * Which a file is, is decided by its first bytes: fluidc's tensor files start with FLTENSOR,
 * Fluid's stream with its LoD version, a uint32 0. */

/* Whether the file at path starts as Fluid's stream does (4 zero bytes). A file that cannot be
 * opened or is shorter: no (the reader that follows says why). */
static bool fluid_stream_file(const char *path) {
    FlErr e;
    FILE *f = fl_open_regular(path, &e);
    unsigned char b[4] = {1, 1, 1, 1};
    bool ok = f && fread(b, 1, 4, f) == 4 && !b[0] && !b[1] && !b[2] && !b[3];
    if (f) fclose(f);
    return ok;
}

/* Whether lt (read from `file` of dir) is what v holds: its dtype, its shape (a -1 dim of v
 * takes any size when `any` is set) and as many LoD levels as v's lod_level. */
static FlStatus check_fluid(const char *dir, const char *file, const FlVarDesc *v, const FlLodTensor *lt, bool any,
                            FlErr *err) {
    const FlTensor *t = &lt->t;
    bool named = !strcmp(file, v->name); /* the var's own file: "the file" names it */
    bool same = t->dtype == v->dtype && t->ndim == v->ndim;
    for (int k = 0; same && k < v->ndim; k++) same = t->ne[k] == v->shape[k] || (any && v->shape[k] < 0);
    if (!same) {
        FlShapeStr got = fl_tensor_shape(t), want = fl_shape_str(v->ndim, v->shape);
        return fl_err(err, "--load %s: '%s' is %s %s in the file%s%s%s but %s %s in the program", dir, v->name,
                      fl_dtype_name(t->dtype), got.s, named ? "" : " '", named ? "" : file, named ? "" : "'",
                      fl_dtype_name(v->dtype), want.s);
    }
    if (lt->nlevels != v->lod_level)
        return fl_err(err, "--load %s: '%s' has %d LoD level%s in the file%s%s%s but lod_level %d in the program", dir,
                      v->name, lt->nlevels, lt->nlevels == 1 ? "" : "s", named ? "" : " '", named ? "" : file,
                      named ? "" : "'", v->lod_level);
    return FL_OK;
}

/* Rows [row0, row0 + rows) of lt's tensor into *out (released first; rows < 0: all of it, a
 * new reference). */
static FlStatus take_rows(const FlLodTensor *lt, int64_t row0, int64_t rows, FlTensor *out, FlErr *err) {
    FlTensor t = FL_TENSOR_INIT;
    if (rows < 0 || !lt->t.ndim) fl_tensor_ref(&t, &lt->t);
    else {
        int64_t ne[FL_MAX_DIMS];
        for (int k = 0; k < lt->t.ndim; k++) ne[k] = lt->t.ne[k];
        ne[0] = rows;
        if (fl_tensor_alloc_uninit(err, &t, lt->t.dtype, lt->t.ndim, ne) != FL_OK) return FL_ERROR;
        size_t rb = fl_tensor_nbytes(&lt->t) / (lt->t.ne[0] ? (size_t)lt->t.ne[0] : 1);
        if (rows) memcpy(fl_tensor_data(&t), (const char *)fl_tensor_data(&lt->t) + (size_t)row0 * rb, (size_t)rows * rb);
    }
    fl_tensor_fini(out);
    *out = t;
    return FL_OK;
}

/* v's file `file` (at path) of dir, in Fluid's stream format: one tensor, nothing after it,
 * checked against v (any: a -1 dim of v takes any size), into *out (filled on success). */
static FlStatus read_fluid_file(const char *dir, const char *path, const char *file, const FlVarDesc *v, bool any,
                                FlLodTensor *out, FlErr *err) {
    size_t len = 0, used = 0;
    FlErr e2;
    char *bytes = fl_read_regular_file(path, &len, &e2);
    if (!bytes) return fl_err(err, "--load %s: %s", dir, e2.msg);
    FlStatus st = FL_ERROR;
    if (fl_lodstream_read(&e2, bytes, len, 0, &used, out) != FL_OK)
        fl_err(err, "--load %s: '%s': its file '%s' is not a tensor of Fluid's format: %s", dir, v->name, file,
               e2.msg);
    else if (used != len)
        fl_err(err, "--load %s: '%s': its file '%s' holds %zu byte%s after its tensor (Fluid's save writes one "
               "tensor to a var's file)", dir, v->name, file, len - used, len - used == 1 ? "" : "s");
    else
        st = check_fluid(dir, file, v, out, any, err);
    if (st != FL_OK) fl_lodtensor_fini(out);
    free(bytes);
    return st;
}

static int cmp_var_name(const void *a, const void *b) {
    return strcmp((*(const FlVarDesc *const *)a)->name, (*(const FlVarDesc *const *)b)->name);
}

FlStatus fl_params_read_fluid_combined(const char *dir, const char *file, const FlVarDesc *const *vars, size_t n,
                                       FlLodTensor *out, FlErr *err) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/%s", dir, file);
    size_t len = 0, pos = 0;
    FlErr e2;
    char *bytes = fl_read_regular_file(fl_buf_str(&path), &len, &e2);
    fl_buf_free(&path);
    if (!bytes) return fl_err(err, "--load %s: %s", dir, e2.msg);
    const FlVarDesc **sorted = fl_xcalloc(n + 1, sizeof *sorted);
    if (n) memcpy(sorted, vars, n * sizeof *sorted);
    if (n) qsort(sorted, n, sizeof *sorted, cmp_var_name);
    FlLodTensor *got = fl_xcalloc(n + 1, sizeof *got);
    for (size_t i = 0; i < n; i++) fl_lodtensor_init(&got[i]);
    FlStatus st = FL_OK;
    size_t k = 0; /* the tensors read: the distinct names */
    for (size_t i = 0; i < n && st == FL_OK; i++) {
        if (i && !strcmp(sorted[i]->name, sorted[i - 1]->name)) continue; /* a var asked twice: stored once */
        size_t used = 0;
        if (fl_lodstream_read(&e2, bytes + pos, len - pos, pos, &used, &got[i]) != FL_OK)
            st = fl_err(err, "--load %s: the combined file '%s' does not hold '%s', tensor %zu of the vars asked "
                        "(sorted by name, as Fluid's save_combine writes them): %s", dir, file, sorted[i]->name, k + 1,
                        e2.msg);
        else
            st = check_fluid(dir, file, sorted[i], &got[i], true, err);
        pos += used;
        k++;
    }
    if (st == FL_OK && pos != len)
        st = fl_err(err, "--load %s: the combined file '%s' holds %zu byte%s after the %zu tensor%s of the vars asked "
                    "(Fluid's load_combine reads a file whole: load the vars it was saved with)", dir, file, len - pos,
                    len - pos == 1 ? "" : "s", k, k == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) { /* in the caller's order */
        const FlLodTensor *src = NULL;
        for (size_t j = 0; st == FL_OK && j < n && !src; j++)
            if (!strcmp(sorted[j]->name, vars[i]->name) && fl_tensor_has_data(&got[j].t)) src = &got[j];
        fl_lodtensor_init(&out[i]);
        if (!src) continue;
        fl_tensor_ref(&out[i].t, &src->t);
        out[i].nlevels = src->nlevels;
        for (int l = 0; l < src->nlevels; l++) fl_tensor_ref(&out[i].lod[l], &src->lod[l]);
    }
    if (st != FL_OK)
        for (size_t i = 0; i < n; i++) fl_lodtensor_fini(&out[i]);
    for (size_t i = 0; i < n; i++) fl_lodtensor_fini(&got[i]);
    free(got);
    free(sorted);
    free(bytes);
    return st;
}

FlStatus fl_params_check_combined(const char *dir, const char *file, bool *fluid, FlErr *err) {
    int version;
    *fluid = false;
    if (read_format(dir, &version, err) != FL_OK) return FL_ERROR;
    if (version == 1) { /* no FORMAT: Fluid's combined file, if its bytes say so */
        FlBuf path = {0};
        fl_buf_printf(&path, "%s/%s", dir, file);
        struct stat sb;
        FlErr e3;
        bool there = lstat(fl_buf_str(&path), &sb) == 0;
        FILE *f = there ? fl_open_regular(fl_buf_str(&path), &e3) : NULL;
        char head[8] = {0};
        size_t got = f ? fread(head, 1, sizeof head, f) : 0;
        if (f) fclose(f);
        fl_buf_free(&path);
        if (!there)
            return fl_err(err, "--load %s: it has no file '%s' (Fluid's save_*(filename='%s') writes one) and no FORMAT "
                          "(a fluidc checkpoint's)", dir, file, file);
        if (!f) return fl_err(err, "--load %s: %s", dir, e3.msg);
        if (got >= 4 && !memcmp(head, "\0\0\0\0", 4)) {
            *fluid = true;
            return FL_OK;
        }
        if (got < 8 || memcmp(head, MAGIC, 8) != 0)
            return fl_err(err, "--load %s: '%s' is not a combined file of Fluid's save_* (whose first tensor starts "
                          "with 4 zero bytes, its LoD version) nor a fluidc checkpoint's", dir, file);
    }
    if (version != FORMAT_COMBINED && version != FORMAT_FLUID_COMBINED)
        return fl_err(err, "--load %s: it holds a file per var, not one combined file '%s' (load it without a file "
                      "name)", dir, file);
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/MANIFEST", dir);
    size_t len = 0;
    FlErr e2;
    char *m = fl_read_regular_file(fl_buf_str(&path), &len, &e2);
    fl_buf_free(&path);
    if (!m) return fl_err(err, "--load %s: %s", dir, e2.msg);
    size_t n = strcspn(m, "\n");
    FlStatus st = FL_OK;
    if (n != strlen(file) || memcmp(m, file, n) != 0)
        st = fl_err(err, "--load %s: its combined file is '%.*s', not '%s'", dir, (int)(n < 200 ? n : 200), m, file);
    free(m);
    return st;
}

/* fl_params_read_rows; levels (NULL: not asked) receives the LoD levels of a Fluid file (none
 * for fluidc's files, which hold none). */
static FlStatus read_rows(const char *dir, const FlVarDesc *v, int64_t row0, int64_t rows, FlTensor *out,
                          FlLodTensor *levels, FlErr *err) {
    int64_t height = var_rows(v);
    bool all = rows < 0;
    if (rows < 0) row0 = 0, rows = height;
    FL_ASSERT(row0 >= 0 && row0 + rows <= height && (v->ndim || (row0 == 0 && rows == 1)));
    int version;
    if (read_format(dir, &version, err) != FL_OK) return FL_ERROR;
    if (version == FORMAT_COMBINED || version == FORMAT_FLUID_COMBINED)
        return read_combined(dir, v, row0, rows, version == FORMAT_FLUID_COMBINED, out, levels, err);
    bool v2 = version == FORMAT_SPLIT || version == FORMAT_FLUID; /* escaped names, a MANIFEST */
    FlBuf path = {0};
    FlBuf esc = {0};
    if (v2) escape_name(v->name, &esc);
    else fl_buf_puts(&esc, v->name);
    path.len = 0;
    fl_buf_printf(&path, "%s/%s", dir, fl_buf_str(&esc));
    Shards shards = {0};
    struct stat sb;
    bool whole = (v2 || safe_name(v->name)) && stat(fl_buf_str(&path), &sb) == 0;
    FlStatus st = FL_ERROR;
    FlTensor t = FL_TENSOR_INIT;
    if (whole && fluid_stream_file(fl_buf_str(&path))) { /* Fluid's save op's file */
        FlLodTensor lt;
        fl_lodtensor_init(&lt);
        st = read_fluid_file(dir, fl_buf_str(&path), fl_buf_str(&esc), v, all, &lt, err);
        if (st == FL_OK) st = take_rows(&lt, row0, all ? -1 : rows, out, err);
        if (st == FL_OK && levels) {
            levels->nlevels = lt.nlevels;
            for (int l = 0; l < lt.nlevels; l++) fl_tensor_ref(&levels->lod[l], &lt.lod[l]);
        }
        fl_lodtensor_fini(&lt);
        goto done;
    }
    if (!whole && v2 && find_shards(dir, fl_buf_str(&esc), &shards, err) != FL_OK) goto done;
    int64_t ne[FL_MAX_DIMS];
    for (int k = 0; k < v->ndim; k++) ne[k] = v->shape[k];
    if (v->ndim) ne[0] = rows;
    if (!whole && !shards.len) {
        if (v2 || !safe_name(v->name)) fl_err(err, "--load %s: no saved value for '%s'", dir, v->name);
        else fl_err(err, "--load %s: no saved value for '%s' (no file '%s' in it)", dir, v->name, v->name);
        goto done;
    }
    if (!whole && !v->ndim) {
        fl_err(err, "--load %s: '%s' is a scalar in the program but saved in shards ('%s')", dir, v->name, shards.data[0].file);
        goto done;
    }
    /* the shards must not overlap and must cover the rows asked */
    for (size_t i = 0; i + 1 < shards.len; i++)
        if (shards.data[i].end > shards.data[i + 1].first) {
            fl_err(err, "--load %s: the shards of '%s' overlap: '%s' and '%s'", dir, v->name, shards.data[i].file,
                   shards.data[i + 1].file);
            goto done;
        }
    for (size_t i = 0; i < shards.len; i++)
        if (shards.data[i].end > height) {
            fl_err(err, "--load %s: the shard '%s' holds rows past the %lld of '%s' in the program", dir,
                   shards.data[i].file, (long long)height, v->name);
            goto done;
        }
    int64_t have = row0;
    for (size_t i = 0; i < shards.len && have < row0 + rows; i++)
        if (shards.data[i].first <= have && shards.data[i].end > have) have = shards.data[i].end;
        else if (shards.data[i].first > have) break;
    if (!whole && have < row0 + rows) {
        int64_t next = row0 + rows;
        for (size_t i = 0; i < shards.len; i++)
            if (shards.data[i].first > have && shards.data[i].first < next) next = shards.data[i].first;
        fl_err(err, "--load %s: no shard holds rows [%lld, %lld) of '%s' (%zu shard%s of its %lld rows saved)", dir,
               (long long)have, (long long)next, v->name, shards.len, shards.len == 1 ? "" : "s", (long long)height);
        goto done;
    }
    if (fl_tensor_alloc_uninit(err, &t, v->dtype, v->ndim, ne) != FL_OK) goto done;
    if (whole) {
        if (read_file_rows(dir, fl_buf_str(&path), fl_buf_str(&esc), 1, v, row0, row0 + rows, -1, fl_tensor_data(&t),
                           err) != FL_OK)
            goto done;
    }
    for (size_t i = 0; !whole && i < shards.len; i++) {
        const Shard *sh = &shards.data[i];
        if (sh->end <= row0 || sh->first >= row0 + rows) continue;
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", dir, sh->file);
        FlErr e2;
        bool there = stat(fl_buf_str(&path), &sb) == 0;
        if (!there) snprintf(e2.msg, sizeof e2.msg, "%s", strerror(errno));
        FILE *f = there ? fl_open_regular(fl_buf_str(&path), &e2) : NULL;
        if (!f) {
            fl_err(err, "--load %s: cannot read the shard '%s' of '%s' (rows [%lld, %lld)): %s", dir, sh->file, v->name,
                   (long long)sh->first, (long long)sh->end, e2.msg);
            goto done;
        }
        FileHead h;
        bool ok = read_head(f, &h) && h.version == 2 && h.row0 == sh->first && h.row0 + h.rows == sh->end;
        fclose(f);
        if (!ok) {
            fl_err(err, "--load %s: the shard '%s' of '%s' is not a saved shard of rows [%lld, %lld) (bad header)", dir,
                   sh->file, v->name, (long long)sh->first, (long long)sh->end);
            goto done;
        }
        if (read_file_rows(dir, fl_buf_str(&path), sh->file, 2, v, row0, row0 + rows, -1, fl_tensor_data(&t), err) !=
            FL_OK)
            goto done;
    }
    fl_tensor_fini(out);
    *out = t;
    t = (FlTensor)FL_TENSOR_INIT;
    st = FL_OK;
done:
    fl_tensor_fini(&t);
    for (size_t i = 0; i < shards.len; i++) free(shards.data[i].file);
    FL_VEC_FREE(&shards);
    fl_buf_free(&path);
    fl_buf_free(&esc);
    return st;
}

FlStatus fl_params_read_rows(const char *dir, const FlVarDesc *v, int64_t row0, int64_t rows, FlTensor *out, FlErr *err) {
    return read_rows(dir, v, row0, rows, out, NULL, err);
}

FlStatus fl_params_read_lod(const char *dir, const FlVarDesc *v, FlLodTensor *out, FlErr *err) {
    fl_lodtensor_fini(out);
    FlStatus st = read_rows(dir, v, 0, -1, &out->t, out, err);
    if (st != FL_OK) fl_lodtensor_fini(out);
    return st;
}

FlStatus fl_params_read(const char *dir, const FlVarDesc *v, FlTensor *out, FlErr *err) {
    return fl_params_read_rows(dir, v, 0, -1, out, err);
}

void fl_params_set_value(FlScope *scope, const FlVarDesc *v, const FlLodTensor *lt) {
    fl_scope_set_tensor(scope, v->name, &lt->t);
    for (int l = 0; l < lt->nlevels && l < v->lod_level; l++) fl_scope_set_tensor(scope, v->lod[l], &lt->lod[l]);
}

FlStatus fl_params_load(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) {
    VarList vars = {0};
    persistables(p, &vars);
    FlLodTensor *loaded = fl_xcalloc(vars.len + 1, sizeof *loaded);
    for (size_t i = 0; i < vars.len; i++) fl_lodtensor_init(&loaded[i]);
    FlStatus st = FL_ERROR;
    struct stat sb;
    if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) { /* Fluid's combined file of the persistables */
        char *d = fl_path_dir(dir);
        const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        if (!fluid_stream_file(dir))
            fl_err(err, "--load %s: a file, but not Fluid's combined file of the program's persistables (whose first "
                   "tensor starts with 4 zero bytes, its LoD version); a fluidc checkpoint is loaded by its directory",
                   dir);
        else
            st = fl_params_read_fluid_combined(d, base, (const FlVarDesc *const *)vars.data, vars.len, loaded, err);
        free(d);
        if (st != FL_OK) goto fail;
    } else if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fl_err(err, "--load: '%s' is not a directory of saved parameters", dir);
        goto fail;
    } else {
        for (size_t n = 0; n < vars.len; n++)
            if (fl_params_read_lod(dir, vars.data[n], &loaded[n], err) != FL_OK) goto fail;
    }
    /* every var checked: now set them all */
    for (size_t i = 0; i < vars.len; i++) fl_params_set_value(scope, vars.data[i], &loaded[i]);
    st = FL_OK;
fail:
    for (size_t i = 0; i < vars.len; i++) fl_lodtensor_fini(&loaded[i]);
    free(loaded);
    FL_VEC_FREE(&vars);
    return st;
}
