/* wire.c: the wire protocol (mpi_impl.h): posting a message (its header, name and inline
 * payload, or its payload's pieces), parsing one, the buffers payloads are received into, and
 * every wait on a request, polled with the peer timeout.
 *
 * How: a message is a Hdr, the var's name, and (F_INLINE) the payload; a payload that is not
 * inline follows as the next messages of the same sender on the data tag of the header's tag
 * pair, in pieces of Hdr.piece bytes, sent straight from the tensor's buffer and received
 * straight into the new tensor's (Spare recycles those buffers per sender and var).
 *
 * Invariants:
 *  - a message's parts are posted under m->mu, so per (sender, tag) order pairs them (MPI's
 *    non-overtaking rule) whatever threads send; a streamed answer's pieces follow its header
 *    later, on the GET's own tag pair;
 *  - a posted send keeps its header buffer or a reference to the tensor it sends from in
 *    m->pend until MPI reports it complete (so tensors are sent without copies and may be
 *    replaced in their vars meanwhile: tensors are immutable once in a var, except that a
 *    streamed update writes a buffer in place when nobody else holds it, FlDistUpdate);
 *  - no rank waits in a blocking MPI call: every wait polls (flm_wait_req) and gives up after
 *    m->timeout seconds, naming the peer.
 */
#define _GNU_SOURCE
#include "runtime/mpi/mpi_impl.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double flm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

FlStatus flm_mpi_err(FlErr *e, int rc, const char *what) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, s, &n);
    return fl_err(e, "%s: MPI error: %s", what, s);
}

const char *flm_role_name(int r) { return r == FL_MPI_PSERVER ? "pserver" : "trainer"; }

/* The peer's name into buf (mpi_impl.h): the host only when the job spans several, since on one
 * machine it says nothing. */
const char *flm_peer_name(const FlMpi *m, int rank, char *buf, size_t n) {
    if (m->assigned && rank >= 0 && rank < m->size)
        snprintf(buf, n, "rank %d (%s %d%s%s)", rank, flm_role_name(m->role_of[rank]), m->index_of[rank],
                 m->hosts ? " on " : "", m->hosts ? m->host_of[rank] : "");
    else snprintf(buf, n, "rank %d", rank);
    return buf;
}

/* Withdraws n posted requests (after an error: their buffers may then go). */
void flm_drop_reqs(MPI_Request *r, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        MPI_Cancel(&r[i]);
        MPI_Request_free(&r[i]);
    }
}

/* ---------------------------------------------------------------- waiting */

/* Spin a little, then yield, then sleep 50 us: latency stays low when the peer answers fast
 * and an idle rank does not steal the CPU of oversubscribed neighbours. */
