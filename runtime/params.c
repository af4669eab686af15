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

#define MAGIC "FLTENSOR"

typedef FL_VEC(const FlVarDesc *) VarList;

/* Persistable dense vars of the main program's global block, in declaration order. */
static void persistables(const FlLoadedProgram *p, VarList *out) {
    const FlBlock *b = fl_ir_block(fl_program_bundle(p)->main, 0);
    for (size_t i = 0; i < b->vars.len; i++)
        if (b->vars.data[i]->persistable && b->vars.data[i]->kind == FL_VAR_DENSE) FL_VEC_PUSH(out, b->vars.data[i]);
}

#define FORMAT_LINE "fluidc checkpoint 2\n"

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

static void rm_dir(const char *dir) {
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

/* Is dir an earlier checkpoint: a MANIFEST whose every entry is a saved tensor file, and no
 * other files (but FORMAT)? If not, *why says what is there instead. */
static bool is_checkpoint(const char *dir, FlBuf *why) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/MANIFEST", dir);
    size_t len;
    FlErr e2;
    char *m = fl_read_file(fl_buf_str(&path), &len, &e2);
    bool ok = m != NULL;
    if (!m) fl_buf_printf(why, "it has no MANIFEST");
    DIR *d = ok ? opendir(dir) : NULL;
    struct dirent *ent;
    while (ok && d && (ent = readdir(d))) {
        const char *n = ent->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "MANIFEST") || !strcmp(n, "FORMAT")) continue;
        bool listed = false;
        size_t k = strlen(n);
        for (const char *l = m; l < m + len && !listed;) {
            const char *nl = memchr(l, '\n', (size_t)(m + len - l));
            size_t ll = nl ? (size_t)(nl - l) : (size_t)(m + len - l);
            listed = ll == k && !memcmp(l, n, k);
            l += ll + 1;
        }
        char magic[8] = {0};
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", dir, n);
        FILE *f = listed ? fopen(fl_buf_str(&path), "rb") : NULL;
        bool tensor = f && fread(magic, 1, 8, f) == 8 && !memcmp(magic, MAGIC, 8);
        if (f) fclose(f);
        if (!tensor) {
            fl_buf_printf(why, "it holds '%s', which is not %s", n, listed ? "a saved tensor" : "in its MANIFEST");
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
    rm_dir(fl_buf_str(&probe));
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
        rm_dir(tmp);
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
        rm_dir(fl_buf_str(&old));
    }
    fl_buf_free(&old);
    return st;
}

FlStatus fl_params_write(const char *dir, const FlNamedTensors *v, FlErr *err) {
    FlBuf tmp = {0}, path = {0}, manifest = {0}, file = {0}, fname = {0};
    FlStatus st = FL_ERROR;
    char *target = save_path(dir, err);
    if (!target) return FL_ERROR;
    fl_buf_printf(&tmp, "%s.tmp.%d", target, (int)getpid());
    rm_dir(fl_buf_str(&tmp));
    if (mkdir(fl_buf_str(&tmp), 0777) != 0) {
        fl_err(err, "--save: cannot create '%s': %s", fl_buf_str(&tmp), strerror(errno));
        goto fail;
    }
    for (size_t i = 0; i < v->len; i++) {
        const char *name = v->data[i].name;
        const FlTensor *t = &v->data[i].t;
        if (!name[0]) {
            fl_err(err, "--save: a var has an empty name");
            goto fail;
        }
        fname.len = 0;
        escape_name(name, &fname);
        file.len = 0;
        fl_buf_append(&file, MAGIC, 8);
        uint32_t hdr[4] = {1, (uint32_t)t->dtype, (uint32_t)t->ndim, 0};
        fl_buf_append(&file, (const char *)hdr, sizeof hdr);
        fl_buf_append(&file, (const char *)t->ne, sizeof(int64_t) * (size_t)t->ndim);
        fl_buf_append(&file, fl_tensor_data(t), fl_tensor_nbytes(t));
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", fl_buf_str(&tmp), fl_buf_str(&fname));
        if (fl_write_file(fl_buf_str(&path), file.data, file.len, err) != FL_OK) goto fail;
        fl_buf_printf(&manifest, "%s\n", fl_buf_str(&fname));
    }
    path.len = 0;
    fl_buf_printf(&path, "%s/FORMAT", fl_buf_str(&tmp));
    if (fl_write_file(fl_buf_str(&path), FORMAT_LINE, strlen(FORMAT_LINE), err) != FL_OK) goto fail;
    path.len = 0;
    fl_buf_printf(&path, "%s/MANIFEST", fl_buf_str(&tmp));
    if (fl_write_file(fl_buf_str(&path), fl_buf_str(&manifest), manifest.len, err) != FL_OK) goto fail;
    test_die_at("save-written");
    if (switch_in(fl_buf_str(&tmp), target, err) != FL_OK) goto fail;
    st = FL_OK;
fail:
    if (st != FL_OK) rm_dir(fl_buf_str(&tmp));
    free(target);
    fl_buf_free(&tmp);
    fl_buf_free(&path);
    fl_buf_free(&manifest);
    fl_buf_free(&file);
    fl_buf_free(&fname);
    return st;
}

