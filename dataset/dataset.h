/* dataset.h: paddle.dataset's files, read in Paddle's formats from Paddle's cache folder
 * (docs/driver.md, "Data"). The compiler asks for a reader's fields (fl_ds_layout) when a script
 * names it; the runtime loads its samples (fl_ds_load) when the driver opens it. Nothing is
 * downloaded: a missing file is an error naming it and how to get it.
 *
 * Where: $FLUIDC_DATA_HOME/NAME/ when that is set, else ~/.cache/paddle/dataset/NAME/ (Paddle's
 * DATA_HOME). The readers and what they give, as Paddle's python/paddle/dataset/NAME.py gives it:
 *
 *   uci_housing  train, test   housing.data (506 rows of 14 numbers): features 0..12 become
 *                              (x - mean) / (max - min) over the whole file, the first 80% of
 *                              the rows are train, the rest test; fields x [13] and y [1] (float32)
 *   mnist        train, test   {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz: pixels scaled to
 *                              [-1, 1] (p / 255 * 2 - 1), fields pixel [784] (float32) and label
 *                              [1] (int64)
 *   imikolov     train, test   simple-examples.tgz (Paddle 2's name: imikolov%2Fsimple-examples.tgz),
 *                              its ./simple-examples/data/ptb.{train,valid}.txt: train(word_idx,
 *                              n) gives each line's n-grams of ids over ['<s>', words..., '<e>']
 *                              (words not in word_idx are word_idx['<unk>']), n int64 fields
 *                              [1]; build_dict(min_word_freq) (fl_ds_dict) the words of both
 *                              files seen more than min_word_freq times ('<s>' and '<e>' once a
 *                              line, '<unk>' not counted), by falling count then bytes, and
 *                              '<unk>' last; with data_type 2 (DataType.SEQ) each line of fewer
 *                              than n words (any length when n <= 0) gives two int64 sequence
 *                              fields, src (word_idx['<s>'] and the words) and trg (the words and
 *                              word_idx['<e>'])
 *   imdb         train, test   aclImdb_v1.tar.gz (Paddle 2's name: imdb%2FaclImdb_v1.tar.gz):
 *                              train(word_idx) gives the files aclImdb/train/pos/NAME.txt (label 0)
 *                              then aclImdb/train/neg/NAME.txt (label 1), in the archive's order,
 *                              each as the ids of its words (punctuation removed, ASCII lowered,
 *                              split at blanks; '<unk>''s id for words not in word_idx): fields
 *                              word (an int64 sequence) and label [1] (int64); build_dict(pattern,
 *                              cutoff) the words of the files the pattern matches seen more than
 *                              cutoff times, by falling count then bytes, '<unk>' last
 *                              (word_dict(): train and test, pos and neg, cutoff 150)
 *
 *   cifar        train10,      cifar-10-python.tar.gz (train10: its members named *data_batch*,
 *                test10,       test10: *test_batch*) and cifar-100-python.tar.gz (train100: *train*,
 *                train100,     test100: *test*), in the archive's order, each a pickled dict of a
 *                test100       uint8 numpy array 'data' (rows of 3072 pixels) and a list of
 *                              'labels' (CIFAR-100: 'fine_labels'): fields image [3072] (the
 *                              pixels / 255, float32) and label [1] (int64)

 *   movielens    train, test   ml-1m.zip (Paddle 2's name: movielens%2Fml-1m.zip), its
 *                              ml-1m/{users,movies,ratings}.dat: each rating line (test: those for
 *                              which numpy.random seeded with 0 draws under 0.1, train the others)
 *                              gives user_id, gender_id (0 M, 1 F), age_id (the index in
 *                              age_table), job_id, movie_id (int64 [1] each), category_id and
 *                              movie_title (int64 sequences: ids of the categories and of the
 *                              lowered title words, numbered by their bytes) and score (the rating
 *                              * 2 - 5, float32 [1]); fl_ds_movielens_meta the ids' maxima and
 *                              the two dicts

 *   conll05      test          conll05st/conll05st-tests.tar.gz (gzip files of words and props
 *                              inside) and the dicts wordDict.txt, verbDict.txt, targetDict.txt
 *                              (Paddle 2's names: conll05st%2FwordDict.txt, ...): a sample per
 *                              predicate of each sentence, nine int64 sequence fields of the
 *                              sentence's length: word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2 (the
 *                              words around the predicate, 'bos'/'eos' beyond the sentence, id 0
 *                              for words the dict lacks), verb, mark (1 within two words of the
 *                              predicate) and label (B-/I-/O tags of the bracketed columns);
 *                              fl_ds_dict's "word", "verb", "label" dicts (get_dict()), the label
 *                              dict's tags in the order of their first line of targetDict.txt
 *   wmt14        train, test   wmt14/wmt14.tgz: train(dict_size) gives the pairs of the members
 *                              ending in train/train (test/test) with at most 80 ids a side:
 *                              src_ids ('<s>' words '<e>'), trg_ids ('<s>' words), trg_ids_next
 *                              (words '<e>'), int64 sequences, id 2 for unknown words; dicts "src"
 *                              and "trg" (the first dict_size lines of *src.dict, *trg.dict)
 *   wmt16        train, test, validation
 *                              wmt16/wmt16.tar.gz: train(src_dict_size, trg_dict_size, src_lang)
 *                              (n, n2, lang) the pairs of wmt16/train (test, val), as wmt14's
 *                              fields, '<s>' '<e>' '<unk>' the source dict's; dicts "en" and "de"
 *                              (wmt.c: the cache's LANG_SIZE.dict, else built as Paddle builds it)
 *
 * A table holds every sample of a reader, field by field (a sample is one row of each field);
 * tables are immutable once loaded, so threads may read one at once.
 */