void flm_backoff(Backoff *b) {
    if (b->n < 100) {
        b->n++;
    } else if (b->n < 3000) {
        b->n++;
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

/* Waits for req, polling (with `adv`, the other prefetched answers move on meanwhile). */
FlStatus flm_wait_req_adv(FlMpi *m, MPI_Request *req, MPI_Status *st, int peer, const char *what, bool adv,
                             FlErr *e) {
    double t0 = flm_now();
    Backoff b = {0};
    for (;;) {
        int done = 0;
        MPI_TRY(MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE), what);
        if (done) return FL_OK;
        if (adv) flm_advance_fetches(m);
        double waited = flm_now() - t0;
        if (flm_waited_too_long(m, peer, waited)) {
            char pn[FLM_PEER_NAME_MAX];
            return fl_err(e, "%s: no answer from %s for %.0f s " FL_MPI_PEER_TIMEOUT "%s", what,
                          peer >= 0     ? flm_peer_name(m, peer, pn, sizeof pn)
                          : m->assigned ? "the other trainers"
                                        : "the other ranks",
                          waited, peer >= 0 && flm_silent(m, peer) <= m->timeout ? "; it is alive, but waits itself" : "");
        }
        flm_backoff(&b);
    }
}

FlStatus flm_wait_req(FlMpi *m, MPI_Request *req, MPI_Status *st, int peer, const char *what, FlErr *e) {
    return flm_wait_req_adv(m, req, st, peer, what, false, e);
}

/* Completes what has completed of the posted sends; with `all`, waits for every one. */
FlStatus flm_progress(FlMpi *m, bool all, FlErr *e) {
    double t0 = flm_now();
    Backoff b = {0};
    flm_alive_poll(m);
    for (;;) {
        pthread_mutex_lock(&m->mu);
        size_t keep = 0;
        int err = MPI_SUCCESS, peer = -1;
        for (size_t i = 0; i < m->pend.len; i++) {
            Pending *p = &m->pend.data[i];
            int done = 0;
            int rc = MPI_Test(&p->req, &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) err = rc;
            if (done) {
                free(p->buf);
                fl_tensor_fini(&p->ref);
            } else {
                if (peer < 0) peer = p->peer;
                m->pend.data[keep++] = *p;
            }
        }
        m->pend.len = keep;
        pthread_mutex_unlock(&m->mu);
        if (err != MPI_SUCCESS) return flm_mpi_err(e, err, "sending");
        if (!all || keep == 0) return FL_OK;
        if (flm_waited_too_long(m, peer, flm_now() - t0)) {
            char pn[FLM_PEER_NAME_MAX];
            return fl_err(e, "sending to %s: no answer for %.0f s " FL_MPI_PEER_TIMEOUT,
                          flm_peer_name(m, peer, pn, sizeof pn), m->timeout);
        }
        flm_backoff(&b);
    }
}
/* ---------------------------------------------------------------- messages */

/* The data messages of a payload of nbytes that is not inline: pieces of `piece` bytes. */
int64_t flm_npieces(uint64_t nbytes, uint32_t piece) { return nbytes ? (int64_t)((nbytes + piece - 1) / piece) : 0; }
size_t flm_piece_len(uint64_t nbytes, uint32_t piece, int64_t c) {
    uint64_t off = (uint64_t)c * piece;
    return (size_t)(nbytes - off < piece ? nbytes - off : piece);
}

/* Posts piece c of t to dest on the data tag `tag`, keeping a reference to t until it is sent.
 * Caller holds m->mu. */
static int post_piece_locked(FlMpi *m, int dest, int tag, const FlTensor *t, int64_t c) {
    size_t nb = fl_tensor_nbytes(t), len = flm_piece_len(nb, m->piece, c);
    Pending q = {.buf = NULL, .ref = FL_TENSOR_INIT, .peer = dest};
    int rc = MPI_Isend((char *)fl_tensor_data(t) + (size_t)c * m->piece, (int)len, MPI_BYTE, dest, tag, MPI_COMM_WORLD,
                       &q.req);
    if (rc == MPI_SUCCESS) {
        fl_tensor_ref(&q.ref, t);
        FL_VEC_PUSH(&m->pend, q);
        m->bytes += len;
        m->msgs++;
    }
    return rc;
}

/* Posts one message to dest: the header on `tag` and, for a payload that is not inline, its
 * pieces on tag + 1, all of them unless `later` (the caller then posts each with post_piece as
 * its bytes become final, in order). t: the tensor to send (NULL: none); text: an inline text
 * payload (ERROR replies); seq: Hdr.seq. */
FlStatus flm_post_msg(FlMpi *m, int dest, int tag, uint16_t kind, uint16_t flags, const char *name,
                         const FlTensor *t, const char *text, int32_t reply_tag, bool later, uint32_t seq, FlErr *e) {
    size_t nl = strlen(name);
    if (nl > NAME_MAX_LEN) return fl_err(e, "var name '%.40s...' is longer than %d bytes", name, NAME_MAX_LEN);
    Hdr h = {.magic = MAGIC, .kind = kind, .flags = flags, .step = m->step, .rows = m->rows,
             .rows_global = m->rows_global, .reply_tag = reply_tag, .name_len = (uint32_t)nl, .seq = seq};
    size_t nbytes = 0;
    if (t) {
        h.dtype = (int32_t)t->dtype;
        h.ndim = t->ndim;
        for (int i = 0; i < t->ndim; i++) h.ne[i] = t->ne[i];
        nbytes = (flags & F_ZERO) ? 0 : fl_tensor_nbytes(t);
    } else if (text) {
        nbytes = strlen(text);
        if (nbytes > FL_MPI_INLINE) nbytes = FL_MPI_INLINE;
    }
    h.nbytes = nbytes;
    bool inl = nbytes <= FL_MPI_INLINE && nbytes <= m->piece;
    if (inl && nbytes) h.flags |= F_INLINE;
    if (!inl) h.piece = m->piece;
    size_t len = sizeof h + nl + (inl ? nbytes : 0);
    char *buf = fl_xmalloc(len);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, name, nl);
    if (inl && nbytes) memcpy(buf + sizeof h + nl, t ? fl_tensor_data(t) : text, nbytes);
    pthread_mutex_lock(&m->mu);
    Pending p = {.buf = buf, .ref = FL_TENSOR_INIT, .peer = dest};
    int rc = MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &p.req);
    bool pushed = rc == MPI_SUCCESS;
    if (pushed) {
        FL_VEC_PUSH(&m->pend, p);
        m->bytes += len;
        m->msgs++;
    }
    for (int64_t c = 0, n = flm_npieces(nbytes, m->piece); rc == MPI_SUCCESS && !inl && !later && c < n; c++)
        rc = post_piece_locked(m, dest, tag + 1, t, c);
    pthread_mutex_unlock(&m->mu);
    if (rc != MPI_SUCCESS) {
        if (!pushed) free(buf);
        return flm_mpi_err(e, rc, "posting a send");
    }
    return FL_OK;
}

