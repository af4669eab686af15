/* rows.h: SelectedRows, some rows of a dense tensor (a sparse gradient).
 *
 * An FlSelectedRows stands for the dense tensor of shape [height, value.ne[1..]] that is zero
 * except that value row i is ADDED to row rows[i] (so a row listed twice holds the sum of its
 * two value rows). `rows` is an int64 vector [n], `value` a float tensor [n, ...] of rank >= 2
 * (n may be 0); every row index is in [0, height). It is what lookup_table's is_sparse gradient
 * makes: the ids of a batch in order, duplicates kept, and the gradient rows of its output.
 *
 * Ownership and threads as for FlTensor (tensor.h): the struct owns one reference to each of its
 * two buffers; contents are immutable once published; copying the struct does not retain.
 */
#ifndef FL_ROWS_H
#define FL_ROWS_H

#include "runtime/tensor.h"

typedef struct FlSelectedRows {
    FlTensor rows;  /* int64 [n] */
    FlTensor value; /* float [n, ...] */
    int64_t height; /* the dense tensor's dim 0 */
} FlSelectedRows;

void fl_rows_init(FlSelectedRows *r);
void fl_rows_fini(FlSelectedRows *r); /* NULL is a no-op */
bool fl_rows_has_data(const FlSelectedRows *r);
/* dst shares src's buffers (released first). */
void fl_rows_ref(FlSelectedRows *dst, const FlSelectedRows *src);
/* Checks the invariants above; the error says which one fails ("rows[3] = 12 is outside
 * [0, 10)"). */
FlStatus fl_rows_check(FlErr *e, const FlSelectedRows *r) FL_WARN_UNUSED;
/* The dense tensor r stands for, into *out (a new buffer). */
FlStatus fl_rows_to_dense(FlErr *e, const FlSelectedRows *r, FlTensor *out) FL_WARN_UNUSED;
/* The same rows with each distinct row once, in ascending order, its value the sum of its value
 * rows in their order in xs (xs[0]'s first, then ...): the merge of n SelectedRows of one height
 * and row shape into *out (new buffers). Adding duplicates in order makes the merged value of a
 * row equal, bit for bit, to that row of fl_rows_to_dense. */
FlStatus fl_rows_merge(FlErr *e, const FlSelectedRows *const *xs, int n, FlSelectedRows *out) FL_WARN_UNUSED;

/* Rows of a dense tensor t [H, ...]: out [n, ...] holds rows[i] of t as its row i (rows an int64
 * vector [n] of indices in [0, H)). */
FlStatus fl_rows_gather(FlErr *e, const FlTensor *t, const FlTensor *rows, FlTensor *out) FL_WARN_UNUSED;
/* The reverse: out is a copy of t (a new buffer) whose row rows[i] is row i of sub [n, ...]
 * (rows distinct, or the last one wins). out may be t itself: then, when nobody else holds t's
 * buffer (reference count 1: no var alias, no send in flight), the rows are written in place,
 * without a copy (kernels.h, "In-place mode": the caller ensures no other thread reads t). */
/* Row rows[i] of t becomes row i of sub, in t's own buffer, whoever else holds it: the caller
 * ensures that nobody reads it meanwhile or minds the change (fl_exec_rows_update: only the
 * updated var and the op's call hold it). */
FlStatus fl_rows_scatter_into(FlErr *e, FlTensor *t, const FlTensor *rows, const FlTensor *sub) FL_WARN_UNUSED;
FlStatus fl_rows_scatter(FlErr *e, const FlTensor *t, const FlTensor *rows, const FlTensor *sub,
                         FlTensor *out) FL_WARN_UNUSED;

/* Splits r by row ranges: outs[k] (n of them, released first) holds r's rows in [o_k, o_k +
 * sections[k]), o_k the sum of the sections before k, rebased to o_k (row ids - o_k), in r's
 * order with duplicates kept, and height sections[k]. The sections must add up to r's height.
 * (split_selected_rows: a pserver plan's gradient cut into the parameter's blocks.) */
FlStatus fl_rows_split(FlErr *e, const FlSelectedRows *r, const int64_t *sections, int n,
                       FlSelectedRows *outs) FL_WARN_UNUSED;
/* out = r with its value times scale (a new value buffer; the rows are shared). */
FlStatus fl_rows_scale(FlErr *e, const FlSelectedRows *r, double scale, FlSelectedRows *out) FL_WARN_UNUSED;
/* out = r with coeff * t[rows[i]] (l1: coeff * sign(t[rows[i]])) added to its value row i, so a
 * row listed k times gets the decay k times (Fluid's regularization of a sparse gradient, which
 * looks the gradient's rows up, duplicates kept); t is the dense [height, ...] parameter of r's
 * dtype and row shape. A new value buffer; the rows are shared. */
FlStatus fl_rows_decay(FlErr *e, const FlSelectedRows *r, const FlTensor *t, double coeff, bool l1,
                       FlSelectedRows *out) FL_WARN_UNUSED;
/* xs[0]'s rows, then xs[1]'s, ... (duplicates kept, in order) into *out (new buffers): the
 * SelectedRows of n shares of a batch, as one (an allreduce plan's gathered sparse gradient).
 * Every xs[k] has one height, dtype and row shape. */
FlStatus fl_rows_concat(FlErr *e, const FlSelectedRows *const *xs, int n, FlSelectedRows *out) FL_WARN_UNUSED;
/* The wire form of r: one int64 vector (a header of the height, row count, value dtype and row
 * shape, then the row ids, then the value's bytes), so a SelectedRows travels as one tensor. */
FlStatus fl_rows_pack(FlErr *e, const FlSelectedRows *r, FlTensor *out) FL_WARN_UNUSED;
/* The reverse, into *out (new buffers; released first). A malformed form (bad header, too few
 * words, a row outside the height) is an error saying what is wrong, never a crash. */
FlStatus fl_rows_unpack(FlErr *e, const FlTensor *t, FlSelectedRows *out) FL_WARN_UNUSED;

#endif