#ifndef FL_DATASET_H
#define FL_DATASET_H

#include <stddef.h>

#include "base/base.h"
#include "compiler/ir/dtype.h"

#define FL_DS_MAX_FIELDS 64 /* conll05's samples have nine; a MultiSlot dataset one per used slot */
#define FL_DS_MAX_GRAM 8   /* imikolov's n-grams: of 1 to 8 words */

typedef struct FlDsField {
    const char *name; /* Paddle's name of the sample's element (static storage) */
    FlDType dtype;    /* FL_DT_FLOAT32 or FL_DT_INT64 */
    size_t width;     /* elements per sample; of a sequence field, per step */
    bool seq;         /* a sequence (imdb's words): each sample has its own number of steps */
} FlDsField;

typedef struct FlDsLayout {
    size_t nfields;
    FlDsField fields[FL_DS_MAX_FIELDS];
} FlDsLayout;

typedef struct FlDsTable {
    FlDsLayout layout;
    size_t rows;
    bool records; /* the records of a file reader (open_files): each row holds a batch of rows of
                     its own in every field (offsets gives them), and a sequence field (seq) a
                     batch of sequences (seq_at and seq_end give them); batches of such rows are
                     their rows and sequences one after the other */
    void *data[FL_DS_MAX_FIELDS]; /* field f: rows * width elements of its dtype, row-major; a
                                     sequence field: offsets[f][rows] * width, the rows' steps one
                                     after the other */
    int64_t *offsets[FL_DS_MAX_FIELDS]; /* a sequence field: row r is steps offsets[f][r] to
                                           offsets[f][r + 1] (rows + 1 of them), else NULL; of
                                           records: row r's rows */
    int64_t *seq_at[FL_DS_MAX_FIELDS];  /* records, a field of sequences: row r's sequences end at
                                           seq_end[f][seq_at[f][r] .. seq_at[f][r + 1]) (rows + 1 of
                                           them), else NULL */
    int64_t *seq_end[FL_DS_MAX_FIELDS]; /* the steps (counted from the field's first) at which its
                                           sequences end, in order */
} FlDsTable;

/* The arguments of a reader, as the module's function takes them: uci_housing and mnist take none
 * (all zero), imikolov a word dict (has_dict; word words[i] has id ids[i]) and n. */
typedef struct FlDsArgs {
    bool has_dict;
    size_t nwords;
    char *const *words;
    const int64_t *ids;
    int64_t n;
    int64_t data_type; /* imikolov's DataType: 0 or 1 NGRAM, 2 SEQ */
    int64_t n2;        /* wmt16: trg_dict_size (n is src_dict_size; wmt14's n its dict_size) */
    const char *lang;  /* wmt16: src_lang ("en" or "de"), else NULL */
} FlDsArgs;

/* The fields of reader `part` of module `name` ("mnist", "train") given args. An unknown module or
 * part, arguments the reader does not take, or a module not read yet, is an error naming it:
 * "paddle.dataset.cifar is not read yet ...". */
FlStatus fl_ds_layout(const char *name, const char *part, const FlDsArgs *args, FlDsLayout *out,
                      FlErr *e) FL_WARN_UNUSED;
/* Reads the samples of reader `part` of module `name` from the cache folder. */
FlStatus fl_ds_load(const char *name, const char *part, const FlDsArgs *args, FlDsTable **out,
                    FlErr *e) FL_WARN_UNUSED;
void fl_ds_free(FlDsTable *t);

