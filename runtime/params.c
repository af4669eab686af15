/* params.c: the --save / --load directory format (see params.h). */
#define _GNU_SOURCE
#include "runtime/params.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static bool safe_name(const char *n) {
    return n[0] && n[0] != '.' && !strchr(n, '/');
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

FlStatus fl_params_write(const char *dir, const FlNamedTensors *v, FlErr *err) {
    FlBuf tmp = {0}, path = {0}, manifest = {0}, file = {0};
    FlStatus st = FL_ERROR;
    fl_buf_printf(&tmp, "%s.tmp.%d", dir, (int)getpid());
    rm_dir(fl_buf_str(&tmp));
    if (mkdir(fl_buf_str(&tmp), 0777) != 0) {
        fl_err(err, "--save: cannot create '%s': %s", fl_buf_str(&tmp), strerror(errno));
        goto fail;
    }
    for (size_t i = 0; i < v->len; i++) {
        const char *name = v->data[i].name;
        const FlTensor *t = &v->data[i].t;
        if (!safe_name(name)) {
            fl_err(err, "--save: var name '%s' cannot be a file name", name);
            goto fail;
        }
        file.len = 0;
        fl_buf_append(&file, MAGIC, 8);
        uint32_t hdr[4] = {1, (uint32_t)t->dtype, (uint32_t)t->ndim, 0};
        fl_buf_append(&file, (const char *)hdr, sizeof hdr);
        fl_buf_append(&file, (const char *)t->ne, sizeof(int64_t) * (size_t)t->ndim);
        fl_buf_append(&file, fl_tensor_data(t), fl_tensor_nbytes(t));
        path.len = 0;
        fl_buf_printf(&path, "%s/%s", fl_buf_str(&tmp), name);
        if (fl_write_file(fl_buf_str(&path), file.data, file.len, err) != FL_OK) goto fail;
        fl_buf_printf(&manifest, "%s\n", name);
    }
    path.len = 0;
    fl_buf_printf(&path, "%s/MANIFEST", fl_buf_str(&tmp));
    if (fl_write_file(fl_buf_str(&path), fl_buf_str(&manifest), manifest.len, err) != FL_OK) goto fail;
    /* swap the new directory into place */
    path.len = 0;
    fl_buf_printf(&path, "%s.old.%d", dir, (int)getpid());
    struct stat sb;
    bool had = stat(dir, &sb) == 0;
    if (had && rename(dir, fl_buf_str(&path)) != 0) {
        fl_err(err, "--save: cannot replace '%s': %s", dir, strerror(errno));
        goto fail;
    }
    if (rename(fl_buf_str(&tmp), dir) != 0) {
        fl_err(err, "--save: cannot create '%s': %s", dir, strerror(errno));
        if (had) (void)rename(fl_buf_str(&path), dir);
        goto fail;
    }
    if (had) rm_dir(fl_buf_str(&path));
    st = FL_OK;
fail:
    if (st != FL_OK) rm_dir(fl_buf_str(&tmp));
    fl_buf_free(&tmp);
    fl_buf_free(&path);
    fl_buf_free(&manifest);
    fl_buf_free(&file);
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
    fl_buf_printf(&path, "%s/%s", dir, v->name);
    size_t len;
    FlErr e2;
    char *data = safe_name(v->name) ? fl_read_file(fl_buf_str(&path), &len, &e2) : NULL;
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
