/* ir.h: the in-memory IR (programs, blocks, vars, ops, attributes), compiled bundles (.flp) and
 * distributed plans (.plan), and their files.
 *
 * This module is the only code that touches the protobuf-c structs generated from fluid.proto:
 * everything else builds and reads these types. The shape follows Paddle Fluid's framework.proto:
 * a program is a list of blocks (block 0 is the global block; every other block has a parent);
 * a block holds vars and an ordered list of ops; an op has a type, named input and output slots
 * each holding a list of var names, and typed attributes, among them BLOCK and BLOCKS that name
 * sub-blocks (of go, while, conditional_block, parallel_for, listen_and_serv). Every var and op
 * carries the source location of the .fl code that made it.
 *
 * Ownership: an FlProgram owns its blocks, a block its vars and ops, an op its slots and attrs,
 * each their strings (copied in). An FlBundle owns its two programs; an FlPlan owns its bundles.
 * Pointers returned by _find/_get/_add stay valid until the owner is freed or the element is
 * removed (adding vars or ops may move the vectors of pointers, never the elements).
 * Thread-safety: none for mutation; a program that no one mutates may be read by any number of
 * threads at once (the runtime does).
 *
 * Files: a .flp or .plan is one protobuf message `FlFile` with a magic string, a format version
 * and either a bundle or a plan. Readers refuse a wrong magic, a newer version, a truncated or
 * corrupt file and a structurally invalid program with a clear message (never a crash).
 */
#ifndef FL_IR_H
#define FL_IR_H

#include "base/base.h"
#include "compiler/ir/dtype.h"

#define FL_IR_MAX_DIMS 8
#define FL_IR_MAX_LOD 4 /* LoD levels a var may have */
/* The newest format this build reads and writes. 3: a bundle may hold a driver program, named
 * programs and the readers it opens (docs/driver.md), and a bundle that holds any is written as version 3; every other file is
 * written as version 2 (FL_IR_FORMAT_BASE), byte for byte as before. 2: the random fills are
 * counter-based (Philox4x32-10, runtime/rng.h) and take shard_offset, and a var may be a
 * SelectedRows; version 1 drew the fills from one sequential stream (docs/ir.md). */
#define FL_IR_FORMAT_VERSION 3
#define FL_IR_FORMAT_BASE 2
#define FL_IR_MAGIC "fluidc"

/* A var's kind (proto enum VarKind; values are part of the format). */
typedef enum FlVarKind {
    FL_VAR_DENSE = 0,   /* a dense tensor */
    FL_VAR_CHANNEL = 1, /* a channel of tensors (elem dtype = dtype; capacity attr) */
    FL_VAR_RAW = 2,     /* anything else the runtime keeps by name (e.g. step scopes) */
    FL_VAR_SELECTED_ROWS = 3, /* some rows of a dense [height, ...] tensor (dtype, shape: that
                               * tensor's): row indices and a value block; a sparse gradient */
    FL_VAR_TENSOR_ARRAY = 4, /* a list of tensors (Fluid's LOD_TENSOR_ARRAY): dtype and shape are
                                its elements'; lod names companion int64 arrays holding each
                                element's offsets, outermost level first */
    FL_VAR_KIND_COUNT
} FlVarKind;

/* A location in the .fl sources: file index into the bundle's source table (-1: none), 1-based
 * line and column, and the length of the span on that line. */
typedef struct FlLoc {
    int32_t file;
    int32_t line, col, len;
} FlLoc;
#define FL_LOC_NONE ((FlLoc){-1, 0, 0, 0})

typedef struct FlVarDesc {
    char *name;
    FlVarKind kind;
    FlDType dtype;
    int ndim;
    int64_t shape[FL_IR_MAX_DIMS]; /* -1 = unknown (the batch dimension) */
    bool persistable;              /* parameters, optimizer state, learning rates */
    bool trainable;                /* a parameter that append_backward differentiates */
    bool stop_gradient;            /* data vars, labels, constants */
    bool fed;                      /* a data var (layers.data) or its offsets: fed by a reader or
                                      the caller, whatever its stop_gradient */
    int64_t capacity;              /* channels: buffer size (0 = unbuffered) */
    int32_t elem_chans;            /* channels: the elements are channels nested this deep
                                      (0: tensors of dtype and shape; 1: channels of them...) */
    int lod_level;                 /* a LoD tensor (sequences): how many levels of offsets */
    char *lod[FL_IR_MAX_LOD];      /* their vars (int64 [nseq + 1]), outermost first; owned */
    FlLoc loc;
} FlVarDesc;

