/* tfevents.h: TensorBoard event files (flrun --tensorboard DIR): scalars per step in the
 * records TensorFlow's summary writers make, so `tensorboard --logdir DIR` draws them.
 *
 * A file (DIR/events.out.tfevents.<seconds>.<host>.<pid>, new: O_EXCL) is a sequence of records,
 * each (TensorFlow's TFRecord framing, all little-endian):
 *
 *     uint64 length
 *     uint32 masked CRC32C of the 8 length bytes
 *     byte   data[length]            an Event (tools/tfevents.proto), protobuf-encoded
 *     uint32 masked CRC32C of data
 *
 * where CRC32C is the CRC-32 of the Castagnoli polynomial (reflected 0x82F63B78, iSCSI's) and a
 * CRC is masked as ((crc >> 15) | (crc << 17)) + 0xa282ead8. The first record is an Event with
 * file_version "brain.Event:2"; then each fl_events_scalars call is one Event at its step with a
 * Summary of tagged simple values. Records are written and flushed as they come, so TensorBoard
 * shows a run while it trains, and a run that fails leaves the records written before it.
 *
 * This module is the one that touches the generated protobuf-c structs of tfevents.proto.
 * Errors name the file. One thread at a time per file.
 */
#ifndef FL_TFEVENTS_H
#define FL_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

typedef struct FlEvents FlEvents;

/* Makes DIR when it does not exist (its parent must), then a new event file in it, with its
 * first record. Errors: DIR exists and is not a directory, cannot be made, the file cannot be
 * made or written. */
FlStatus fl_events_open(const char *dir, FlEvents **out, FlErr *e) FL_WARN_UNUSED;
/* The event file's path (owned by ev). */
const char *fl_events_path(const FlEvents *ev);
/* One Event at `step` (wall_time: seconds since the epoch) holding the n scalars tags[i] =
 * values[i]; written and flushed. Errors: the write fails. */
FlStatus fl_events_scalars(FlEvents *ev, int64_t step, double wall_time, const char *const *tags, const double *values,
                           size_t n, FlErr *e) FL_WARN_UNUSED;
/* Closes the file (NULL: a no-op). Errors: the last write fails. */
FlStatus fl_events_close(FlEvents *ev, FlErr *e) FL_WARN_UNUSED;
/* Closes the file of a run that failed (NULL: a no-op): the records written stay, nothing is
 * reported. */
void fl_events_abandon(FlEvents *ev);

/* The CRC32C of n bytes, and its masked form as the records hold it (exposed for tests). */
uint32_t fl_events_crc32c(const void *data, size_t n);
uint32_t fl_events_mask(uint32_t crc);

#endif