FlStatus fl_params_collect(const FlLoadedProgram *p, FlScope *scope, FlNamedTensors *out, FlErr *err) {
    VarList vars = {0};
    persistables(p, &vars);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < vars.len && st == FL_OK; i++) {
        FlNamedTensor nt = {vars.data[i]->name, FL_TENSOR_INIT};
        st = fl_scope_get_tensor(scope, nt.name, &nt.t, err);
        FL_VEC_PUSH(out, nt);
    }
    FL_VEC_FREE(&vars);
    return st;
}

void fl_params_free(FlNamedTensors *v) {
    for (size_t i = 0; i < v->len; i++) fl_tensor_fini(&v->data[i].t);
    FL_VEC_FREE(v);
}

FlStatus fl_params_save(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) {
    FlNamedTensors v = {0};
    FlStatus st = fl_params_collect(p, scope, &v, err);
    if (st == FL_OK) st = fl_params_write(dir, &v, err);
    fl_params_free(&v);
    return st;
}

FlStatus fl_params_read(const char *dir, const FlVarDesc *v, FlTensor *out, FlErr *err) {
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/FORMAT", dir);
    size_t len;
    FlErr e2;
    char *fmt = fl_read_file(fl_buf_str(&path), &len, &e2);
    bool v2 = fmt && len == strlen(FORMAT_LINE) && !memcmp(fmt, FORMAT_LINE, len);
    free(fmt);
    path.len = 0;
    fl_buf_printf(&path, "%s/", dir);
    if (v2) escape_name(v->name, &path);
    else fl_buf_puts(&path, v->name);
    char *data = v2 || safe_name(v->name) ? fl_read_file(fl_buf_str(&path), &len, &e2) : NULL;
    fl_buf_free(&path);
    if (!data) return fl_err(err, "--load %s: no saved value for '%s'", dir, v->name);
    FlStatus st = FL_ERROR;
    uint32_t hdr[4];
    bool ok = len >= 8 + sizeof hdr && memcmp(data, MAGIC, 8) == 0;
    if (ok) memcpy(hdr, data + 8, sizeof hdr);
    ok = ok && hdr[0] == 1 && hdr[1] < FL_DT_COUNT && hdr[2] <= FL_MAX_DIMS;
    int64_t ne[FL_MAX_DIMS];
    size_t off = 8 + sizeof hdr;
    if (ok) {
        ok = len >= off + hdr[2] * sizeof(int64_t);
        if (ok) memcpy(ne, data + off, hdr[2] * sizeof(int64_t));
        off += hdr[2] * sizeof(int64_t);
    }
    if (!ok) {
        fl_err(err, "--load %s: '%s' is not a saved tensor (bad header)", dir, v->name);
        goto done;
    }
    bool same = (int)hdr[2] == v->ndim && (FlDType)hdr[1] == v->dtype;
    for (int k = 0; same && k < v->ndim; k++) same = ne[k] == v->shape[k];
    if (!same) {
        FlBuf want = {0}, got = {0};
        fl_ir_shape_str(v->ndim, v->shape, &want);
        fl_ir_shape_str((int)hdr[2], ne, &got);
        fl_err(err, "--load %s: '%s' is %s %s in the file but %s %s in the program", dir, v->name,
               fl_dtype_name((FlDType)hdr[1]), fl_buf_str(&got), fl_dtype_name(v->dtype), fl_buf_str(&want));
        fl_buf_free(&want);
        fl_buf_free(&got);
        goto done;
    }
    FlTensor t = FL_TENSOR_INIT;
    if (fl_tensor_alloc_uninit(err, &t, v->dtype, v->ndim, ne) != FL_OK) goto done;
    if (len != off + fl_tensor_nbytes(&t)) {
        fl_err(err, "--load %s: '%s' holds %zu bytes of data, expected %zu", dir, v->name, len - off, fl_tensor_nbytes(&t));
        fl_tensor_fini(&t);
        goto done;
    }
    memcpy(fl_tensor_data(&t), data + off, fl_tensor_nbytes(&t));
    fl_tensor_fini(out);
    *out = t;
    st = FL_OK;
done:
    free(data);
    return st;
}

FlStatus fl_params_load(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) {
    VarList vars = {0};
    persistables(p, &vars);
    FlTensor *loaded = fl_xcalloc(vars.len + 1, sizeof *loaded);
    FlStatus st = FL_ERROR;
    size_t n = 0;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fl_err(err, "--load: '%s' is not a directory of saved parameters", dir);
        goto fail;
    }
    for (; n < vars.len; n++) {
        loaded[n] = (FlTensor)FL_TENSOR_INIT;
        if (fl_params_read(dir, vars.data[n], &loaded[n], err) != FL_OK) goto fail;
    }
    /* every var checked: now set them all */
    for (size_t i = 0; i < vars.len; i++) fl_scope_set_tensor(scope, vars.data[i]->name, &loaded[i]);
    st = FL_OK;
fail:
    for (size_t i = 0; i < n && i < vars.len; i++) fl_tensor_fini(&loaded[i]);
    free(loaded);
    FL_VEC_FREE(&vars);
    return st;
}