typedef enum FlAttrType {
    FL_ATTR_INT = 0,
    FL_ATTR_FLOAT = 1,
    FL_ATTR_STRING = 2,
    FL_ATTR_BOOL = 3,
    FL_ATTR_INTS = 4,
    FL_ATTR_FLOATS = 5,
    FL_ATTR_STRINGS = 6,
    FL_ATTR_BLOCK = 7,  /* i = block index */
    FL_ATTR_BLOCKS = 8, /* ints = block indices */
    FL_ATTR_TYPE_COUNT
} FlAttrType;

typedef struct FlAttr {
    char *name;
    FlAttrType type;
    int64_t i;     /* INT, BOOL (0/1), BLOCK */
    double f;      /* FLOAT */
    char *s;       /* STRING */
    int64_t *ints; /* INTS, BLOCKS (n elements) */
    double *floats;
    char **strs;
    size_t n;
} FlAttr;

typedef struct FlSlot {
    char *name;  /* "X", "Out", ... */
    char **args; /* var names */
    size_t nargs;
} FlSlot;

typedef struct FlOpDesc {
    char *type; /* set when the op is made, never changed */
    FL_VEC(FlSlot) ins;
    FL_VEC(FlSlot) outs;
    FL_VEC(FlAttr) attrs;
    FlLoc loc;
    int table_idx; /* compiler/ops.h's cache (fl_ops_of): the type's op table entry + 1, 0 until
                      looked up, -1 when the table has no such op; the IR layer never reads it */
} FlOpDesc;

typedef struct FlBlock {
    int idx, parent; /* parent == -1 for block 0 */
    FL_VEC(FlVarDesc *) vars;
    FlMap var_index; /* name -> FlVarDesc* (keys are the vars' own names) */
    FL_VEC(FlOpDesc *) ops;
} FlBlock;

typedef struct FlProgram {
    FL_VEC(FlBlock *) blocks;
} FlProgram;

/* ---- programs, blocks, vars, ops ---- */
FlProgram *fl_ir_program_new(void); /* with block 0 */
void fl_ir_program_free(FlProgram *p);
FlProgram *fl_ir_program_clone(const FlProgram *p);
FlBlock *fl_ir_block_new(FlProgram *p, int parent); /* appended; idx = previous count */
FlBlock *fl_ir_block(const FlProgram *p, int idx);  /* FL_ASSERTs the index */

/* Adds a var to b; NULL if a var of that name already exists in b. Fields start as a dense
 * float32 tensor of rank 0 with FL_LOC_NONE. */
FlVarDesc *fl_ir_var_add(FlBlock *b, const char *name);
FlVarDesc *fl_ir_var_find(const FlBlock *b, const char *name); /* in b only */
/* In b, then its parent, and so on up to block 0. */
FlVarDesc *fl_ir_var_lookup(const FlProgram *p, const FlBlock *b, const char *name);
bool fl_ir_var_remove(FlBlock *b, const char *name);
void fl_ir_var_set_shape(FlVarDesc *v, int ndim, const int64_t *shape);
void fl_ir_var_copy(FlVarDesc *dst, const FlVarDesc *src); /* all but the name */
/* Sets v's LoD to the n offset vars names (n <= FL_IR_MAX_LOD; 0: a dense tensor). */
void fl_ir_var_set_lod(FlVarDesc *v, int n, const char *const *names);
/* dst's kind, dtype and shape become those of the elements of the channel ch (a tensor of its
 * dtype and shape, or with elem_chans a channel one level less deep). */
void fl_ir_var_set_elem(FlVarDesc *dst, const FlVarDesc *ch);

