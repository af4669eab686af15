/* mpi_check: the comparisons behind the MPI acceptance tests (tests/mpi/mpi_test.sh).
 *
 *   mpi_check logs A.csv B.csv TOL [COLUMN...]
 *                                       every row of two flrun logs: same phase, epoch and step,
 *                                       every figure (or only the named columns) within TOL
 *                                       relative
 *   mpi_check params DIRA DIRB TOL [SKIP...]
 *                                       every var saved in DIRA (--save) equals DIRB's within TOL
 *                                       relative (to the larger magnitude, floor 1e-3 times the
 *                                       var's largest magnitude in DIRB, when above 1); vars whose
 *                                       names contain a SKIP string are listed, not compared
 *                                       (state each trainer keeps for itself: trainer 0 saves its
 *                                       own)
 *   mpi_check touched DIRA DIRB VAR IDS the table VAR [H, ...] saved in DIRA differs from DIRB's
 *                                       only in rows whose index the file IDS lists (one per
 *                                       line): the others are bit for bit equal, and some listed
 *                                       rows changed (an async sparse update touched them only)
 *   mpi_check min LOG COLUMN MIN        the last test row's COLUMN is at least MIN
 *   mpi_check falls LOG                 the last train row's loss is below the first's
 *   mpi_check spoil IN OUT WHAT         writes plan IN spoiled as WHAT says to OUT, unvalidated
 *                                       (the bad plans of the failure tests): mode=NAME (the
 *                                       plan's mode), ranks=N (its rank map cut or padded with
 *                                       role 0 to N entries), badop=K (role K's main program
 *                                       gets an op of no known type: it fails to prepare)
 *   mpi_check role PLAN K OUT.flp       writes role K of PLAN as a program of its own (a .flp
 *                                       that announces its role in an MPMD job)
 *
 * Prints what it compared and the worst difference; exit 0 when the check holds, 1 otherwise.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"

#define MAXCOL 16
#define MAXROW 100000

typedef struct Row {
    char phase[8];
    long epoch, step;
    double v[MAXCOL]; /* loss, then the other figures */
    int nv;
} Row;

typedef struct Log {
    char header[512];
    Row *rows;
    int n;
} Log;

static int read_log(const char *path, Log *l) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "mpi_check: cannot open '%s'\n", path);
        return -1;
    }
    l->rows = calloc(MAXROW, sizeof *l->rows);
    l->n = 0;
    char line[4096];
    if (!fgets(l->header, sizeof l->header, f)) l->header[0] = 0;
    while (fgets(line, sizeof line, f) && l->n < MAXROW) {
        Row *r = &l->rows[l->n];
        char *save = NULL, *tok = strtok_r(line, ",\n", &save);
        int col = 0;
        for (; tok; tok = strtok_r(NULL, ",\n", &save), col++) {
            if (col == 0) snprintf(r->phase, sizeof r->phase, "%s", tok);
            else if (col == 2) r->epoch = atol(tok);
            else if (col == 3) r->step = atol(tok);
            else if (col >= 4 && r->nv < MAXCOL) r->v[r->nv++] = strtod(tok, NULL);
        }
        if (col >= 5) l->n++;
    }
    fclose(f);
    return 0;
}

static double rel(double a, double b, double floor) {
    double m = fmax(fmax(fabs(a), fabs(b)), floor);
    return fabs(a - b) / m;
}

static int column_of(const Log *l, const char *col) {
    /* header: phase,rank,epoch,step,loss,... -> value index = column - 4 */
    char h[512];
    snprintf(h, sizeof h, "%s", l->header);
    char *save = NULL;
    int c = 0;
    for (char *tok = strtok_r(h, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save), c++)
        if (!strcmp(tok, col)) return c - 4;
    return -1;
}

/* cols: the names of the columns to compare (ncols of them; none: every column). */
static int check_logs(const char *a, const char *b, double tol, char **cols, int ncols) {
    Log la, lb;
    if (read_log(a, &la) || read_log(b, &lb)) return 1;
    bool use[MAXCOL];
    for (int k = 0; k < MAXCOL; k++) use[k] = ncols == 0;
    for (int c = 0; c < ncols; c++) {
        int k = column_of(&la, cols[c]);
        if (k < 0 || k >= MAXCOL || column_of(&lb, cols[c]) != k) {
            printf("logs: no column '%s' at the same place in both logs\n", cols[c]);
            return 1;
        }
        use[k] = true;
    }
    int bad = 0;
    if (la.n != lb.n) {
        printf("logs: %s has %d rows, %s has %d\n", a, la.n, b, lb.n);
        return 1;
    }
    double worst = 0;
    int worst_row = -1;
    for (int i = 0; i < la.n; i++) {
        Row *x = &la.rows[i], *y = &lb.rows[i];
        if (strcmp(x->phase, y->phase) || x->epoch != y->epoch || x->step != y->step || x->nv != y->nv) {
            printf("logs: row %d differs: %s %ld %ld vs %s %ld %ld\n", i + 2, x->phase, x->epoch, x->step, y->phase,
                   y->epoch, y->step);
            return 1;
        }
        for (int k = 0; k < x->nv; k++) {
            if (!use[k]) continue;
            double d = rel(x->v[k], y->v[k], 1e-12);
            if (!(d <= tol)) bad++;
            if (!(d <= worst)) {
                worst = d;
                worst_row = i;
            }
        }
    }
    printf("logs: %d rows compared (%s), worst relative difference %.3g (row %d), tolerance %g\n", la.n,
           ncols ? "the named columns" : "every column", worst,
           worst_row + 2, tol);
    free(la.rows);
    free(lb.rows);
    return bad ? 1 : 0;
}

