/* chan.h: channels and select with Go's semantics, for goroutines (runtime/sched/sched.h) and for
 * plain OS threads alike.
 *
 * A channel carries elements of a fixed size (elem_size bytes, 0 allowed: chan struct{}). Values
 * are MOVED: a successful send takes the elem_size bytes at val (for a reference-counted tensor:
 * the reference the sender held), and the receiver gets them, whole, in its out buffer. A send that
 * fails leaves the value with the sender. Values still buffered when the channel is freed, or
 * received with out == NULL, are given to the drop callback (e.g. release the tensor).
 *
 * Semantics (Go's):
 *   - cap 0: unbuffered; a send completes when a receiver takes the value (rendezvous).
 *   - cap n: a FIFO buffer; send blocks while it is full, receive while it is empty.
 *   - close wakes every waiter: blocked receivers get the zero value (all bytes 0) with ok=false,
 *     blocked senders fail with "send on closed channel".
 *   - receive from a closed channel drains the buffer, then yields zero with ok=false at once.
 *   - send on a closed channel: FL_ERROR "send on closed channel"; close of a closed channel:
 *     "close of closed channel"; close of NULL: "close of nil channel".
 *   - a NULL channel blocks a send or receive forever (deadlock-detectable) and is never ready in
 *     a select.
 *   - select chooses uniformly at random among ready cases (a per-goroutine generator); with no
 *     ready case it takes default when there is one, else blocks until one is ready; a select
 *     with no cases (or only NULL channels) and no default blocks forever.
 * A blocking operation may also fail with "deadlock: all goroutines are blocked" or when the
 * scheduler shuts down (see sched.h).
 *
 * Memory model: everything the sender wrote before a send happens-before what the receiver does
 * after the receive completes; a close happens-before a receive that observes it (ok=false); for
 * an unbuffered channel the receive also happens-before the send completes; the k-th receive from
 * a channel of capacity C happens-before the (k+C)-th send completes.
 *
 * Thread-safety: every operation may run on any number of threads and goroutines at once.
 * Channels are reference-counted (atomically): fl_chan_new returns one reference.
 */
#ifndef FL_CHAN_H
#define FL_CHAN_H

#include "base/base.h"

typedef struct FlChan FlChan;

/* Called for an element that nobody will receive: buffered at the last release, or received with
 * out == NULL. elem points at elem_size bytes. */
typedef void (*FlChanDrop)(void *elem, void *ud);

/* A channel of elem_size-byte elements with a buffer of cap elements. drop may be NULL. Returns
 * NULL with a message when the buffer cannot be allocated. */
FlChan *fl_chan_new(size_t elem_size, size_t cap, FlChanDrop drop, void *ud, FlErr *e) FL_WARN_UNUSED;
void fl_chan_retain(FlChan *c);
void fl_chan_release(FlChan *c); /* NULL is a no-op; the last release drops buffered values */

/* Sends the elem_size bytes at val (moved into the channel on success). */
FlStatus fl_chan_send(FlChan *c, const void *val, FlErr *e) FL_WARN_UNUSED;
/* Receives into out (elem_size bytes; NULL drops the value); *ok (may be NULL) is true for a sent
 * value, false for the zero value of a closed, drained channel. */
FlStatus fl_chan_recv(FlChan *c, void *out, bool *ok, FlErr *e) FL_WARN_UNUSED;
FlStatus fl_chan_close(FlChan *c, FlErr *e) FL_WARN_UNUSED;

size_t fl_chan_len(FlChan *c); /* buffered elements now (0 for NULL) */
size_t fl_chan_cap(FlChan *c);
size_t fl_chan_elem_size(FlChan *c);

typedef enum { FL_SELECT_SEND, FL_SELECT_RECV, FL_SELECT_DIR_COUNT } FlSelectDir;

typedef struct FlSelectCase {
    FlChan *chan;    /* NULL: the case is never ready */
    FlSelectDir dir;
    void *val;       /* SEND: the value to send (moved on success); RECV: out buffer or NULL */
    bool ok;         /* set for the chosen RECV case: true = a sent value, false = closed */
} FlSelectCase;

/* Go's select over n cases (n may be 0), with a default case when has_default. *chosen receives
 * the index of the case that ran, or -1 for default. When the chosen case is a send on a closed
 * channel, returns FL_ERROR "send on closed channel" with *chosen set to it. At most 65535 cases. */
FlStatus fl_select(FlSelectCase *cases, int n, bool has_default, int *chosen,
                   FlErr *e) FL_WARN_UNUSED;

#endif