/* The vars a sub-block tree exchanges with the blocks around it, as a control op (if, while,
 * go, select, ...) lists them in its X and Out slots: every name an op of block b, or of a
 * block nested in it through BLOCK/BLOCKS attributes, reads (ins) or writes (outs), unless it
 * is declared in b or in a block between b and outer (exclusive). Writing the Out of a
 * list_index op of b that is declared inside writes the picked var: every item of its X list
 * is an out too. Each name is listed once, in the order of first use; the lists grow across
 * calls (several case blocks of one select) and may be seeded with fl_ir_block_io_add. Names
 * are borrowed from the program, which must outlive io and is not changed. */
typedef struct FlBlockIo {
    FL_VEC(const char *) ins, outs;
    FlMap in_seen, out_seen; /* name -> name, the members of ins and outs */
} FlBlockIo;
void fl_ir_block_io_init(FlBlockIo *io);
void fl_ir_block_io_fini(FlBlockIo *io);
void fl_ir_block_io_add(FlBlockIo *io, bool out, const char *name); /* once each */
void fl_ir_block_io(const FlProgram *p, const FlBlock *outer, const FlBlock *b, FlBlockIo *io);

FlOpDesc *fl_ir_op_append(FlBlock *b, const char *type);
FlOpDesc *fl_ir_op_insert(FlBlock *b, size_t pos, const char *type); /* before ops[pos] */
void fl_ir_op_remove(FlBlock *b, size_t pos);                         /* frees the op */
/* Moves ops [from, len) of b to before ops[to] (to <= from), keeping their order and the order
 * of the ops they pass: [0, to) [from, len) [to, from). */
void fl_ir_ops_move_tail(FlBlock *b, size_t from, size_t to);
FlOpDesc *fl_ir_op_clone(const FlOpDesc *op);
void fl_ir_op_free(FlOpDesc *op);

/* Slots: adding an arg to a slot that does not exist yet creates the slot (slot order is the
 * order of first use). _input/_output return NULL if the slot is absent. */
void fl_ir_op_add_input(FlOpDesc *op, const char *slot, const char *arg);
void fl_ir_op_add_output(FlOpDesc *op, const char *slot, const char *arg);
void fl_ir_op_add_input_slot(FlOpDesc *op, const char *slot);  /* an empty slot */
void fl_ir_op_add_output_slot(FlOpDesc *op, const char *slot);
FlSlot *fl_ir_op_input(const FlOpDesc *op, const char *slot);
FlSlot *fl_ir_op_output(const FlOpDesc *op, const char *slot);
/* The single arg of a slot, or NULL when the slot is absent or empty. */
const char *fl_ir_op_input1(const FlOpDesc *op, const char *slot);
const char *fl_ir_op_output1(const FlOpDesc *op, const char *slot);
void fl_ir_slot_set_arg(FlSlot *s, size_t i, const char *arg); /* replace args[i] */
void fl_ir_slot_clear(FlSlot *s);

/* Attributes: set replaces an attribute of the same name. */
void fl_ir_op_set_int(FlOpDesc *op, const char *name, int64_t v);
void fl_ir_op_set_float(FlOpDesc *op, const char *name, double v);
void fl_ir_op_set_string(FlOpDesc *op, const char *name, const char *v);
void fl_ir_op_set_bool(FlOpDesc *op, const char *name, bool v);
void fl_ir_op_set_ints(FlOpDesc *op, const char *name, const int64_t *v, size_t n);
void fl_ir_op_set_floats(FlOpDesc *op, const char *name, const double *v, size_t n);
void fl_ir_op_set_strings(FlOpDesc *op, const char *name, const char *const *v, size_t n);
void fl_ir_op_set_block(FlOpDesc *op, const char *name, int block);
void fl_ir_op_set_blocks(FlOpDesc *op, const char *name, const int64_t *blocks, size_t n);
FlAttr *fl_ir_op_attr(const FlOpDesc *op, const char *name); /* NULL if absent */
/* Typed getters with a default for an absent attribute (FL_ASSERT on a type mismatch;
 * _get_int also reads a BLOCK index, _get_float also reads an INT). */
