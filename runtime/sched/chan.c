/* chan.c: channels and select (Go's runtime/chan.go and select.go, in C).
 *
 * A channel is a lock, a ring buffer of cap elements and two wait queues of sudogs (one per blocked
 * sender / receiver, living on the blocked party's stack). Fast paths hand a value straight to a
 * waiting peer (copying into the receiver's out buffer, or from the blocked sender's value), else
 * use the buffer; only when neither can proceed does the caller queue a sudog and park
 * (sched_impl.h describes the park / ready protocol). select locks its channels in address order,
 * polls them in a random order (Fisher-Yates from the caller's generator), and when none is ready
 * queues one sudog per case and parks; the first waker to claim the G (g->claim) wins, the others
 * skip its stale sudogs, and on wake-up the select unqueues the rest.
 *
 * Invariants (under c->lock): qcount > 0 implies recvq is empty of live waiters; qcount < cap
 * implies sendq is; a closed channel has no waiters. Every waker finishes writing into the
 * sudog and its buffers before fl_g_ready.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/sched/chan.h"
#include "runtime/sched/sched_impl.h"

typedef struct WaitQ {
    FlSudog *first, *last;
} WaitQ;

struct FlChan {
    FlLock lock;
    _Atomic int refs;
    size_t elem_size, cap;
    size_t qcount, sendx, recvx; /* under lock */
    unsigned char *buf;
    bool closed;
    WaitQ recvq, sendq;
    FlChanDrop drop;
    void *ud;
};

static const char SEND_CLOSED[] = "send on closed channel";

FlChan *fl_chan_new(size_t elem_size, size_t cap, FlChanDrop drop, void *ud, FlErr *e) {
    if (elem_size && cap > SIZE_MAX / elem_size) {
        fl_err(e, "cannot make a channel of %zu elements of %zu bytes: too large", cap, elem_size);
        return NULL;
    }
    FlChan *c = fl_xcalloc(1, sizeof *c);
    if (cap && elem_size) {
        c->buf = malloc(cap * elem_size);
        if (!c->buf) {
            free(c);
            fl_err(e, "cannot make a channel of %zu elements of %zu bytes: out of memory", cap,
                   elem_size);
            return NULL;
        }
    }
    atomic_store(&c->refs, 1);
    c->elem_size = elem_size;
    c->cap = cap;
    c->drop = drop;
    c->ud = ud;
    return c;
}

void fl_chan_retain(FlChan *c) { atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); }

void fl_chan_release(FlChan *c) {
    if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
    FL_ASSERT(!c->recvq.first && !c->sendq.first); /* a blocked party must hold a reference */
    if (c->drop && c->elem_size)
        for (size_t i = 0; i < c->qcount; i++)
            c->drop(c->buf + ((c->recvx + i) % c->cap) * c->elem_size, c->ud);
    free(c->buf);
    free(c);
}

size_t fl_chan_len(FlChan *c) {
    if (!c) return 0;
    fl_lock(&c->lock);
    size_t n = c->qcount;
    fl_unlock(&c->lock);
    return n;
}
size_t fl_chan_cap(FlChan *c) { return c ? c->cap : 0; }
size_t fl_chan_elem_size(FlChan *c) { return c ? c->elem_size : 0; }

/* ---- wait queues (under the channel's lock) ---- */

static void enqueue(WaitQ *q, FlSudog *sg) {
    sg->next = NULL;
    sg->prev = q->last;
    if (q->last)
        q->last->next = sg;
    else
        q->first = sg;
    q->last = sg;
    sg->in_queue = true;
}

static void unqueue(WaitQ *q, FlSudog *sg) {
    if (!sg->in_queue) return;
    if (sg->prev)
        sg->prev->next = sg->next;
    else
        q->first = sg->next;
    if (sg->next)
        sg->next->prev = sg->prev;
    else
        q->last = sg->prev;
    sg->next = sg->prev = NULL;
    sg->in_queue = false;
}

/* The first waiter whose G we can claim; stale sudogs (a select that fired elsewhere, an aborted
 * wait) are dropped on the way. */
static FlSudog *dequeue(WaitQ *q) {
    for (;;) {
        FlSudog *sg = q->first;
        if (!sg) return NULL;
        unqueue(q, sg);
        if (fl_g_claim(sg->g)) return sg;
    }
}

static void unlock_chan(void *c) { fl_unlock(&((FlChan *)c)->lock); }
static void unlock_none(void *arg) { (void)arg; }

