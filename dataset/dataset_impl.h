/* dataset_impl.h: what the readers of dataset/ share (dataset.c): the cache's files, tables, tar
 * archives and word counts. Not a public header. */
#ifndef FL_DATASET_IMPL_H
#define FL_DATASET_IMPL_H

#include <zlib.h>

#include "dataset/dataset.h"

/* Reads file `file` of module `name` whole (gunzipped when it is gzip); a missing file is an
 * error naming it and how to get it. With `alt` (may be NULL), a missing
 * `file` is looked for under that name too (a name another Paddle version downloads it as). */
FlStatus fl_ds_read(const char *name, const char *file, const char *alt, char **out,
                    size_t *len, FlErr *e) FL_WARN_UNUSED;
/* Reads the rest of an open zlib file whole (NUL-terminated, *len bytes before the NUL) and
 * closes it; a read error is an error naming `shown` (the file as a message names it). */
FlStatus fl_ds_gz_read_all(gzFile f, const char *shown, char **out, size_t *len, FlErr *e) FL_WARN_UNUSED;
/* A table of `rows` rows: the data of each plain field allocated (zeros), and the offsets of each
 * sequence field, whose data (malloc'd) the loader sets. */
FlDsTable *fl_ds_table_new(const FlDsLayout *l, size_t rows);

/* The values of one field of a table over the lines read (multislot.c, ctr.c): floats or ids,
 * and a sequence field's offsets (off starts with 0, one more entry a line). */
typedef struct FlDsCol {
    FL_VEC(float) f;
    FL_VEC(int64_t) u;
    FL_VEC(int64_t) off;
} FlDsCol;
/* A table of layout l (a column per field) of `rows` rows from the columns; fl_ds_cols_free
 * frees n columns and the array (NULL: nothing). */
FlDsTable *fl_ds_cols_table(const FlDsLayout *l, const FlDsCol *cols, size_t rows);
void fl_ds_cols_free(FlDsCol *cols, size_t n);
/* Calls fn on each line of text (len bytes with a NUL past them), the line NUL-terminated in
 * place without its '\n', with its 1-based number; fn returns FL_ERROR with e set to stop. A NUL
 * byte in a line is an error naming FILE:LINE and saying `what` (the kind of file) is text. */
typedef FlStatus (*FlDsLineFn)(void *arg, const char *file, size_t lineno, char *line, FlErr *e);
FlStatus fl_ds_each_line(const char *file, char *text, size_t len, const char *what, FlDsLineFn fn, void *arg,
                         FlErr *e) FL_WARN_UNUSED;

/* Calls fn for each file of a tar archive in memory, in the archive's order, with its name (a
 * leading "./" left out; not NUL-terminated) and its data; fn returns 0 to go on, 1 to stop, -1
 * for an error it has set in e. A damaged archive is an error naming `what`. */
typedef int (*FlDsTarFn)(void *arg, const char *name, size_t nlen, const char *data, size_t size);
FlStatus fl_ds_tar_each(const char *tar, size_t len, const char *what, FlDsTarFn fn, void *arg,
                        FlErr *e) FL_WARN_UNUSED;

/* Member `member` of a tar archive in memory (ustar, GNU long names, pax paths; a leading "./"
 * of either name does not count): *data and *size, pointing into tar. Not found is an error
 * naming `what` (the archive) and the member. */
FlStatus fl_ds_tar_member(const char *tar, size_t len, const char *member, const char *what, const char **data,
                          size_t *size, FlErr *e) FL_WARN_UNUSED;

/* Word counts: words (borrowed byte strings) and how often each was seen. */
typedef struct FlDsWord {
    const char *w;
    size_t len;
    int64_t count;
} FlDsWord;
typedef struct FlDsCount {
    FlMap index; /* word -> its 1-based slot in words */
    FL_VEC(FlDsWord) words;
} FlDsCount;
void fl_ds_count_add(FlDsCount *c, const char *w, size_t len);
/* The words seen more than `cutoff` times, by falling count then bytes (Python's sort by (-count,
 * word)), with `last` (if not NULL) appended: a dict. */