int64_t fl_ir_op_get_int(const FlOpDesc *op, const char *name, int64_t dflt);
double fl_ir_op_get_float(const FlOpDesc *op, const char *name, double dflt);
const char *fl_ir_op_get_string(const FlOpDesc *op, const char *name, const char *dflt);
bool fl_ir_op_get_bool(const FlOpDesc *op, const char *name, bool dflt);

/* ---- run spec (what fluid.train(...) records; flrun follows it, flags override) ---- */
typedef struct FlFeedCols {
    char *feed;      /* feed var name */
    FlDType dtype;   /* float32 features, int64 labels */
    int64_t *cols;   /* column indices in the file */
    size_t ncols;
    int lod_level;   /* 0: dense, ncols values per row; 1 or 2: io.sequence(cols[0], levels): the
                        column holds a sequence per row, fed as a LoD tensor and its offsets */
} FlFeedCols;

typedef enum FlReaderPart { FL_PART_ALL = 0, FL_PART_TRAIN = 1, FL_PART_TEST = 2 } FlReaderPart;

typedef struct FlReaderSpec {
    char *path;       /* as written in the .fl, relative to base_dir */
    char *base_dir;   /* directory of the .fl file that called io.csv */
    int64_t skip_rows;
    char sep;
    FL_VEC(FlFeedCols) feeds;
    FL_VEC(char *) normalize; /* feed names */
    FL_VEC(char *) scale_feeds;
    FL_VEC(double) scale_factors;
    bool has_split;
    double split_fraction;
    int64_t split_seed;
    FlReaderPart part;
} FlReaderSpec;

/* A fluid.profiler region around fluid.train(...): the training is profiled. */
typedef struct FlProfileSpec {
    bool present;
    char *state;      /* "CPU"; owned */
    char *sorted_key; /* NULL: Fluid's None (the order of first ends); else a name of
                       * fl_ir_profile_sort_keys; owned */
    char *path;       /* NULL, or profile_path: where the profiled span's trace goes; owned */
} FlProfileSpec;

/* Fluid's sort keys of the profiler's table (sorted_key): [0] is None (NULL), then "calls",
 * "total", "max", "min", "ave" (runtime/prof.h's FlProfSort follows this order). */
#define FL_IR_PROFILE_SORT_KEYS 6
extern const char *const fl_ir_profile_sort_keys[FL_IR_PROFILE_SORT_KEYS];
/* The index of `name` among fl_ir_profile_sort_keys (NULL: 0), or -1. */
int fl_ir_profile_sort_key(const char *name);

typedef struct FlRunSpec {
    bool present;              /* false: run startup then main once */
    FlReaderSpec *reader;      /* owned; NULL if none */
    FlReaderSpec *test_reader; /* owned; NULL if none */
    int64_t batch_size, epochs;
    int64_t seed;              /* shuffling seed (default 0) */
    FL_VEC(char *) fetch_names; /* display names, in order */
    FL_VEC(char *) fetch_vars;  /* the var each name fetches */
    FlProfileSpec profile;      /* a fluid.profiler region around fluid.train */
} FlRunSpec;

void fl_ir_reader_free(FlReaderSpec *r);
FlReaderSpec *fl_ir_reader_clone(const FlReaderSpec *r);

/* One node of a data pipeline of the driver (Bundle.readers; docs/driver.md, "Data"): a
 * paddle.dataset source or a decorator of earlier nodes, which reader_open opens by index. */