static inline void *slot(FlChan *c, size_t i) { return c->buf + i * c->elem_size; }
static inline void copy_elem(FlChan *c, void *dst, const void *src) {
    if (c->elem_size) memcpy(dst, src, c->elem_size);
}
static inline void zero_elem(FlChan *c, void *dst) {
    if (c->elem_size && dst) memset(dst, 0, c->elem_size);
}

/* A receive from the claimed sender sg (under lock): unbuffered, straight from the sender; full
 * buffer, the head of the buffer, and the sender's value goes to the tail. */
static void recv_from(FlChan *c, FlSudog *sg, void *dst) {
    if (c->cap == 0) {
        copy_elem(c, dst, sg->elem);
    } else {
        copy_elem(c, dst, slot(c, c->recvx));
        copy_elem(c, slot(c, c->recvx), sg->elem);
        c->recvx = (c->recvx + 1) % c->cap;
        c->sendx = c->recvx;
    }
    sg->success = true;
    sg->g->param = sg;
}

static void send_to(FlChan *c, FlSudog *sg, const void *src) {
    copy_elem(c, sg->elem, src);
    sg->success = true;
    sg->g->param = sg;
}

static void buf_put(FlChan *c, const void *src) {
    copy_elem(c, slot(c, c->sendx), src);
    c->sendx = (c->sendx + 1) % c->cap;
    c->qcount++;
}
static void buf_take(FlChan *c, void *dst) {
    copy_elem(c, dst, slot(c, c->recvx));
    c->recvx = (c->recvx + 1) % c->cap;
    c->qcount--;
}

/* Blocks forever (a nil channel, an empty select): only a deadlock or shutdown ends it. */
static FlStatus block_forever(const char *reason, FlErr *e) {
    FlG tmp, *g = fl_g_get(&tmp);
    if (fl_g_prepare(g, reason)) fl_g_park(g, unlock_none, NULL);
    return fl_err(e, "%s", fl_g_abort_msg(g->aborted));
}

/* ---- send, receive, close ---- */

FlStatus fl_chan_send(FlChan *c, const void *val, FlErr *e) {
    if (!c) return block_forever("chan send (nil chan)", e);
    fl_lock(&c->lock);
    if (c->closed) {
        fl_unlock(&c->lock);
        return fl_err(e, "%s", SEND_CLOSED);
    }
    FlSudog *sg = dequeue(&c->recvq);
    if (sg) {
        FlG *peer = sg->g;
        send_to(c, sg, val);
        fl_unlock(&c->lock);
        fl_g_ready(peer);
        return FL_OK;
    }
    if (c->qcount < c->cap) {
        buf_put(c, val);
        fl_unlock(&c->lock);
        return FL_OK;
    }
    FlG tmp, *g = fl_g_get(&tmp);
    if (!fl_g_prepare(g, "chan send")) {
        fl_unlock(&c->lock);
        return fl_err(e, "%s", fl_g_abort_msg(g->aborted));
    }
    FlSudog me = {.g = g, .c = c, .elem = (void *)val};
    enqueue(&c->sendq, &me);
    fl_g_park(g, unlock_chan, c);
    if (g->aborted) {
        fl_lock(&c->lock);
        unqueue(&c->sendq, &me);
        fl_unlock(&c->lock);
        return fl_err(e, "%s", fl_g_abort_msg(g->aborted));
    }
    return me.success ? FL_OK : fl_err(e, "%s", SEND_CLOSED);
}

static FlStatus recv(FlChan *c, void *dst, bool *ok, FlErr *e) {
    if (!c) return block_forever("chan receive (nil chan)", e);
    fl_lock(&c->lock);
    if (c->closed && c->qcount == 0) {
        fl_unlock(&c->lock);
        zero_elem(c, dst);
        *ok = false;
        return FL_OK;
    }
    FlSudog *sg = dequeue(&c->sendq);
    if (sg) {
        FlG *peer = sg->g;
        recv_from(c, sg, dst);
        fl_unlock(&c->lock);
        fl_g_ready(peer);
        *ok = true;
        return FL_OK;
    }
    if (c->qcount > 0) {
        buf_take(c, dst);
        fl_unlock(&c->lock);
        *ok = true;
        return FL_OK;
    }
    FlG tmp, *g = fl_g_get(&tmp);
    if (!fl_g_prepare(g, "chan receive")) {
        fl_unlock(&c->lock);
        return fl_err(e, "%s", fl_g_abort_msg(g->aborted));
    }
    FlSudog me = {.g = g, .c = c, .elem = dst, .is_recv = true};
    enqueue(&c->recvq, &me);
    fl_g_park(g, unlock_chan, c);
    if (g->aborted) {
        fl_lock(&c->lock);
        unqueue(&c->recvq, &me);
        fl_unlock(&c->lock);
        return fl_err(e, "%s", fl_g_abort_msg(g->aborted));
    }
    *ok = me.success;
    return FL_OK;
}

