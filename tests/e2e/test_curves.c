/* test_curves.c: the training curves' picture (tools/curves.h, tools/svg.h) on made-up runs, and
 * the event files' CRC (tools/tfevents.h): a long series is reduced to each pixel column's
 * extremes (the lowest and highest points kept), a NaN breaks a line, a flat or empty run still
 * gives a picture, names are escaped, the scale is logarithmic only for positive values spanning
 * a factor of 30, and CRC32C gives the standard check value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cunit.h"
#include "tools/curves.h"
#include "tools/tfevents.h"

static size_t count(const char *s, const char *pat) {
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, pat)); p += strlen(pat)) n++;
    return n;
}

/* The d attribute of the first series path of phase `phase`. */
static char *path_of(const char *svg, const char *phase) {
    char pat[64];
    snprintf(pat, sizeof pat, "data-phase=\"%s\"", phase);
    const char *p = strstr(svg, pat);
    if (!p) return NULL;
    const char *d = strstr(p, " d=\"");
    if (!d) return NULL;
    d += 4;
    return strndup(d, (size_t)(strchr(d, '"') - d));
}

static void test_reduced(void) {
    const char *names[] = {"loss"};
    FlCurves c;
    fl_curves_init(&c, "long", names, 1);
    for (int s = 1; s <= 20000; s++) {
        double v = 1 + 0.5 * sin(s * 0.37);
        if (s == 7777) v = 9; /* a spike: the column's highest point must stay */
        fl_curves_add(&c, false, 1 + s / 1000, s, &v);
    }
    FlBuf b = {0};
    fl_curves_svg(&c, 1, "long", &b);
    char *d = path_of(fl_buf_str(&b), "train");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    size_t pts = count(d, " ") / 2 + 1;
    CU_ASSERT(pts <= 2 * 760); /* two per pixel column of the plot at most */
    CU_ASSERT(pts >= 760);     /* and every column there */
    /* the spike is kept: its point is far above (a smaller y than) every other one */
    double top = INFINITY, next = INFINITY;
    for (const char *p = d; (p = strpbrk(p, "ML")); p++) {
        double x, y;
        if (sscanf(p + 1, "%lf %lf", &x, &y) != 2) continue;
        if (y < top) next = top, top = y;
        else if (y < next) next = y;
    }
    CU_ASSERT(top < next - 50);
    free(d);
    CU_ASSERT_PTR_NULL(strstr(fl_buf_str(&b), "(log scale)")); /* 0.5 to 9: linear */
    fl_buf_free(&b);
    fl_curves_fini(&c);
}

static void test_nan_flat_empty(void) {
    const char *names[] = {"loss", "a<b&\"c\""};
    FlCurves c[2];
    fl_curves_init(&c[0], "x & <y>", names, 2);
    for (int s = 1; s <= 6; s++) {
        double v[2] = {s == 3 ? NAN : 0.5, 1000.0 / s / s};
        fl_curves_add(&c[0], false, 1, s, v);
    }
    fl_curves_init(&c[1], "empty", names, 1);
    FlBuf b = {0};
    fl_curves_svg(c, 2, "t", &b);
    const char *s = fl_buf_str(&b);
    char *d = path_of(s, "train");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL(count(d, "M"), 2); /* the NaN at step 3 breaks the flat line */
    free(d);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "data-run=\"x &amp; &lt;y&gt;\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, ">a&lt;b&amp;&quot;c&quot; (log scale)<")); /* 1000 to 27.8: 36x */
    CU_ASSERT_EQUAL(count(s, "class=\"series\""), 2 * 2 + 2); /* the empty run: its loss's two lines */
    CU_ASSERT_EQUAL(count(s, "<svg "), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "</svg>\n"));
    fl_buf_free(&b);
    fl_curves_fini(&c[0]);
    fl_curves_fini(&c[1]);
}

static void test_crc32c(void) {
    CU_ASSERT_EQUAL(fl_events_crc32c("123456789", 9), 0xe3069283u); /* the standard check value */
    CU_ASSERT_EQUAL(fl_events_crc32c("", 0), 0u);
    CU_ASSERT_EQUAL(fl_events_mask(0), 0xa282ead8u);
}

int main(void) {
    static const FlTestCase cases[] = {{"reduced", test_reduced}, {"nan_flat_empty", test_nan_flat_empty},
                                       {"crc32c", test_crc32c}};
    return fl_test_run("curves", NULL, NULL, cases, FL_ARRAY_LEN(cases));
}