/* Calls read(arg, k) once for each file k < nfiles, on up to `threads` threads (this one among
 * them; fewer when threads cannot start), each taking the next file in turn; returns when every
 * call has. For readers of several files (ctr_reader, open_files): read keeps file k's part. */
void fl_ds_read_files(size_t nfiles, size_t threads, void (*read)(void *arg, size_t k), void *arg);
/* paddle.dataset.NAME.fetch(): reads each reader of the module that takes no arguments once, so
 * that a missing or damaged file is an error now. */
FlStatus fl_ds_fetch(const char *name, FlErr *e) FL_WARN_UNUSED;

/* A word dict: word words[i] has id i. */
typedef struct FlDsDict {
    size_t n;
    char **words; /* owned */
} FlDsDict;

/* The word dict of module `name` (its build_dict) with its cutoff argument (imikolov's
 * min_word_freq, imdb's cutoff) and imdb's pattern (a POSIX extended regular expression matched
 * from the start of each file's name; NULL for imikolov), read from the cache folder. conll05's,
 * wmt14's and wmt16's dicts are named by `pattern` (conll05: "word", "verb", "label"; wmt14:
 * "src", "trg"; wmt16: "en", "de"), wmt's with their dict_size as `cutoff`. */
FlStatus fl_ds_dict(const char *name, const char *pattern, int64_t cutoff, FlDsDict *out,
                    FlErr *e) FL_WARN_UNUSED;
void fl_ds_dict_free(FlDsDict *d);

/* What paddle.dataset.movielens gives when a script compiles: max_user_id(), max_movie_id(),
 * max_job_id(), movie_categories() and get_movie_title_dict() (word i has id i). */
typedef struct FlDsMovielens {
    int64_t max_user_id, max_movie_id, max_job_id;
    FlDsDict categories, titles;
} FlDsMovielens;
FlStatus fl_ds_movielens_meta(FlDsMovielens *out, FlErr *e) FL_WARN_UNUSED;
void fl_ds_movielens_fini(FlDsMovielens *m);

/* Fluid's Dataset over MultiSlot text files (multislot.c): the slots of each line, in order. A
 * used slot is a field of the table: width 0 a sparse slot (a sequence of ids or floats), width w
 * > 0 a dense slot of w values a line; width -1 a slot read past (is_used false). */
typedef struct FlDsSlot {
    const char *name;
    bool is_float; /* "float"; else "uint64" (int64 fields) */
    int64_t width;
} FlDsSlot;
FlStatus fl_ds_multislot_layout(const FlDsSlot *slots, size_t n, FlDsLayout *out, FlErr *e) FL_WARN_UNUSED;
/* The instances of the files, one after the other; a line not in the format is an error naming
 * FILE:LINE, the slot and what is wrong. */
FlStatus fl_ds_multislot_load(char *const *files, size_t nfiles, const FlDsSlot *slots, size_t n, FlDsTable **out,
                              FlErr *e) FL_WARN_UNUSED;

/* The files of Fluid's contrib.ctr_reader (ctr.c): 'svm' or 'csv' lines, plain or gzip. Each slot
 * is a field of the table, in order, with its key: csv its field of a line (the label 0, whose
 * slot is "uint64" of width 1), svm its slot id (the label -1); width 0 a sparse slot (ids, a
 * sequence), w > 0 a dense one (w floats, csv only). */
typedef struct FlDsCtr {
    bool csv, gzip;
    size_t threads; /* the read threads (at least 1), each taking the next file */
    char *const *files;
    size_t nfiles;
    const FlDsSlot *slots;
    const int64_t *keys;
    size_t nslots;
} FlDsCtr;
FlStatus fl_ds_ctr_layout(const FlDsCtr *d, FlDsLayout *out, FlErr *e) FL_WARN_UNUSED;
/* The instances of the files, in the list's order; a line not in the format is an error naming
 * FILE:LINE, the slot (or field) and what is wrong, a missing file an error naming it. */
FlStatus fl_ds_ctr_load(const FlDsCtr *d, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;

/* The cache folder of module `name` (malloc'd): $FLUIDC_DATA_HOME/name, else
 * $HOME/.cache/paddle/dataset/name (conll05's: conll05st, as Paddle names it). */
char *fl_ds_dir(const char *name);

/* The path (malloc'd) of file `file` of module `name`'s cache folder, or of `alt` (may be NULL: a
 * name another Paddle version downloads it as) when only that is there; NULL and an error naming
 * the file and how to get it when neither is. */
char *fl_ds_file(const char *name, const char *file, const char *alt, FlErr *e);

#endif