/* One saved var: FLTENSOR, u32 version, dtype, ndim, reserved, i64 dims, float32 data. */
static float *read_var(const char *dir, const char *name, int64_t *n) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char magic[8];
    uint32_t h[4];
    float *data = NULL;
    /* float32 (dtype 0) or int64 (dtype 3: step counters), read as floats */
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "FLTENSOR", 8) || fread(h, 4, 4, f) != 4 ||
        (h[1] != 0 && h[1] != 3) || h[2] > 8)
        goto out;
    int64_t dims[8], numel = 1;
    if (fread(dims, 8, h[2], f) != h[2]) goto out;
    for (uint32_t i = 0; i < h[2]; i++) numel *= dims[i];
    data = malloc((size_t)numel * sizeof *data + 1);
    for (int64_t i = 0; i < numel; i++) {
        int64_t iv;
        if (h[1] == 3 ? fread(&iv, sizeof iv, 1, f) != 1 : fread(&data[i], sizeof *data, 1, f) != 1) {
            free(data);
            data = NULL;
            goto out;
        }
        if (h[1] == 3) data[i] = (float)iv;
    }
    *n = numel;
out:
    fclose(f);
    return data;
}

static int check_params(const char *a, const char *b, double tol, char **skip, int nskip) {
    char path[2048], name[1024];
    snprintf(path, sizeof path, "%s/MANIFEST", a);
    FILE *m = fopen(path, "r");
    if (!m) {
        printf("params: no %s\n", path);
        return 1;
    }
    int bad = 0, nvars = 0;
    double worst = 0;
    while (fgets(name, sizeof name, m)) {
        name[strcspn(name, "\n")] = 0;
        if (!name[0]) continue;
        bool skipped = false;
        for (int k = 0; k < nskip; k++) skipped = skipped || strstr(name, skip[k]);
        if (skipped) {
            printf("params: %-16s not compared (each trainer's own)\n", name);
            continue;
        }
        int64_t na = 0, nb = 0;
        float *x = read_var(a, name, &na), *y = read_var(b, name, &nb);
        if (!x || !y || na != nb) {
            printf("params: '%s' is missing or differs in size (%lld vs %lld elements)\n", name, (long long)na,
                   (long long)nb);
            bad++;
        } else {
            double w = 0, big = 1; /* the floor: 1e-3 of the var's scale, at least 1e-3 */
            for (int64_t i = 0; i < nb; i++) big = fmax(big, fabs(y[i]));
            for (int64_t i = 0; i < na; i++) w = fmax(w, rel(x[i], y[i], 1e-3 * big));
            printf("params: %-16s %6lld elements, worst relative difference %.3g\n", name, (long long)na, w);
            if (!(w <= tol)) bad++;
            worst = fmax(worst, w);
        }
        nvars++;
        free(x);
        free(y);
    }
    fclose(m);
    printf("params: %d vars compared, worst %.3g, tolerance %g\n", nvars, worst, tol);
    return bad || nvars == 0 ? 1 : 0;
}

static int check_touched(const char *a, const char *b, const char *var, const char *ids_path) {
    int64_t na = 0, nb = 0;
    float *x = read_var(a, var, &na), *y = read_var(b, var, &nb);
    FILE *f = fopen(ids_path, "r");
    int rc = 1;
    if (!x || !y || na != nb || !f) {
        printf("touched: cannot read '%s' of both checkpoints (%lld, %lld elements) or '%s'\n", var, (long long)na,
               (long long)nb, ids_path);
        goto out;
    }
    /* the table's height: dim 0 of the saved shape (read_var's layout) */
    char path[2048], magic[8];
    snprintf(path, sizeof path, "%s/%s", a, var);
    FILE *vf = fopen(path, "rb");
    uint32_t h[4] = {0};
    int64_t d0 = 0;
    bool ok = vf && fread(magic, 1, 8, vf) == 8 && fread(h, 4, 4, vf) == 4 && h[2] >= 1 && fread(&d0, 8, 1, vf) == 1 &&
              d0 > 0 && na % d0 == 0;
    if (vf) fclose(vf);
    if (!ok) {
        printf("touched: cannot read the shape of '%s'\n", path);
        goto out;
    }
    int64_t w = na / d0, listed = 0, changed = 0, bad = 0;
    bool *mark = calloc((size_t)d0, sizeof *mark);
    long long id;
    while (fscanf(f, "%lld", &id) == 1)
        if (id >= 0 && id < d0 && !mark[id]) mark[id] = true, listed++;
    for (int64_t r = 0; r < d0; r++) {
        bool diff = memcmp(x + r * w, y + r * w, (size_t)w * sizeof *x) != 0;
        if (diff && mark[r]) changed++;
        if (diff && !mark[r]) {
            if (!bad) printf("touched: row %lld of '%s' changed, but no id names it\n", (long long)r, var);
            bad++;
        }
    }
    free(mark);
    printf("touched: '%s' [%lld rows]: %lld rows listed, %lld of them changed, %lld others changed\n", var,
           (long long)d0, (long long)listed, (long long)changed, (long long)bad);
    rc = bad == 0 && changed > 0 ? 0 : 1;
out:
    if (f) fclose(f);
    free(x);
    free(y);
    return rc;
}