void fl_ds_count_dict(const FlDsCount *c, int64_t cutoff, const char *last, FlDsDict *out);
void fl_ds_count_fini(FlDsCount *c);

/* Python's bytes.split(): the next blank-separated token of [*p, end), NULL at the end. */
const char *fl_ds_token(const char **p, const char *end, size_t *len);

/* The modules beyond uci_housing and mnist (imikolov.c, imdb.c). */
void fl_ds_imikolov_layout(const FlDsArgs *a, FlDsLayout *l);
FlStatus fl_ds_imikolov_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ds_imikolov_dict(int64_t min_word_freq, FlDsDict *out, FlErr *e) FL_WARN_UNUSED;
void fl_ds_imdb_layout(const FlDsArgs *a, FlDsLayout *l);
FlStatus fl_ds_imdb_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ds_imdb_dict(const char *pattern, int64_t cutoff, FlDsDict *out, FlErr *e) FL_WARN_UNUSED;
/* conll05.c and wmt.c. conll05's dicts are "word", "verb" and "label"; wmt14's "src" and "trg" of
 * dict_size words, wmt16's a language's ("en", "de"). */
void fl_ds_conll05_layout(const FlDsArgs *a, FlDsLayout *l);
FlStatus fl_ds_conll05_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ds_conll05_dict(const char *which, FlDsDict *out, FlErr *e) FL_WARN_UNUSED;
void fl_ds_wmt_layout(const FlDsArgs *a, FlDsLayout *l);
FlStatus fl_ds_wmt14_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ds_wmt16_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_ds_wmt_dict(const char *name, const char *which, int64_t dict_size, FlDsDict *out,
                        FlErr *e) FL_WARN_UNUSED;

/* Python pickles (pickle.c), read as data: a tree of nodes in an arena. Python 2's str and
 * Python 3's bytes are FL_PK_BYTES, unicode FL_PK_STR (UTF-8); a REDUCE or NEWOBJ is a
 * FL_PK_CALL of items[0] (the callable) with items[1] (its argument tuple) and, after a BUILD,
 * its state; a global names module `s` and `name`. */
typedef enum {
    FL_PK_NONE, FL_PK_BOOL, FL_PK_INT, FL_PK_FLOAT, FL_PK_BYTES, FL_PK_STR, FL_PK_TUPLE, FL_PK_LIST,
    FL_PK_DICT, FL_PK_GLOBAL, FL_PK_CALL, FL_PK_KIND_COUNT
} FlPkKind;
typedef struct FlPk FlPk;
struct FlPk {
    FlPkKind kind;
    int64_t i;            /* BOOL, INT */
    double f;             /* FLOAT */
    const char *s;        /* BYTES, STR: the bytes (len of them); GLOBAL: the module */
    size_t len;
    const char *name;     /* GLOBAL: the name */
    FlPk **items;         /* TUPLE, LIST; DICT: keys and values alternating; CALL: callable, args */
    size_t n, cap;
    FlPk *state;          /* CALL: what BUILD gave it, else NULL */
};
/* The object that pickle `data` holds; its nodes come from `a`, its strings point into data. A
 * pickle Python would not read (a truncated one, an unknown opcode) is an error naming `what`
 * and the byte. */
FlStatus fl_ds_pickle_load(FlArena *a, const char *data, size_t len, const char *what, FlPk **out,
                           FlErr *e) FL_WARN_UNUSED;
/* Whether o is a str or bytes equal to s; a dict's value under such a key, else NULL; whether o
 * is the global module.name. */
bool fl_ds_pk_is_str(const FlPk *o, const char *s);
FlPk *fl_ds_pk_find(const FlPk *dict, const char *key);
bool fl_ds_pk_is_global(const FlPk *o, const char *module, const char *name);

/* paddle.dataset.cifar and movielens (cifar.c, movielens.c). */
void fl_ds_cifar_layout(const FlDsArgs *a, FlDsLayout *l);
FlStatus fl_ds_cifar_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;
void fl_ds_movielens_layout(const FlDsArgs *a, FlDsLayout *l);
FlStatus fl_ds_movielens_load(const char *part, const FlDsArgs *a, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;

#endif