typedef struct FlReaderDesc {
    char *kind;                /* "dataset", "shuffle", "batch", "firstn", "chain", "compose",
                                  "buffered", "multislot", "ctr", "recordio", and of a reader of
                                  batches "shuffle_batches", "concat_batches"; owned */
    FL_VEC(int32_t) inputs;    /* the nodes it decorates: indices of earlier readers */
    char *dataset, *part;      /* kind "dataset": the module and its reader; owned, else NULL */
    int64_t n;                 /* shuffle buf_size, batch batch_size, firstn n, buffered size;
                                  dataset: the module's size argument (imikolov's gram length) */
    bool drop_last;            /* batch */
    bool check_alignment;      /* compose */
    FL_VEC(char *) words;      /* dataset: the word dict, word i having id word_ids[i]; owned */
    FL_VEC(int64_t) word_ids;
    int64_t data_type;         /* dataset: imikolov's DataType (2: SEQ); 0: the module's default */
    int64_t n2;                /* dataset: wmt16's trg_dict_size (n: its src_dict_size) */
    char *lang;                /* dataset: wmt16's src_lang; owned, else NULL */
    /* multislot: Fluid's Dataset over MultiSlot files: the files, and per slot of a line its name,
       type ("uint64", "float") and width (-1 unused, 0 sparse, w > 0 dense); owned */
    FL_VEC(char *) files;
    FL_VEC(char *) slot_names;
    FL_VEC(char *) slot_types;
    FL_VEC(int64_t) slot_widths;
    /* ctr: Fluid's contrib.ctr_reader files (files and slots as multislot's, n the read threads):
       per slot its key (csv: its field of a line, the label 0; svm: its slot id, the label -1),
       the line format ("svm", "csv"; owned) and whether the files are gzip */
    FL_VEC(int64_t) slot_keys;
    char *line_format;
    bool gzip;
    /* recordio: Fluid's open_files (files and slots as multislot's, slot types dtype names, n the
       read threads): per slot its declared shape (ranks[i] dims of shape_concat; -1 any) and LoD
       levels (0 or 1), and the passes over the files an epoch reads (at least 1) */
    FL_VEC(int64_t) shape_concat;
    FL_VEC(int64_t) ranks;
    FL_VEC(int64_t) lod_levels;
    int64_t pass_num;
} FlReaderDesc;

void fl_ir_reader_desc_free(FlReaderDesc *r);

/* ---- bundle (.flp) ---- */
/* A program of the bundle besides startup and main, named for the driver's run_program ops. */
typedef struct FlNamedProgram {
    char *name;          /* owned; unique, not "startup", "main" or "driver" */
    FlProgram *program;  /* owned */
} FlNamedProgram;

/* An inference model's feeds and targets (Bundle.inference), in the order of the call that saved it. */
typedef struct FlInferenceSpec {
    FL_VEC(char *) feeds;
    FL_VEC(char *) targets;
} FlInferenceSpec;
void fl_ir_inference_free(FlInferenceSpec *s);

typedef struct FlBundle {
    FlProgram *startup; /* owned */
    FlProgram *main;    /* owned */
    FlRunSpec run;
    FL_VEC(char *) source_paths; /* FlLoc.file indexes this */
    char *role;        /* "local", "trainer", "pserver"; for hand-written MPMD programs the
                          role its program has ("pserver" if it has listen_and_serv) */
    int64_t role_index; /* trainer or pserver number inside a plan */
    FlProgram *driver;  /* owned; NULL: the default driver (startup once, then main once). The
                           script's run-time half (docs/driver.md): its run_program ops run
                           startup and main */
    FL_VEC(FlReaderDesc *) readers; /* owned; the pipelines the driver's reader_open ops open */
    FL_VEC(FlNamedProgram) programs; /* the other programs the driver runs (Program(), clones) */
    FlInferenceSpec *inference; /* owned; NULL, or: an inference model (save_inference_model's
                                   __model__), main its program, its parameters in the file's directory */
    char *load;                 /* owned; NULL, or (a pserver role) the checkpoint it loads its vars from
                                   after its startup program, as flrun --load (load_persistables_for_increment) */
} FlBundle;

FlBundle *fl_ir_bundle_new(void); /* empty startup and main programs */
void fl_ir_bundle_free(FlBundle *b);
FlBundle *fl_ir_bundle_clone(const FlBundle *b);
/* The program a run_program op names: "startup", "main" or one of b->programs; NULL if none. */
const FlProgram *fl_ir_bundle_program(const FlBundle *b, const char *name);
/* Adds p (owned from now on) to b->programs as `name` (copied). */
void fl_ir_bundle_add_program(FlBundle *b, const char *name, FlProgram *p);

/* ---- plan (.plan) ---- */
typedef struct FlPlan {
    char *mode;          /* "sync", "async" or "allreduce" */
    int64_t pservers, trainers;
    FL_VEC(FlBundle *) roles;  /* trainers first (role_index 0..T-1), then pservers */
    FL_VEC(int64_t) rank_role; /* rank -> index into roles */
} FlPlan;