FlStatus flm_post(FlMpi *m, int dest, int tag, uint16_t kind, uint16_t flags, const char *name, const FlTensor *t,
                     const char *text, int32_t reply_tag, FlErr *e) {
    return flm_post_msg(m, dest, tag, kind, flags, name, t, text, reply_tag, false, 0, e);
}

/* Piece c of a message whose header post_msg posted with `later`. */
FlStatus flm_post_piece(FlMpi *m, int dest, int tag, const FlTensor *t, int64_t c, FlErr *e) {
    pthread_mutex_lock(&m->mu);
    int rc = post_piece_locked(m, dest, tag + 1, t, c);
    pthread_mutex_unlock(&m->mu);
    return rc == MPI_SUCCESS ? FL_OK : flm_mpi_err(e, rc, "posting a send");
}

/* Checks a received message from rank src: its header, name and inline payload. */
FlStatus flm_parse(const FlMpi *m, int src, const char *buf, int count, Hdr *h, char *name, const char **payload,
                      FlErr *e) {
    char pn[FLM_PEER_NAME_MAX];
    *h = (Hdr){0};
    *payload = NULL;
    name[0] = 0;
    if (count < (int)sizeof *h)
        return fl_err(e, "a message of %d bytes from %s is too short for a header", count, flm_peer_name(m, src, pn, sizeof pn));
    memcpy(h, buf, sizeof *h);
    if (h->magic != MAGIC)
        return fl_err(e, "a message with a bad header from %s (not from this fluidc version)", flm_peer_name(m, src, pn, sizeof pn));
    size_t inl = (h->flags & F_INLINE) ? h->nbytes : 0;
    bool pieces = !(h->flags & (F_INLINE | F_ZERO)) && h->nbytes > 0;
    if (h->name_len > NAME_MAX_LEN || inl > FL_MPI_INLINE || sizeof *h + h->name_len + inl != (size_t)count ||
        h->ndim < 0 || h->ndim > FL_MAX_DIMS || (pieces && (h->piece < 8 || h->piece % 8 || h->piece > FL_MPI_PIECE_MAX)))
        return fl_err(e, "a malformed message (%d bytes) from %s", count, flm_peer_name(m, src, pn, sizeof pn));
    memcpy(name, buf + sizeof *h, h->name_len);
    name[h->name_len] = 0;
    *payload = buf + sizeof *h + h->name_len;
    return FL_OK;
}

/* An uninitialised tensor of the given dtype and shape (nb bytes) for a payload or a result
 * that fills it in full: a recycled buffer of key (src, name) when one is free (Spare), else a
 * new one, which the pool then keeps too. */
FlStatus flm_spare_tensor(FlMpi *m, int src, const char *name, FlDType dt, int ndim, const int64_t *ne, size_t nb,
                             FlTensor *out, FlErr *e) {
    char key[NAME_MAX_LEN + 32];
    int kl = snprintf(key, sizeof key, "%d:%s", src, name);
    if (kl < 0 || (size_t)kl >= sizeof key) return fl_tensor_alloc_uninit(e, out, dt, ndim, ne);
    FlTensor r = FL_TENSOR_INIT;
    pthread_mutex_lock(&m->spare_mu);
    Spare *sp = fl_map_find(&m->spares, key, (size_t)kl);
    for (int i = 0; sp && i < 2 && !r.buf; i++)
        if (sp->b[i] && sp->b[i]->size == nb && fl_buffer_refs(sp->b[i]) == 1) {
            fl_buffer_retain(sp->b[i]);
            r.buf = sp->b[i];
        }
    pthread_mutex_unlock(&m->spare_mu);
    if (r.buf) {
        r.dtype = dt;
        r.ndim = ndim;
        for (int i = 0; i < ndim; i++) r.ne[i] = ne[i];
        fl_tensor_fini(out);
        *out = r;
        return FL_OK;
    }
    if (fl_tensor_alloc_uninit(e, &r, dt, ndim, ne) != FL_OK) return FL_ERROR;
    pthread_mutex_lock(&m->spare_mu);
    sp = fl_map_find(&m->spares, key, (size_t)kl);
    if (!sp) {
        sp = fl_xcalloc(1, sizeof *sp + (size_t)kl + 1);
        memcpy(sp->key, key, (size_t)kl + 1);
        fl_map_put(&m->spares, sp->key, (size_t)kl, sp);
    }
    /* replace an empty slot, else one nobody uses (a stale size), else the older one (whose
     * holder keeps it alive) */
    int slot = !sp->b[0] ? 0 : !sp->b[1] ? 1 : fl_buffer_refs(sp->b[0]) == 1 ? 0 : fl_buffer_refs(sp->b[1]) == 1 ? 1 : 0;
    fl_buffer_release(sp->b[slot]);
    if (slot == 0) { /* keep the newest second: the older one frees up first */
        sp->b[0] = sp->b[1];
        slot = 1;
    }
    sp->b[slot] = r.buf;
    fl_buffer_retain(r.buf);
    pthread_mutex_unlock(&m->spare_mu);
    fl_tensor_fini(out);
    *out = r;
    return FL_OK;
}