FlStatus fl_chan_recv(FlChan *c, void *out, bool *ok, FlErr *e) {
    unsigned char small[64];
    void *dst = out, *heap = NULL;
    if (!out && c && c->elem_size) dst = c->elem_size <= sizeof small ? small : (heap = fl_xmalloc(c->elem_size));
    bool got = false;
    FlStatus st = recv(c, dst, &got, e);
    if (st == FL_OK && got && !out && c->drop && c->elem_size) c->drop(dst, c->ud);
    free(heap);
    if (ok) *ok = st == FL_OK && got;
    return st;
}

FlStatus fl_chan_close(FlChan *c, FlErr *e) {
    if (!c) return fl_err(e, "close of nil channel");
    fl_lock(&c->lock);
    if (c->closed) {
        fl_unlock(&c->lock);
        return fl_err(e, "close of closed channel");
    }
    c->closed = true;
    FlSudog *wake = NULL, *sg;
    while ((sg = dequeue(&c->recvq))) {
        zero_elem(c, sg->elem);
        sg->success = false;
        sg->g->param = sg;
        sg->next = wake;
        wake = sg;
    }
    while ((sg = dequeue(&c->sendq))) {
        sg->success = false;
        sg->g->param = sg;
        sg->next = wake;
        wake = sg;
    }
    fl_unlock(&c->lock);
    while (wake) { /* read the sudog before its owner can run: it lives on the owner's stack */
        sg = wake;
        wake = sg->next;
        fl_g_ready(sg->g);
    }
    return FL_OK;
}

/* ---- select ---- */

typedef struct SelState {
    FlSelectCase *cases;
    uint16_t *lockorder; /* indices of non-nil cases, by channel address */
    int n;
} SelState;

static void sellock(const SelState *st) {
    FlChan *prev = NULL;
    for (int i = 0; i < st->n; i++) {
        FlChan *c = st->cases[st->lockorder[i]].chan;
        if (c != prev) fl_lock(&c->lock);
        prev = c;
    }
}

/* In reverse: the first lock is released last, so a woken select (which locks in order) cannot
 * get past it until this loop no longer reads *st, which lives on the select's stack. */
static void selunlock(void *arg) {
    const SelState *st = arg;
    for (int i = st->n - 1; i >= 0; i--) {
        FlChan *c = st->cases[st->lockorder[i]].chan;
        if (i > 0 && c == st->cases[st->lockorder[i - 1]].chan) continue;
        fl_unlock(&c->lock);
    }
}

enum { SMALL_CASES = 8 };