static int spoil(const char *in, const char *out, const char *what) {
    FlErr e = {{0}};
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    if (fl_ir_read(in, &b, &p, &e) != FL_OK || !p) {
        fprintf(stderr, "spoil: %s\n", p ? e.msg : "not a plan");
        fl_ir_bundle_free(b);
        return 1;
    }
    long n = 0;
    if (!strncmp(what, "mode=", 5)) {
        free(p->mode);
        p->mode = fl_xstrdup(what + 5);
    } else if (sscanf(what, "ranks=%ld", &n) == 1 && n >= 0) {
        while (p->rank_role.len > (size_t)n) p->rank_role.len--;
        while (p->rank_role.len < (size_t)n) FL_VEC_PUSH(&p->rank_role, 0);
    } else if (sscanf(what, "badop=%ld", &n) == 1 && n >= 0 && (size_t)n < p->roles.len) {
        fl_ir_op_append(p->roles.data[n]->main->blocks.data[0], "no_such_op");
    } else {
        fprintf(stderr, "spoil: unknown spoiling '%s'\n", what);
        fl_ir_plan_free(p);
        return 2;
    }
    size_t len = 0;
    uint8_t *data = fl_ir_encode_plan(p, &len);
    FILE *f = fopen(out, "wb");
    int rc = f && fwrite(data, 1, len, f) == len ? 0 : 1;
    if (f && fclose(f) != 0) rc = 1;
    if (rc) fprintf(stderr, "spoil: cannot write '%s'\n", out);
    free(data);
    fl_ir_plan_free(p);
    return rc;
}

static int role(const char *in, long k, const char *out) {
    FlErr e = {{0}};
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    int rc = 1;
    if (fl_ir_read(in, &b, &p, &e) != FL_OK || !p) fprintf(stderr, "role: %s\n", p ? e.msg : "not a plan");
    else if (k < 0 || (size_t)k >= p->roles.len) fprintf(stderr, "role: the plan has no role %ld\n", k);
    else if (fl_ir_bundle_write(p->roles.data[k], out, &e) != FL_OK) fprintf(stderr, "role: %s\n", e.msg);
    else rc = 0;
    fl_ir_bundle_free(b);
    fl_ir_plan_free(p);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "role")) return role(argv[2], atol(argv[3]), argv[4]);
    if (argc == 5 && !strcmp(argv[1], "spoil")) return spoil(argv[2], argv[3], argv[4]);
    if (argc >= 5 && !strcmp(argv[1], "logs")) return check_logs(argv[2], argv[3], atof(argv[4]), argv + 5, argc - 5);
    if (argc >= 5 && !strcmp(argv[1], "params"))
        return check_params(argv[2], argv[3], atof(argv[4]), argv + 5, argc - 5);
    if (argc == 6 && !strcmp(argv[1], "touched")) return check_touched(argv[2], argv[3], argv[4], argv[5]);
    if (argc == 5 && !strcmp(argv[1], "min")) {
        Log l;
        if (read_log(argv[2], &l)) return 1;
        int k = column_of(&l, argv[3]);
        for (int i = l.n - 1; i >= 0 && k >= 0; i--)
            if (!strcmp(l.rows[i].phase, "test")) {
                double v = l.rows[i].v[k];
                printf("min: last test %s = %g (at least %s)\n", argv[3], v, argv[4]);
                return v >= atof(argv[4]) ? 0 : 1;
            }
        printf("min: no test row with column '%s'\n", argv[3]);
        return 1;
    }
    if (argc == 3 && !strcmp(argv[1], "falls")) {
        Log l;
        if (read_log(argv[2], &l)) return 1;
        int first = -1, last = -1;
        for (int i = 0; i < l.n; i++)
            if (!strcmp(l.rows[i].phase, "train")) {
                if (first < 0) first = i;
                last = i;
            }
        if (first < 0) {
            printf("falls: no train rows\n");
            return 1;
        }
        printf("falls: loss %g at step %ld, %g at step %ld\n", l.rows[first].v[0], l.rows[first].step,
               l.rows[last].v[0], l.rows[last].step);
        return l.rows[last].v[0] < l.rows[first].v[0] ? 0 : 1;
    }
    fprintf(stderr, "usage: mpi_check logs A B TOL [COLUMN...] | params DIRA DIRB TOL [SKIP...] | min LOG COLUMN MIN | falls LOG | "
                    "spoil IN OUT WHAT | role PLAN K OUT | touched DIRA DIRB VAR IDS\n");
    return 2;
}