/* A new tensor of the header's dtype and shape for its payload: filled from an inline payload,
 * zeros for F_ZERO, else a recycled buffer for the pieces to come (*pieces of them; 0 for the
 * others) or, with `bare`, no buffer at all (the pieces go elsewhere). */
FlStatus flm_payload_tensor(FlMpi *m, const Hdr *h, const char *name, const char *payload, int src, bool bare,
                               FlTensor *out, int64_t *pieces, FlErr *e) {
    *pieces = 0;
    if (h->dtype < 0 || h->dtype >= FL_DT_COUNT) return fl_err(e, "'%s' arrived with a bad dtype %d", name, h->dtype);
    FlDType dt = (FlDType)h->dtype;
    if (h->flags & F_ZERO) return fl_tensor_alloc(e, out, dt, h->ndim, h->ne);
    int64_t n;
    if (fl_shape_numel(e, h->ndim, h->ne, &n) != FL_OK) return FL_ERROR;
    size_t es = fl_dtype_size(dt);
    size_t nb = (uint64_t)n > SIZE_MAX / es ? SIZE_MAX : (size_t)n * es;
    if (h->nbytes != nb)
        return fl_err(e, "'%s' arrived with %llu bytes for its shape's %zu", name, (unsigned long long)h->nbytes, nb);
    if ((h->flags & F_INLINE) || nb == 0) {
        if (fl_tensor_alloc_uninit(e, out, dt, h->ndim, h->ne) != FL_OK) return FL_ERROR;
        if (nb) memcpy(fl_tensor_data(out), payload, nb);
        return FL_OK;
    }
    *pieces = flm_npieces(nb, h->piece);
    if (!bare) return flm_spare_tensor(m, src, name, dt, h->ndim, h->ne, nb, out, e);
    fl_tensor_fini(out);
    out->dtype = dt;
    out->ndim = h->ndim;
    for (int i = 0; i < h->ndim; i++) out->ne[i] = h->ne[i];
    return FL_OK;
}

/* Posts the receives of all np pieces of h's payload from src on data_tag into t; *out gets the
 * np requests (malloc'd). On an error nothing stays posted. */
FlStatus flm_recv_pieces(const Hdr *h, FlTensor *t, int64_t np, int src, int data_tag, MPI_Request **out, FlErr *e) {
    MPI_Request *rq = fl_xmalloc((size_t)np * sizeof *rq);
    for (int64_t c = 0; c < np; c++) {
        char *at = (char *)fl_tensor_data(t) + (size_t)c * h->piece;
        int rc = MPI_Irecv(at, (int)flm_piece_len(h->nbytes, h->piece, c), MPI_BYTE, src, data_tag, MPI_COMM_WORLD, &rq[c]);
        if (rc != MPI_SUCCESS) {
            flm_drop_reqs(rq, c);
            free(rq);
            return flm_mpi_err(e, rc, "posting a receive");
        }
    }
    *out = rq;
    return FL_OK;
}

/* Waits for the n requests in order (with `adv`, prefetched answers move on meanwhile); after
 * an error the ones not complete are withdrawn, so none stays posted either way. */
FlStatus flm_wait_all(FlMpi *m, MPI_Request *rq, int64_t n, int src, const char *what, bool adv, FlErr *e) {
    for (int64_t c = 0; c < n; c++)
        if (flm_wait_req_adv(m, &rq[c], NULL, src, what, adv, e) != FL_OK) {
            flm_drop_reqs(rq + c, n - c);
            return FL_ERROR;
        }
    return FL_OK;
}

/* payload_tensor, then every piece received (all posted at once, so they arrive back to back). */
FlStatus flm_take_payload(FlMpi *m, const Hdr *h, const char *name, const char *payload, int src, int data_tag,
                             FlTensor *out, FlErr *e) {
    int64_t np;
    if (flm_payload_tensor(m, h, name, payload, src, false, out, &np, e) != FL_OK) return FL_ERROR;
    if (np == 0) return FL_OK;
    char what[NAME_MAX_LEN + 32];
    snprintf(what, sizeof what, "receiving '%s'", name);
    MPI_Request *rq = NULL;
    FlStatus st = flm_recv_pieces(h, out, np, src, data_tag, &rq, e);
    if (st == FL_OK) st = flm_wait_all(m, rq, np, src, what, false, e);
    free(rq);
    if (st != FL_OK) fl_tensor_fini(out);
    return st;
}