FlStatus fl_select(FlSelectCase *cases, int n, bool has_default, int *chosen, FlErr *e) {
    FL_ASSERT(n >= 0 && n <= 65535);
    *chosen = -1;
    uint16_t poll_s[SMALL_CASES], lock_s[SMALL_CASES];
    FlSudog sg_s[SMALL_CASES];
    uint16_t *poll = poll_s, *lockorder = lock_s;
    FlSudog *sgs = sg_s;
    unsigned char scratch_s[64];
    void *scratch = scratch_s, *scratch_heap = NULL;
    FlG tmp, *g = fl_g_get(&tmp);
    FlStatus st = FL_OK;

    /* the random poll order and the lock order over the non-nil cases; NULL recv buffers share
     * one scratch element (only the winning case is written) */
    size_t scratch_size = 0;
    int np = 0;
    for (int i = 0; i < n; i++) {
        FlChan *c = cases[i].chan;
        if (!c) continue;
        if (cases[i].dir == FL_SELECT_RECV && !cases[i].val && c->elem_size > scratch_size)
            scratch_size = c->elem_size;
        np++;
    }
    if (np > SMALL_CASES) {
        poll = fl_xmalloc(fl_mul_size((size_t)np, 2 * sizeof *poll));
        lockorder = poll + np;
        sgs = fl_xmalloc(fl_mul_size((size_t)np, sizeof *sgs));
    }
    if (scratch_size > sizeof scratch_s) scratch = scratch_heap = fl_xmalloc(scratch_size);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!cases[i].chan) continue;
        int j = (int)fl_g_rand(g, (uint32_t)k + 1);
        poll[k] = poll[j];
        poll[j] = (uint16_t)i;
        k++;
    }
    /* lockorder: the poll order sorted stably by channel address, so that cases on one channel
     * keep their random order; pass 2 queues them in it and a peer arriving later takes the
     * first, uniformly at random (Go builds its lock order from the poll order too). Sorted in
     * source order, a select offering two sends to one slow receiver fired its first 90% of
     * the time. */
    for (int q = 0; q < np; q++) {
        int i = poll[q], m = q;
        while (m > 0 && (uintptr_t)cases[lockorder[m - 1]].chan > (uintptr_t)cases[i].chan) {
            lockorder[m] = lockorder[m - 1];
            m--;
        }
        lockorder[m] = (uint16_t)i;
    }
    if (np == 0) {
        if (!has_default) st = block_forever("select (no cases)", e);
        goto done;
    }
    SelState ss = {cases, lockorder, np};
    sellock(&ss);

    /* pass 1: the first ready case in poll order */
    for (int q = 0; q < np; q++) {
        int i = poll[q];
        FlSelectCase *cs = &cases[i];
        FlChan *c = cs->chan;
        FlSudog *sg;
        if (cs->dir == FL_SELECT_RECV) {
            void *dst = cs->val ? cs->val : scratch;
            if ((sg = dequeue(&c->sendq))) {
                FlG *peer = sg->g;
                recv_from(c, sg, dst);
                selunlock(&ss);
                fl_g_ready(peer);
                cs->ok = true;
            } else if (c->qcount > 0) {
                buf_take(c, dst);
                selunlock(&ss);
                cs->ok = true;
            } else if (c->closed) {
                selunlock(&ss);
                zero_elem(c, dst);
                cs->ok = false;
            } else {
                continue;
            }
            *chosen = i;
            goto done;
        }
        if (c->closed) {
            selunlock(&ss);
            *chosen = i;
            st = fl_err(e, "%s", SEND_CLOSED);
            goto done;
        }
        if ((sg = dequeue(&c->recvq))) {
            FlG *peer = sg->g;
            send_to(c, sg, cs->val);
            selunlock(&ss);
            fl_g_ready(peer);
        } else if (c->qcount < c->cap) {
            buf_put(c, cs->val);
            selunlock(&ss);
        } else {
            continue;
        }
        *chosen = i;
        goto done;
    }
    if (has_default) {
        selunlock(&ss);
        goto done;
    }

    /* pass 2: wait on every case */
    if (!fl_g_prepare(g, "select")) {
        selunlock(&ss);
        st = fl_err(e, "%s", fl_g_abort_msg(g->aborted));
        goto done;
    }
    for (int q = 0; q < np; q++) {
        int i = lockorder[q];
        FlSelectCase *cs = &cases[i];
        FlSudog *sg = &sgs[q];
        bool is_recv = cs->dir == FL_SELECT_RECV;
        *sg = (FlSudog){.g = g, .c = cs->chan, .case_index = i, .is_recv = is_recv,
                        .elem = is_recv && !cs->val ? scratch : cs->val};
        enqueue(is_recv ? &cs->chan->recvq : &cs->chan->sendq, sg);
    }
    fl_g_park(g, selunlock, &ss);

    /* pass 3: unqueue the cases that did not fire */
    sellock(&ss);
    FlSudog *fired = g->param;
    for (int q = 0; q < np; q++) {
        FlSudog *sg = &sgs[q];
        if (sg != fired) unqueue(sg->is_recv ? &sg->c->recvq : &sg->c->sendq, sg);
    }
    selunlock(&ss);
    if (g->aborted) {
        st = fl_err(e, "%s", fl_g_abort_msg(g->aborted));
        goto done;
    }
    FL_ASSERT(fired);
    *chosen = fired->case_index;
    if (fired->is_recv)
        cases[*chosen].ok = fired->success;
    else if (!fired->success)
        st = fl_err(e, "%s", SEND_CLOSED);

done:
    if (st == FL_OK && *chosen >= 0) {
        FlSelectCase *cs = &cases[*chosen];
        if (cs->dir == FL_SELECT_RECV && !cs->val && cs->ok && cs->chan->drop &&
            cs->chan->elem_size)
            cs->chan->drop(scratch, cs->chan->ud);
    }
    if (poll != poll_s) {
        free(poll);
        free(sgs);
    }
    free(scratch_heap);
    return st;
}
