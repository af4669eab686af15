/* ops.h: the op table (compiler/ops.def) as data: every primitive op and every derived gradient
 * op with its slots, attributes (types, defaults) and gradient kind.
 *
 * The table is built once (pthread_once) on first use and is immutable afterwards, so it may be
 * read by any number of threads. The runtime links this module too (it reads the table, not the
 * passes).
 */
#ifndef FL_OPS_H
#define FL_OPS_H

#include "base/base.h"
#include "compiler/ir/ir.h"

typedef enum FlGradKind { FL_GRAD_NONE, FL_GRAD_DEFAULT, FL_GRAD_CUSTOM, FL_GRAD_STOP } FlGradKind;

enum {
    FL_OPF_SIDE_EFFECT = 1 << 0, /* never removed, even when its outputs are unused */
    FL_OPF_CONTROL = 1 << 1,     /* runs sub-blocks */
    FL_OPF_OPTIMIZE = 1 << 2,    /* an optimizer update (removed from trainers by the transpiler) */
    FL_OPF_DIST = 1 << 3,        /* talks to other ranks */
    FL_OPF_LONG = 1 << 4,        /* may run long (GEMM): executed in a scheduler blocking region;
                                    gradient ops inherit it */
    FL_OPF_CHAN = 1 << 5,        /* uses goroutines or channels: the executor sets up a scheduler */
    FL_OPF_LOD_KEEP = 1 << 6,    /* its outputs' rows are its inputs' rows: they take the LoD of the first
                                    LoD input (docs/sequences.md) */
    FL_OPF_LOD_ANY = 1 << 7,     /* takes LoD inputs; its outputs have no LoD unless the layer sets
                                    it (reductions, sequence ops). An op with neither flag refuses
                                    a LoD input at compile time */
    FL_OPF_LOD_SAME = 1 << 8,    /* with FL_OPF_LOD_ANY: it combines its LoD inputs row by row (a
                                    CRF's emission and label), so they must be cut into the same
                                    sequences, as a FL_OPF_LOD_KEEP op's (fl_ops_lod_pairs) */
    FL_OPF_STORAGE = 1 << 9,     /* moves tensors of the storage dtypes (float16, int8, uint8:
                                    fl_dtype_is_storage) without computing on them; an op without
                                    it refuses them at compile time (fl_infer_op). Gradient ops
                                    inherit it */
};

typedef enum FlOpId {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) FL_OPID_##id,
#include "compiler/ops.def"
#undef FL_OP
    FL_OPID_COUNT
} FlOpId;

#define FL_OPS_MAX_SLOTS 16
#define FL_OPS_MAX_ATTRS 12

typedef struct FlSlotInfo {
    const char *name;
    bool list;     /* "X*" */
    bool optional; /* "X?" */
} FlSlotInfo;

typedef struct FlAttrInfo {
    const char *name;
    FlAttrType type;
    bool required;
    bool optional; /* "A:T?": may be absent, and then reads as its type's empty value (dflt);
                      fl_ops_fill_defaults leaves it out */
    FlAttr dflt;   /* the default value (name == the attr's name) when !required */
} FlAttrInfo;

typedef struct FlOpInfo {
    const char *name;
    FlOpId id;          /* for a gradient op: the id of its forward op */
    bool is_grad;       /* "<fwd>_grad" */
    FlGradKind grad;    /* forward ops only */
    unsigned flags;
    FlSlotInfo ins[FL_OPS_MAX_SLOTS];
    int nins;
    FlSlotInfo outs[FL_OPS_MAX_SLOTS];
    int nouts;
    FlAttrInfo attrs[FL_OPS_MAX_ATTRS];
    int nattrs;
} FlOpInfo;

/* By name ("mul", "mul_grad"); NULL if no such op. */
const FlOpInfo *fl_ops_find(const char *name);
/* The table entry of op's type (a forward or a gradient op); NULL when the table has none. The
 * op carries the answer after the first call (one load then; any thread may call it). */
const FlOpInfo *fl_ops_of(const FlOpDesc *op);
/* op is the forward op `id` (not its gradient): how passes and the runtime classify ops, never
 * by comparing type names. */
bool fl_ops_is(const FlOpDesc *op, FlOpId id);
/* The table's flags of op's type (0 when unknown). */
unsigned fl_ops_flags(const FlOpDesc *op);
/* The forward op with that id. */
const FlOpInfo *fl_ops_get(FlOpId id);
const FlSlotInfo *fl_ops_in_slot(const FlOpInfo *info, const char *slot);
const FlSlotInfo *fl_ops_out_slot(const FlOpInfo *info, const char *slot);
const FlAttrInfo *fl_ops_attr(const FlOpInfo *info, const char *attr);
/* The LoD rule of an op with several LoD inputs (docs/sequences.md): an FL_OPF_LOD_KEEP or
 * FL_OPF_LOD_SAME forward op combines the rows of its LoD inputs, so each must be cut into the
 * same sequences as the first. fl_ops_lod_pairs appends to out one pair per other LoD input
 * (looked up from block b of p; inputs no block declares are left out) whose offsets are not the
 * first's own vars at every level: those the compiler cannot prove alike. A pair with another
 * lod_level is a compile error; the others are compared when the op runs, and a trainer
 * compares fed sequences before the first step. The caller frees out's data. */
typedef struct FlLodPair {
    const char *slot[2];        /* [0]: the first LoD input's slot, [1]: the other's */
    const FlVarDesc *var[2];    /* their vars (borrowed from the program): lod_level and offsets */
} FlLodPair;
typedef FL_VEC(FlLodPair) FlLodPairs;
void fl_ops_lod_pairs(const FlProgram *p, const FlBlock *b, const FlOpDesc *op, FlLodPairs *out);

/* Exact integers in float attributes: a FLOAT (FLOATS) attribute `A` of the table may have an
 * INTS twin `int_A` (fill_constant's value and int_value, assign_value's values and int_values).
 * When the values given are integers some of which a double cannot hold exactly (beyond
 * +-2^53), the twin holds them all, exactly, and the int dtypes take them from it: an int64
 * value stays exact from the .fl to the tensor. fl_ops_int_twin: the twin of `attr`, or NULL.
 * fl_ops_needs_int_twin: whether v is such an integer. */
const FlAttrInfo *fl_ops_int_twin(const FlOpInfo *info, const char *attr);
bool fl_ops_needs_int_twin(int64_t v);
/* Checks an op against the table: known type, every slot known and required ones present
 * (single slots hold at most one var), attributes known with the right types, required ones
 * present. The message names the op and what is wrong. */
FlStatus fl_ops_check(const FlOpDesc *op, FlErr *e) FL_WARN_UNUSED;
/* Adds every absent attribute that has a default. */
void fl_ops_fill_defaults(FlOpDesc *op);
/* A one-line description of the op (for docs and `flc` listings). */
const char *fl_ops_describe(FlOpId id);
/* The op list as Markdown (docs/ops.md is this text; a test keeps them equal). */
void fl_ops_markdown(FlBuf *out);

/* Number of ops (forward and gradient) and the i-th, for listings (docs, tests). */
size_t fl_ops_count(void);
const FlOpInfo *fl_ops_at(size_t i);

#endif