FlPlan *fl_ir_plan_new(void);
void fl_ir_plan_free(FlPlan *p);

/* ---- files ---- */
typedef enum FlFileKind { FL_FILE_BUNDLE = 1, FL_FILE_PLAN = 2 } FlFileKind;

FlStatus fl_ir_bundle_write(const FlBundle *b, const char *path, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ir_plan_write(const FlPlan *p, const char *path, FlErr *e) FL_WARN_UNUSED;
/* Readers' data paths move with the file: in memory a reader's base_dir is absolute (the
 * directory of the .fl that called io.csv); the writers store it relative to the directory of
 * the file they write, and fl_ir_read resolves it against the directory of the file it reads
 * (an absolute base_dir, as older files hold, stays as it is). So a program and its data moved
 * together to another folder or host still train. */
/* Reads a .flp or .plan: exactly one of *bundle / *plan is set on success. */
FlStatus fl_ir_read(const char *path, FlBundle **bundle, FlPlan **plan, FlErr *e) FL_WARN_UNUSED;
/* Points every reader of b at dir instead of its program's directory: paths as written in the
 * .fl resolve against dir (flrun --data-dir: the plan on a shared path, the data elsewhere). */
void fl_ir_bundle_set_data_dir(FlBundle *b, const char *dir);
/* The same from memory (the loader's fuzz target uses it). */
FlStatus fl_ir_decode(const uint8_t *data, size_t len, FlBundle **bundle, FlPlan **plan,
                      FlErr *e) FL_WARN_UNUSED;
/* Encodes to a malloc'ed buffer (*len bytes); deterministic; does not validate (the writers
 * above do). Test hooks for odd headers: compiler/ir/ir_test.h. */
uint8_t *fl_ir_encode_bundle(const FlBundle *b, size_t *len);
/* The format version a writer puts in the file: 3 when a bundle (or a role of the plan) holds a
 * driver, named programs, readers or an inference spec (a version-2 reader would run main once instead), else 2 (a
 * version-1 reader would fill a pserver's blocks with other values than the local program's, and take a SelectedRows for a
 * dense tensor). b or p may be NULL. */
uint32_t fl_ir_format_version(const FlBundle *b, const FlPlan *p);
uint8_t *fl_ir_encode_plan(const FlPlan *p, size_t *len);

/* Structural validation (what the runtime needs to not crash): every block's parent exists and
 * precedes it, BLOCK/BLOCKS attributes name existing blocks other than 0, names are non-empty,
 * enums in range, ndim <= FL_IR_MAX_DIMS, FlLoc.file indexes the source table. Run by the
 * readers; also usable on built programs. Also: a BLOCK/BLOCKS attribute names a block after
 * the op's own block (no control op can run its own block or an ancestor); a plan has
 * trainers >= 1, exactly trainers + pservers roles, a non-empty rank map indexing the roles;
 * run specs have as many fetch vars as names. docs/ir.md lists every rule. The messages say
 * where ("main program: block 1, op 'while': ..."); the readers prefix the file. */
FlStatus fl_ir_validate_program(const FlProgram *p, size_t nsources, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ir_validate_bundle(const FlBundle *b, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ir_validate_plan(const FlPlan *p, FlErr *e) FL_WARN_UNUSED;

/* ---- printing ---- */
/* Readable listing of every block, var and op (`flc show`). */
void fl_ir_show_program(const FlProgram *p, const char *title, const FlBundle *src, FlBuf *out);
void fl_ir_show_bundle(const FlBundle *b, FlBuf *out);
void fl_ir_show_plan(const FlPlan *p, FlBuf *out);
/* Graphviz DOT (`flc dot`): one cluster per block, var and op nodes, data-flow edges, dashed
 * edges from a control op to its sub-blocks. */
void fl_ir_dot_bundle(const FlBundle *b, FlBuf *out);
void fl_ir_dot_plan(const FlPlan *p, FlBuf *out);
/* "[-1, 13]" */
void fl_ir_shape_str(int ndim, const int64_t *shape, FlBuf *out);

#endif
