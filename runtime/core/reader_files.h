/* reader_files.h: the table of Fluid's open_files (a "recordio" node of Bundle.readers) read from
 * its RecordIO files (runtime/recordio.h), each record the LoDTensor streams (runtime/lodstream.h)
 * of its fields in order, as fluid.recordio_writer writes a batch.
 *
 * The table has one row per record, files in the node's order and records in each file's order;
 * the table is one of records (FlDsTable.records): a record holds a batch of rows of its own (and
 * of a field of LoD level 1 a batch of sequences), checked against the node's declaration: the
 * dtype, the rank, every declared dim (-1 any) and the number of LoD levels.
 *
 * Threads: d->n threads read the files (each file whole, by one thread); the table is the same
 * whatever the number. Errors: a message naming the file and, inside it, the record and its byte
 * (a cut or damaged chunk, a record that is not the declared tensors); the first file in order
 * with an error is the one named. Nothing shared: reentrant.
 */
#ifndef FL_READER_FILES_H
#define FL_READER_FILES_H

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "dataset/dataset.h"

/* The table of recordio node d into *out (the caller's: fl_ds_free); *out is NULL on error. */
FlStatus fl_reader_files_load(const FlReaderDesc *d, FlDsTable **out, FlErr *e) FL_WARN_UNUSED;

/* The same of one file given as its bytes (borrowed), named d->files.data[0] in messages; d's
 * other files are not read. For the fuzz target of the parse (tests/fuzz/fuzz_recordio.c). */
FlStatus fl_reader_files_parse(const FlReaderDesc *d, const void *bytes, size_t len, FlDsTable **out, FlErr *e)
    FL_WARN_UNUSED;

#endif
