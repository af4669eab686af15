/* mpi.c: the MPI transport (mpi.h): roles, the message protocol, the trainer's send/recv, the
 * pserver loop, waiting with timeouts, aborts and statistics.
 *
 * Invariants:
 *  - a message is a Hdr, the var's name, and (F_INLINE) the payload; a payload that is not
 *    inline follows as the next messages of the same sender on the data tag of the header's
 *    tag pair, in pieces of Hdr.piece bytes. They are posted under m->mu, so per (sender, tag)
 *    order pairs them (MPI's non-overtaking rule) whatever threads send; a streamed answer's
 *    pieces follow its header later, on the GET's own tag pair;
 *  - a posted send keeps its header buffer or a reference to the tensor it sends from in
 *    m->pend until MPI reports it complete (so tensors are sent without copies and may be
 *    replaced in their vars meanwhile: tensors are immutable once in a var, except that a
 *    streamed update writes a buffer in place when nobody else holds it, FlDistUpdate);
 *  - no rank waits in a blocking MPI call: every wait polls (wait_req) and gives up after
 *    m->timeout seconds, naming the peer.
 * The pserver loop is single-threaded: it reads every waiting header (any source), stores and
 * weights gradients, runs optimize blocks when a step's gradients are complete (sync) or at once
 * (async), answers GETs (deferring those of a trainer whose gradient is part of an unfinished
 * step), and returns when every trainer sent DONE. In sync mode a payload's receives are posted
 * when its header is read (SRecv: a few pieces at a time, a trainer's payloads in header order)
 * and completed between reads of headers, so GETs are seen, and answered as their blocks
 * complete, while later gradients are still arriving. Received payloads land in recycled,
 * uninitialised buffers (Spare); a block headed by the transpiled sum + scale has them done on
 * receipt (fused mean) and runs from its optimizer op; when that op is element-wise
 * (FlDistUpdate) and the gradient comes in pieces, the block is streamed: each trainer's pieces
 * land in its ring of RECV_WINDOW pieces, and each piece is averaged, applied (in place) and
 * sent back to the waiting GETs as soon as every trainer's piece is in, which frees its slots.
 */
#define _GNU_SOURCE
#include "runtime/mpi/mpi.h"
#include "compiler/ir/rules.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_HDR = 1, TAG_DATA = 2, TAG_REPLY0 = 16 };
enum { K_GRAD = 1, K_GET, K_PARAM, K_DONE, K_ERROR };
enum { F_INLINE = 1, F_ZERO = 2 };
#define MAGIC 0x324d4c46u /* "FLM2" */
#define NAME_MAX_LEN 1024

typedef struct Hdr {
    uint32_t magic;
    uint16_t kind, flags;
    int64_t step, rows, rows_global;
    int32_t dtype, ndim;
    int64_t ne[FL_MAX_DIMS];
    uint64_t nbytes;    /* the payload's bytes (0 for ZERO) */
    int32_t reply_tag;  /* GET: the tag pair the answer comes on */
    uint32_t name_len;  /* bytes of name after the header (no NUL); then inline payload */
    uint32_t piece;     /* a payload that is not inline: the bytes of each data message but
                         * the last (a multiple of 8) */
    uint32_t pad;
} Hdr;

#define MSG_MAX (sizeof(Hdr) + NAME_MAX_LEN + FL_MPI_INLINE)

/* Receive buffers of payloads that do not ride inline, recycled per (source rank, var name):
 * a buffer whose only reference is the pool's belongs to nobody else any more (its var has
 * moved on) and may be received into again, which saves the allocation, its page faults and a
 * zero fill per message. Two per key, because a var still holds the last one while the next
 * arrives; so the pool costs at most one spare copy of what a rank receives. */
typedef struct Spare {
    FlBuffer *b[2];
    char key[]; /* "src:name", the map's key */
} Spare;

/* Withdraws n posted requests (after an error: their buffers may then go). */
static void drop_reqs(MPI_Request *r, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        MPI_Cancel(&r[i]);
        MPI_Request_free(&r[i]);
    }
}

/* A recv announced by prefetch (FlDist.prefetch): its GET is posted, its answer's header awaited.
 * While a trainer waits for one answer, the answers of its other prefetches that come in have
 * their pieces' receives posted at once (advance_fetches), so the parameters the server has
 * already updated are copied in while the one being waited for is still being updated. */
typedef struct Fetch {
    char *name;
    int src, tag;
    char *buf; /* MSG_MAX bytes for the answer's header */
    MPI_Request req;
    bool in;           /* the header has come (req is complete): count bytes of buf */
    int count;
    FlTensor t;        /* a PARAM answer whose pieces are coming: its tensor, */
    int64_t np;        /* its pieces (0: not started; the claim does everything), */
    MPI_Request *preq; /* and their receives */
} Fetch;

/* Frees f, withdrawing what it still has posted (its header's receive, its pieces'). */
static void fetch_free(Fetch *f) {
    if (!f->in) drop_reqs(&f->req, 1);
    drop_reqs(f->preq, f->np);
    free(f->preq);
    fl_tensor_fini(&f->t);
    free(f->buf);
    free(f->name);
}

typedef struct Pending {
    MPI_Request req;
    void *buf;     /* header buffer, freed on completion */
    FlTensor ref;  /* the tensor a payload is sent from, released on completion */
    int peer;
} Pending;

struct FlMpi {
    FlDist dist; /* first: the FlDist the adapters call is the FlMpi */
    int rank, size;
    double timeout;
    uint32_t piece; /* bytes per data message of a payload that is not inline */
    bool stats, assigned;
    int tag_pairs;          /* reply tag pairs available */
    int *role_of, *index_of; /* per rank */
    int *trainer_rank, *pserver_rank;
    int T, P;
    FlMpiRole role;
    int index;
    MPI_Comm role_comm;
    char who[64];
    int64_t step, rows, rows_global;
    atomic_uint reqs;
    pthread_mutex_t mu; /* pend, posting order, stats */
    FL_VEC(Pending) pend;
    pthread_mutex_t spare_mu; /* spares (taken under mu or alone, never the other way round) */
    FlMap spares;          /* "src:name" -> Spare, under spare_mu */
    FL_VEC(Fetch) fetches; /* prefetched recvs not yet claimed, under mu */
    pthread_mutex_t red_mu; /* allreduce: one at a time per process; red: one chunk of its ring */
    char *red;
    size_t red_cap;
    /* stats */
    uint64_t bytes, msgs;
    int64_t steps;
    double comm, compute;
};

static FlStatus t_send(FlDist *d, int ps, const char *name, const FlTensor *t, FlErr *e);
static FlStatus t_recv(FlDist *d, int ps, const char *name, FlTensor *out, FlErr *e);
static FlStatus t_barrier(FlDist *d, FlDistBarrier kind, FlErr *e);
static FlStatus t_prefetch(FlDist *d, int ps, const char *name, FlErr *e);
static FlStatus p_serve(FlDist *d, FlDistServer *srv, FlErr *e);
static FlStatus t_allreduce(FlDist *d, size_t n, const char *const *names, const FlTensor *in, FlTensor *out, FlErr *e);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static FlStatus mpi_err(FlErr *e, int rc, const char *what) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, s, &n);
    return fl_err(e, "%s: MPI error: %s", what, s);
}
#define MPI_TRY(call, what)                                \
    do {                                                   \
        int rc_ = (call);                                  \
        if (rc_ != MPI_SUCCESS) return mpi_err(e, rc_, what); \
    } while (0)

static const char *role_name(int r) { return r == FL_MPI_PSERVER ? "pserver" : "trainer"; }

/* "rank 2 (pserver 0)" of any rank, into buf. */
static const char *peer_name(const FlMpi *m, int rank, char *buf, size_t n) {
    if (m->assigned && rank >= 0 && rank < m->size)
        snprintf(buf, n, "rank %d (%s %d)", rank, role_name(m->role_of[rank]), m->index_of[rank]);
    else snprintf(buf, n, "rank %d", rank);
    return buf;
}

/* ---------------------------------------------------------------- life */

FlStatus fl_mpi_init(const FlMpiOptions *opt, FlMpi **out, FlErr *e) {
    *out = NULL;
    uint32_t piece = opt && opt->piece ? opt->piece : FL_MPI_PIECE;
    if (piece < 8 || piece % 8 || piece > FL_MPI_PIECE_MAX)
        return fl_err(e, "the piece size must be a multiple of 8 between 8 and %u bytes, not %u", FL_MPI_PIECE_MAX, piece);
    int provided = 0, inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return fl_err(e, "MPI_Init_thread failed");
    if (inited) MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        MPI_Finalize();
        return fl_err(e, "this MPI provides thread level %d, fluidc needs MPI_THREAD_MULTIPLE (%d)", provided,
                      MPI_THREAD_MULTIPLE);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    FlMpi *m = fl_xcalloc(1, sizeof *m);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    m->timeout = opt && opt->timeout > 0 ? opt->timeout : FL_MPI_DEFAULT_TIMEOUT;
    m->stats = opt && opt->stats;
    m->piece = piece;
    m->role_comm = MPI_COMM_NULL;
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    int tag_ub = flag && ub ? *ub : 32767;
    m->tag_pairs = (tag_ub - TAG_REPLY0) / 2;
    if (m->tag_pairs > 1 << 20) m->tag_pairs = 1 << 20;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->red_mu, NULL);
    pthread_mutex_init(&m->spare_mu, NULL);
    /* backoff's 50 us sleeps would last 100 us with the default 50 us timer slack: a pserver
     * idle between steps then answers a step's first message that much later */
    prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0);
    snprintf(m->who, sizeof m->who, "rank %d", m->rank);
    fl_map_init(&m->spares);
    m->dist = (FlDist){.send = t_send, .recv = t_recv, .barrier = t_barrier, .prefetch = t_prefetch, .serve = p_serve,
                       .allreduce = t_allreduce};
    *out = m;
    return FL_OK;
}

void fl_mpi_free(FlMpi *m) {
    if (!m) return;
    for (size_t i = 0; i < m->pend.len; i++) {
        free(m->pend.data[i].buf);
        fl_tensor_fini(&m->pend.data[i].ref);
    }
    FL_VEC_FREE(&m->pend);
    for (size_t i = 0; i < m->fetches.len; i++) fetch_free(&m->fetches.data[i]); /* unclaimed (after an error) */
    FL_VEC_FREE(&m->fetches);
    for (size_t i = 0; i < m->spares.cap; i++)
        if (fl_map_slot_live(&m->spares, i)) {
            Spare *sp = m->spares.buckets[i].val;
            fl_buffer_release(sp->b[0]);
            fl_buffer_release(sp->b[1]);
            free(sp);
        }
    fl_map_fini(&m->spares);
    if (m->role_comm != MPI_COMM_NULL) MPI_Comm_free(&m->role_comm);
    free(m->role_of);
    free(m->index_of);
    free(m->trainer_rank);
    free(m->pserver_rank);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->red_mu);
    pthread_mutex_destroy(&m->spare_mu);
    free(m->red);
    free(m);
    MPI_Finalize();
}

int fl_mpi_rank(const FlMpi *m) { return m->rank; }
int fl_mpi_size(const FlMpi *m) { return m->size; }
FlMpiRole fl_mpi_role(const FlMpi *m) { return m->role; }
int fl_mpi_index(const FlMpi *m) { return m->index; }
int fl_mpi_trainers(const FlMpi *m) { return m->T; }
int fl_mpi_pservers(const FlMpi *m) { return m->P; }
const char *fl_mpi_who(const FlMpi *m) { return m->who; }
FlDist *fl_mpi_dist(FlMpi *m) { return &m->dist; }

/* Numbers trainers and pservers by rank order once role_of is set. */
static FlStatus finish_roles(FlMpi *m, FlErr *e) {
    m->index_of = fl_xcalloc((size_t)m->size, sizeof *m->index_of);
    m->trainer_rank = fl_xcalloc((size_t)m->size, sizeof *m->trainer_rank);
    m->pserver_rank = fl_xcalloc((size_t)m->size, sizeof *m->pserver_rank);
    m->T = m->P = 0;
    for (int r = 0; r < m->size; r++) {
        if (m->role_of[r] == FL_MPI_PSERVER) {
            m->index_of[r] = m->P;
            m->pserver_rank[m->P++] = r;
        } else {
            m->index_of[r] = m->T;
            m->trainer_rank[m->T++] = r;
        }
    }
    m->role = (FlMpiRole)m->role_of[m->rank];
    m->index = m->index_of[m->rank];
    m->assigned = true;
    snprintf(m->who, sizeof m->who, "rank %d (%s %d)", m->rank, role_name(m->role), m->index);
    if (m->T == 0) return fl_err(e, "the job has no trainer (every rank runs a listen_and_serv program)");
    MPI_TRY(MPI_Comm_split(MPI_COMM_WORLD, (int)m->role, m->rank, &m->role_comm), "splitting the roles");
    return FL_OK;
}

FlStatus fl_mpi_assign_plan(FlMpi *m, const FlPlan *plan, FlErr *e) {
    size_t nr = plan->rank_role.len;
    if ((size_t)m->size != nr)
        return fl_err(e, "the plan needs %zu ranks (%lld trainers + %lld pservers) but the job has %d: run mpirun -np %zu",
                      nr, (long long)plan->trainers, (long long)plan->pservers, m->size, nr);
    m->role_of = fl_xcalloc(nr, sizeof *m->role_of);
    for (size_t r = 0; r < nr; r++) {
        int64_t k = plan->rank_role.data[r];
        if (k < 0 || (size_t)k >= plan->roles.len) return fl_err(e, "the plan's rank map is corrupt (rank %zu)", r);
        m->role_of[r] = !strcmp(plan->roles.data[k]->role, "pserver") ? FL_MPI_PSERVER : FL_MPI_TRAINER;
    }
    if (finish_roles(m, e) != FL_OK) return FL_ERROR;
    int64_t k = plan->rank_role.data[m->rank];
    if (plan->roles.data[k]->role_index != m->index)
        return fl_err(e, "the plan's rank map does not number its %ss in rank order", role_name(m->role));
    return FL_OK;
}

FlStatus fl_mpi_assign_announce(FlMpi *m, FlMpiRole mine, FlErr *e) {
    m->role_of = fl_xcalloc((size_t)m->size, sizeof *m->role_of);
    int r = (int)mine;
    MPI_TRY(MPI_Allgather(&r, 1, MPI_INT, m->role_of, 1, MPI_INT, MPI_COMM_WORLD), "announcing the roles");
    return finish_roles(m, e);
}

FL_NORETURN void fl_mpi_fail(FlMpi *m, const char *msg) {
    fprintf(stderr, "flrun: %s: %s\n", m ? m->who : "rank ?", msg);
    fflush(stderr);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

/* ---------------------------------------------------------------- waiting */

typedef struct Backoff {
    unsigned n;
} Backoff;

/* Spin a little, then yield, then sleep 50 us: latency stays low when the peer answers fast
 * and an idle rank does not steal the CPU of oversubscribed neighbours. */
static void backoff(Backoff *b) {
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

static void advance_fetches(FlMpi *m);

/* Waits for req, polling (with `adv`, the other prefetched answers move on meanwhile). */
static FlStatus wait_req_adv(FlMpi *m, MPI_Request *req, MPI_Status *st, int peer, const char *what, bool adv,
                             FlErr *e) {
    double t0 = now();
    Backoff b = {0};
    for (;;) {
        int done = 0;
        MPI_TRY(MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE), what);
        if (done) return FL_OK;
        if (adv) advance_fetches(m);
        if (now() - t0 > m->timeout) {
            char pn[64];
            return fl_err(e, "%s: no answer from %s for %.0f s (the peer timeout, flrun --timeout)", what,
                          peer >= 0 ? peer_name(m, peer, pn, sizeof pn) : "the other trainers", m->timeout);
        }
        backoff(&b);
    }
}

static FlStatus wait_req(FlMpi *m, MPI_Request *req, MPI_Status *st, int peer, const char *what, FlErr *e) {
    return wait_req_adv(m, req, st, peer, what, false, e);
}

/* Completes what has completed of the posted sends; with `all`, waits for every one. */
static FlStatus progress(FlMpi *m, bool all, FlErr *e) {
    double t0 = now();
    Backoff b = {0};
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
        if (err != MPI_SUCCESS) return mpi_err(e, err, "sending");
        if (!all || keep == 0) return FL_OK;
        if (now() - t0 > m->timeout) {
            char pn[64];
            return fl_err(e, "sending to %s: no answer for %.0f s (the peer timeout, flrun --timeout)",
                          peer_name(m, peer, pn, sizeof pn), m->timeout);
        }
        backoff(&b);
    }
}

/* ---------------------------------------------------------------- messages */

/* The data messages of a payload of nbytes that is not inline: pieces of `piece` bytes. */
static int64_t npieces(uint64_t nbytes, uint32_t piece) { return nbytes ? (int64_t)((nbytes + piece - 1) / piece) : 0; }
static size_t piece_len(uint64_t nbytes, uint32_t piece, int64_t c) {
    uint64_t off = (uint64_t)c * piece;
    return (size_t)(nbytes - off < piece ? nbytes - off : piece);
}

/* Posts piece c of t to dest on the data tag `tag`, keeping a reference to t until it is sent.
 * Caller holds m->mu. */
static int post_piece_locked(FlMpi *m, int dest, int tag, const FlTensor *t, int64_t c) {
    size_t nb = fl_tensor_nbytes(t), len = piece_len(nb, m->piece, c);
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
 * payload (ERROR replies). */
static FlStatus post_msg(FlMpi *m, int dest, int tag, uint16_t kind, uint16_t flags, const char *name,
                         const FlTensor *t, const char *text, int32_t reply_tag, bool later, FlErr *e) {
    size_t nl = strlen(name);
    if (nl > NAME_MAX_LEN) return fl_err(e, "var name '%.40s...' is longer than %d bytes", name, NAME_MAX_LEN);
    Hdr h = {.magic = MAGIC, .kind = kind, .flags = flags, .step = m->step, .rows = m->rows,
             .rows_global = m->rows_global, .reply_tag = reply_tag, .name_len = (uint32_t)nl};
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
    for (int64_t c = 0, n = npieces(nbytes, m->piece); rc == MPI_SUCCESS && !inl && !later && c < n; c++)
        rc = post_piece_locked(m, dest, tag + 1, t, c);
    pthread_mutex_unlock(&m->mu);
    if (rc != MPI_SUCCESS) {
        if (!pushed) free(buf);
        return mpi_err(e, rc, "posting a send");
    }
    return FL_OK;
}

static FlStatus post(FlMpi *m, int dest, int tag, uint16_t kind, uint16_t flags, const char *name, const FlTensor *t,
                     const char *text, int32_t reply_tag, FlErr *e) {
    return post_msg(m, dest, tag, kind, flags, name, t, text, reply_tag, false, e);
}

/* Piece c of a message whose header post_msg posted with `later`. */
static FlStatus post_piece(FlMpi *m, int dest, int tag, const FlTensor *t, int64_t c, FlErr *e) {
    pthread_mutex_lock(&m->mu);
    int rc = post_piece_locked(m, dest, tag + 1, t, c);
    pthread_mutex_unlock(&m->mu);
    return rc == MPI_SUCCESS ? FL_OK : mpi_err(e, rc, "posting a send");
}

/* Checks a received message from rank src: its header, name and inline payload. */
static FlStatus parse(const FlMpi *m, int src, const char *buf, int count, Hdr *h, char *name, const char **payload,
                      FlErr *e) {
    char pn[64];
    if (count < (int)sizeof *h)
        return fl_err(e, "a message of %d bytes from %s is too short for a header", count, peer_name(m, src, pn, sizeof pn));
    memcpy(h, buf, sizeof *h);
    if (h->magic != MAGIC)
        return fl_err(e, "a message with a bad header from %s (not from this fluidc version)", peer_name(m, src, pn, sizeof pn));
    size_t inl = (h->flags & F_INLINE) ? h->nbytes : 0;
    bool pieces = !(h->flags & (F_INLINE | F_ZERO)) && h->nbytes > 0;
    if (h->name_len > NAME_MAX_LEN || inl > FL_MPI_INLINE || sizeof *h + h->name_len + inl != (size_t)count ||
        h->ndim < 0 || h->ndim > FL_MAX_DIMS || (pieces && (h->piece < 8 || h->piece % 8 || h->piece > FL_MPI_PIECE_MAX)))
        return fl_err(e, "a malformed message (%d bytes) from %s", count, peer_name(m, src, pn, sizeof pn));
    memcpy(name, buf + sizeof *h, h->name_len);
    name[h->name_len] = 0;
    *payload = buf + sizeof *h + h->name_len;
    return FL_OK;
}

/* An uninitialised tensor of the given dtype and shape (nb bytes) for a payload or a result
 * that fills it in full: a recycled buffer of key (src, name) when one is free (Spare), else a
 * new one, which the pool then keeps too. */
static FlStatus spare_tensor(FlMpi *m, int src, const char *name, FlDType dt, int ndim, const int64_t *ne, size_t nb,
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
static FlStatus payload_tensor(FlMpi *m, const Hdr *h, const char *name, const char *payload, int src, bool bare,
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
    *pieces = npieces(nb, h->piece);
    if (!bare) return spare_tensor(m, src, name, dt, h->ndim, h->ne, nb, out, e);
    fl_tensor_fini(out);
    out->dtype = dt;
    out->ndim = h->ndim;
    for (int i = 0; i < h->ndim; i++) out->ne[i] = h->ne[i];
    return FL_OK;
}

/* Posts the receives of all np pieces of h's payload from src on data_tag into t; *out gets the
 * np requests (malloc'd). On an error nothing stays posted. */
static FlStatus recv_pieces(const Hdr *h, FlTensor *t, int64_t np, int src, int data_tag, MPI_Request **out, FlErr *e) {
    MPI_Request *rq = fl_xmalloc((size_t)np * sizeof *rq);
    for (int64_t c = 0; c < np; c++) {
        char *at = (char *)fl_tensor_data(t) + (size_t)c * h->piece;
        int rc = MPI_Irecv(at, (int)piece_len(h->nbytes, h->piece, c), MPI_BYTE, src, data_tag, MPI_COMM_WORLD, &rq[c]);
        if (rc != MPI_SUCCESS) {
            drop_reqs(rq, c);
            free(rq);
            return mpi_err(e, rc, "posting a receive");
        }
    }
    *out = rq;
    return FL_OK;
}

/* Waits for the n requests in order (with `adv`, prefetched answers move on meanwhile); after
 * an error the ones not complete are withdrawn, so none stays posted either way. */
static FlStatus wait_all(FlMpi *m, MPI_Request *rq, int64_t n, int src, const char *what, bool adv, FlErr *e) {
    for (int64_t c = 0; c < n; c++)
        if (wait_req_adv(m, &rq[c], NULL, src, what, adv, e) != FL_OK) {
            drop_reqs(rq + c, n - c);
            return FL_ERROR;
        }
    return FL_OK;
}

/* payload_tensor, then every piece received (all posted at once, so they arrive back to back). */
static FlStatus take_payload(FlMpi *m, const Hdr *h, const char *name, const char *payload, int src, int data_tag,
                             FlTensor *out, FlErr *e) {
    int64_t np;
    if (payload_tensor(m, h, name, payload, src, false, out, &np, e) != FL_OK) return FL_ERROR;
    if (np == 0) return FL_OK;
    char what[NAME_MAX_LEN + 32];
    snprintf(what, sizeof what, "receiving '%s'", name);
    MPI_Request *rq = NULL;
    FlStatus st = recv_pieces(h, out, np, src, data_tag, &rq, e);
    if (st == FL_OK) st = wait_all(m, rq, np, src, what, false, e);
    free(rq);
    if (st != FL_OK) fl_tensor_fini(out);
    return st;
}

/* ---------------------------------------------------------------- trainer side */

static FlStatus pserver_rank(FlMpi *m, int ps, const char *name, const char *op, int *rank, FlErr *e) {
    if (!m->assigned || m->role != FL_MPI_TRAINER)
        return fl_err(e, "%s '%s': only trainers send and receive (this is %s)", op, name, m->who);
    if (m->P == 0) return fl_err(e, "%s '%s': the job has no pserver", op, name);
    if (ps < 0) {
        if (m->P != 1)
            return fl_err(e, "%s '%s': the op names no pserver (epmap) and the job has %d pservers", op, name, m->P);
        ps = 0;
    }
    if (ps >= m->P) return fl_err(e, "%s '%s' to pserver %d: the job has %d pservers", op, name, ps, m->P);
    *rank = m->pserver_rank[ps];
    return FL_OK;
}

static void add_comm(FlMpi *m, double t0) {
    pthread_mutex_lock(&m->mu);
    m->comm += now() - t0;
    pthread_mutex_unlock(&m->mu);
}

static FlStatus t_send(FlDist *d, int ps, const char *name, const FlTensor *t, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = now();
    int dest;
    if (pserver_rank(m, ps, name, "sending", &dest, e) != FL_OK) return FL_ERROR;
    uint16_t flags = m->rows == 0 && m->rows_global > 0 ? F_ZERO : 0;
    FlStatus st = post(m, dest, TAG_HDR, K_GRAD, flags, name, t, NULL, 0, e);
    if (st == FL_OK) st = progress(m, false, e);
    add_comm(m, t0);
    return st;
}

/* Posts the receive of the answer, then the GET for var `name` from rank src, into f. */
static FlStatus start_get(FlMpi *m, int src, const char *name, Fetch *f, FlErr *e) {
    unsigned id = atomic_fetch_add(&m->reqs, 1u);
    *f = (Fetch){.src = src, .tag = TAG_REPLY0 + 2 * (int)(id % (unsigned)m->tag_pairs), .buf = fl_xmalloc(MSG_MAX),
                 .t = FL_TENSOR_INIT};
    int rc = MPI_Irecv(f->buf, (int)MSG_MAX, MPI_BYTE, src, f->tag, MPI_COMM_WORLD, &f->req);
    if (rc != MPI_SUCCESS) {
        free(f->buf);
        return mpi_err(e, rc, "posting a receive");
    }
    if (post(m, src, TAG_HDR, K_GET, 0, name, NULL, NULL, f->tag, e) != FL_OK) {
        drop_reqs(&f->req, 1);
        free(f->buf);
        return FL_ERROR;
    }
    f->name = fl_xstrdup(name);
    return FL_OK;
}

/* f's header has come: when it is the PARAM answer of f's var with pieces to come, starts their
 * receives (f->np > 0); anything else is left to the claim, which reports it. */
static void early(FlMpi *m, Fetch *f) {
    Hdr h;
    char name2[NAME_MAX_LEN + 1];
    const char *payload;
    FlErr ignored;
    int64_t np;
    if (parse(m, f->src, f->buf, f->count, &h, name2, &payload, &ignored) != FL_OK || h.kind != K_PARAM ||
        strcmp(name2, f->name) != 0 || (h.flags & (F_INLINE | F_ZERO)) || h.nbytes == 0)
        return;
    if (payload_tensor(m, &h, f->name, payload, f->src, false, &f->t, &np, &ignored) != FL_OK || np == 0) return;
    if (recv_pieces(&h, &f->t, np, f->src, f->tag + 1, &f->preq, &ignored) != FL_OK) {
        fl_tensor_fini(&f->t); /* left to the claim */
        return;
    }
    f->np = np;
}

/* The prefetched answers whose headers have come start their pieces' receives. */
static void advance_fetches(FlMpi *m) {
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->fetches.len; i++) {
        Fetch *f = &m->fetches.data[i];
        if (f->in) continue;
        int done = 0;
        MPI_Status st;
        if (MPI_Test(&f->req, &done, &st) != MPI_SUCCESS || !done) continue;
        f->in = true;
        MPI_Get_count(&st, MPI_BYTE, &f->count);
        early(m, f);
    }
    pthread_mutex_unlock(&m->mu);
}

/* Waits for f's answer and takes its tensor into *out; frees f's buffers. */
static FlStatus finish_get(FlMpi *m, Fetch *f, FlTensor *out, FlErr *e) {
    FlStatus rc = FL_ERROR;
    char what[NAME_MAX_LEN + 64], name2[NAME_MAX_LEN + 1];
    snprintf(what, sizeof what, "receiving '%s'", f->name);
    if (!f->in) {
        MPI_Status st;
        if (wait_req_adv(m, &f->req, &st, f->src, what, true, e) != FL_OK) goto done;
        f->in = true;
        MPI_Get_count(&st, MPI_BYTE, &f->count);
    }
    if (f->np > 0) { /* its pieces are on their way already */
        FlStatus st = wait_all(m, f->preq, f->np, f->src, what, true, e);
        f->np = 0; /* nothing of them is posted any more */
        if (st != FL_OK) goto done;
        fl_tensor_fini(out);
        *out = f->t;
        f->t = (FlTensor)FL_TENSOR_INIT;
        rc = FL_OK;
        goto done;
    }
    Hdr h;
    const char *payload;
    if (parse(m, f->src, f->buf, f->count, &h, name2, &payload, e) != FL_OK) goto done;
    if (h.kind == K_ERROR) {
        char pn[64];
        fl_err(e, "%s: %.*s", peer_name(m, f->src, pn, sizeof pn), (int)h.nbytes, payload);
        goto done;
    }
    if (h.kind != K_PARAM || strcmp(name2, f->name) != 0) {
        fl_err(e, "%s: the answer names '%s' (kind %d)", what, name2, h.kind);
        goto done;
    }
    FlTensor t = FL_TENSOR_INIT;
    if (take_payload(m, &h, f->name, payload, f->src, f->tag + 1, &t, e) != FL_OK) goto done;
    fl_tensor_fini(out);
    *out = t;
    rc = FL_OK;
done:
    fetch_free(f);
    return rc;
}

static FlStatus t_prefetch(FlDist *d, int ps, const char *name, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = now();
    int src;
    Fetch f;
    FlStatus st = pserver_rank(m, ps, name, "receiving", &src, e);
    if (st == FL_OK) st = start_get(m, src, name, &f, e);
    if (st == FL_OK) {
        pthread_mutex_lock(&m->mu);
        FL_VEC_PUSH(&m->fetches, f);
        pthread_mutex_unlock(&m->mu);
    }
    add_comm(m, t0);
    return st;
}

static FlStatus t_recv(FlDist *d, int ps, const char *name, FlTensor *out, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = now();
    int src;
    if (pserver_rank(m, ps, name, "receiving", &src, e) != FL_OK) return FL_ERROR;
    Fetch f;
    bool found = false;
    pthread_mutex_lock(&m->mu); /* claim the oldest prefetch of (src, name), if any */
    for (size_t i = 0; i < m->fetches.len && !found; i++)
        if (m->fetches.data[i].src == src && !strcmp(m->fetches.data[i].name, name)) {
            f = m->fetches.data[i];
            memmove(&m->fetches.data[i], &m->fetches.data[i + 1], (m->fetches.len - i - 1) * sizeof f);
            m->fetches.len--;
            found = true;
        }
    pthread_mutex_unlock(&m->mu);
    FlStatus rc = found ? FL_OK : start_get(m, src, name, &f, e);
    if (rc == FL_OK) rc = finish_get(m, &f, out, e);
    if (rc == FL_OK) rc = progress(m, false, e);
    add_comm(m, t0);
    return rc;
}

/* Receives and drops the answers of prefetched recvs nobody claimed (a program whose recv ops
 * stopped early), so that no answer is left in flight. */
static FlStatus drain_fetches(FlMpi *m, FlErr *e) {
    for (;;) {
        pthread_mutex_lock(&m->mu);
        Fetch f;
        bool any = m->fetches.len > 0;
        if (any) f = m->fetches.data[--m->fetches.len];
        pthread_mutex_unlock(&m->mu);
        if (!any) return FL_OK;
        FlTensor t = FL_TENSOR_INIT;
        FlStatus st = finish_get(m, &f, &t, e);
        fl_tensor_fini(&t);
        if (st != FL_OK) return FL_ERROR;
    }
}

/* fetch_barrier: every recv has completed already. send_barrier: every gradient is posted, and
 * a pserver reads a trainer's messages in order, so its GETs after the barrier wait for the
 * block updates the gradients take part in; waiting here for the payloads to be received would
 * only keep the GETs back (and the parameters that are ready from coming back while the server
 * still receives the others). So it completes what has completed; fl_mpi_step_end waits for
 * the rest. */
static FlStatus t_barrier(FlDist *d, FlDistBarrier kind, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    if (kind == FL_DIST_FETCH_BARRIER) return FL_OK;
    double t0 = now();
    FlStatus st = progress(m, false, e);
    add_comm(m, t0);
    return st;
}

/* ---------------------------------------------------------------- allreduce */

#define RED_SEG (1 << 30) /* bytes per message of the ring (counts are ints) */
#define TAG_RING 7         /* on the trainers' communicator */

/* Sends `sb` bytes at `snd` to trainer `to` while receiving `rb` bytes into `rcv` from trainer
 * `from` (ranks of the trainers' communicator), in messages of at most RED_SEG bytes, polled. */
static FlStatus exchange(FlMpi *m, const char *snd, size_t sb, int to, char *rcv, size_t rb, int from, FlErr *e) {
    enum { MAXR = 16 };
    for (size_t so = 0, ro = 0; so < sb || ro < rb;) {
        MPI_Request r[MAXR];
        int nr = 0;
        int rc = MPI_SUCCESS;
        for (; rc == MPI_SUCCESS && so < sb && nr < MAXR / 2; so += RED_SEG) {
            size_t len = sb - so < RED_SEG ? sb - so : RED_SEG;
            if ((rc = MPI_Isend(snd + so, (int)len, MPI_BYTE, to, TAG_RING, m->role_comm, &r[nr])) == MPI_SUCCESS) nr++;
        }
        int ns = nr; /* r[0, ns) are sends */
        for (int k = 0; rc == MPI_SUCCESS && ro < rb && k < MAXR / 2; k++, ro += RED_SEG) {
            size_t len = rb - ro < RED_SEG ? rb - ro : RED_SEG;
            if ((rc = MPI_Irecv(rcv + ro, (int)len, MPI_BYTE, from, TAG_RING, m->role_comm, &r[nr])) == MPI_SUCCESS) nr++;
        }
        if (rc != MPI_SUCCESS) {
            drop_reqs(r, nr);
            return mpi_err(e, rc, "allreduce");
        }
        for (int k = 0; k < nr; k++)
            if (wait_req(m, &r[k], NULL, m->trainer_rank[k < ns ? to : from], "reducing the gradients", e) != FL_OK) {
                drop_reqs(r + k, nr - k);
                return FL_ERROR;
            }
    }
    return FL_OK;
}

/* Ring allreduce of `n` elements of dtype dt at buf over the T trainers, in place: T-1 steps in
 * which each trainer sends one of T chunks to the next trainer and adds the chunk it receives
 * from the previous one (after which trainer t holds the sum of chunk t+1), then T-1 steps that
 * pass the summed chunks round. Every trainer ends with the same values; each sends and receives
 * 2 (T-1)/T of the buffer. `tmp` holds one chunk. */
static FlStatus ring_allreduce(FlMpi *m, FlDType dt, char *buf, size_t n, char *tmp, FlErr *e) {
    int T = m->T, me = m->index, next = (me + 1) % T, prev = (me + T - 1) % T;
    size_t es = fl_dtype_size(dt);
#define CHUNK0(c) ((size_t)(c) * (n / (size_t)T) + ((size_t)(c) < n % (size_t)T ? (size_t)(c) : n % (size_t)T))
#define CHUNKN(c) (n / (size_t)T + ((size_t)(c) < n % (size_t)T))
    for (int k = 0; k < T - 1; k++) { /* reduce-scatter */
        int sc = (me - k + T) % T, rc = (me - k - 1 + 2 * T) % T;
        if (exchange(m, buf + CHUNK0(sc) * es, CHUNKN(sc) * es, next, tmp, CHUNKN(rc) * es, prev, e) != FL_OK)
            return FL_ERROR;
        size_t cn = CHUNKN(rc);
        if (dt == FL_DT_FLOAT32) {
            float *o = (float *)buf + CHUNK0(rc);
            const float *x = (const float *)tmp;
            for (size_t i = 0; i < cn; i++) o[i] += x[i];
        } else {
            double *o = (double *)buf + CHUNK0(rc);
            const double *x = (const double *)tmp;
            for (size_t i = 0; i < cn; i++) o[i] += x[i];
        }
    }
    for (int k = 0; k < T - 1; k++) { /* allgather */
        int sc = (me + 1 - k + T) % T, rc = (me - k + T) % T;
        if (exchange(m, buf + CHUNK0(sc) * es, CHUNKN(sc) * es, next, buf + CHUNK0(rc) * es, CHUNKN(rc) * es, prev, e) !=
            FL_OK)
            return FL_ERROR;
    }
#undef CHUNK0
#undef CHUNKN
    return FL_OK;
}

/* Per float dtype: every input of that dtype scaled by this trainer's weight into one new
 * buffer, summed over the trainers in place (ring_allreduce); the outputs are views of it (no
 * copy back; the buffer goes when the last of them is released). */
static FlStatus t_allreduce(FlDist *d, size_t n, const char *const *names, const FlTensor *in, FlTensor *out, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    if (!m->assigned || m->role != FL_MPI_TRAINER)
        return fl_err(e, "allreduce: only trainers reduce gradients (this is %s)", m->who);
    for (size_t i = 0; i < n; i++)
        if (in[i].dtype != FL_DT_FLOAT32 && in[i].dtype != FL_DT_FLOAT64)
            return fl_err(e, "allreduce: '%s' is %s; only float tensors are reduced", names[i], fl_dtype_name(in[i].dtype));
    double t0 = now(), w = m->rows_global > 0 ? (double)m->rows / (double)m->rows_global : 1.0 / m->T;
    FlStatus st = FL_OK;
    pthread_mutex_lock(&m->red_mu);
    for (int pass = 0; pass < 2 && st == FL_OK; pass++) {
        FlDType dt = pass ? FL_DT_FLOAT64 : FL_DT_FLOAT32;
        size_t es = fl_dtype_size(dt), total = 0;
        for (size_t i = 0; i < n; i++)
            if (in[i].dtype == dt) total += (size_t)fl_tensor_numel(&in[i]);
        if (!total) continue;
        size_t need = (total / (size_t)m->T + 1) * es; /* one chunk of the ring */
        if (need > m->red_cap) {
            free(m->red);
            m->red_cap = need;
            m->red = fl_xmalloc(m->red_cap);
        }
        FlTensor packed = FL_TENSOR_INIT;
        int64_t ne1 = (int64_t)total;
        if ((st = fl_tensor_alloc_uninit(e, &packed, dt, 1, &ne1)) != FL_OK) break;
        char *buf = fl_tensor_data(&packed);
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            if (in[i].dtype != dt) continue;
            int64_t k = fl_tensor_numel(&in[i]);
            if (dt == FL_DT_FLOAT32) {
                const float *x = fl_tensor_data(&in[i]);
                float *o = (float *)buf + at, wf = (float)w;
                for (int64_t j = 0; j < k; j++) o[j] = wf * x[j];
            } else {
                const double *x = fl_tensor_data(&in[i]);
                double *o = (double *)buf + at;
                for (int64_t j = 0; j < k; j++) o[j] = w * x[j];
            }
            at += (size_t)k;
        }
        if (m->T > 1) st = ring_allreduce(m, dt, buf, total, m->red, e);
        at = 0;
        for (size_t i = 0; i < n && st == FL_OK; i++) {
            if (in[i].dtype != dt) continue;
            st = fl_tensor_view(e, &out[i], &packed, (int64_t)at, in[i].ndim, in[i].ne);
            at += (size_t)fl_tensor_numel(&in[i]);
        }
        fl_tensor_fini(&packed);
        pthread_mutex_lock(&m->mu);
        m->bytes += m->T > 1 ? 2 * (total * es) * (size_t)(m->T - 1) / (size_t)m->T : 0;
        m->msgs += 2 * (uint64_t)(m->T - 1);
        pthread_mutex_unlock(&m->mu);
    }
    pthread_mutex_unlock(&m->red_mu);
    add_comm(m, t0);
    return st;
}

void fl_mpi_step_begin(FlMpi *m, int64_t step, size_t rows, size_t rows_global) {
    m->step = step;
    m->rows = (int64_t)rows;
    m->rows_global = (int64_t)rows_global;
    if (step + 1 > m->steps) m->steps = step + 1;
}

FlStatus fl_mpi_step_end(FlMpi *m, FlErr *e) {
    double t0 = now();
    FlStatus st = drain_fetches(m, e);
    if (st == FL_OK) st = progress(m, true, e);
    add_comm(m, t0);
    return st;
}

void fl_mpi_add_compute(FlMpi *m, double seconds) {
    pthread_mutex_lock(&m->mu);
    m->compute += seconds;
    pthread_mutex_unlock(&m->mu);
}

FlStatus fl_mpi_gather_trainers(FlMpi *m, const double *mine, size_t n, double *all, FlErr *e) {
    FL_ASSERT(m->assigned && m->role == FL_MPI_TRAINER);
    double t0 = now();
    MPI_Request r;
    MPI_TRY(MPI_Igather(mine, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, 0, m->role_comm, &r), "gathering figures");
    FlStatus st = wait_req(m, &r, NULL, -1, "gathering the trainers' figures", e);
    add_comm(m, t0);
    return st;
}

FlStatus fl_mpi_finish(FlMpi *m, FlErr *e) {
    if (!m->assigned || m->role != FL_MPI_TRAINER) return FL_OK;
    if (drain_fetches(m, e) != FL_OK) return FL_ERROR;
    for (int p = 0; p < m->P; p++)
        if (post(m, m->pserver_rank[p], TAG_HDR, K_DONE, 0, "", NULL, NULL, 0, e) != FL_OK) return FL_ERROR;
    return progress(m, true, e);
}

/* ---------------------------------------------------------------- pserver side */

#define RECV_WINDOW 2 /* pieces of one payload the sync server receives at once */

/* A gradient payload of a sync step that travels in pieces, received piece by piece: its
 * receives are posted as soon as its header is read (so a trainer's later headers, its GETs
 * among them, are read meanwhile), at most RECV_WINDOW at a time, and a trainer's payloads in
 * the order of their headers (MPI pairs a sender's data messages with receives in order). */
typedef struct SRecv {
    Hdr h;
    int t, src;
    long gi;
    FlTensor x; /* the payload, filled piece by piece (not in ring mode) */
    char *ring; /* a streamed gradient: its pieces land here in turn (RECV_WINDOW of them) */
    int64_t pieces, posted, done, consumed; /* consumed: pieces the stream has applied */
    MPI_Request req[RECV_WINDOW]; /* pieces [done, posted); piece c at c % RECV_WINDOW */
    double since;                 /* its last progress */
} SRecv;

typedef struct SGrad {
    const char *name;   /* as grad_to_block names it */
    size_t block;
    FlVar **per_trainer; /* "<name>.trainer_t" vars (transpiled sync), else NULL */
    FlVar *var;          /* "<name>" itself */
    bool *have;          /* per trainer, this step: its header is in */
    FlTensor acc;        /* hand-written sync: the row-weighted mean so far */
    bool fused;          /* transpiled sync with the block's sum + scale done here (FlDistMean) */
    FlDistMean mean;
    FlTensor *got;       /* fused: per trainer, the gradient (filled as its pieces arrive) */
    double *w;           /* fused: per trainer, its weight T * rows_t / rows_global */
    SRecv **rin;         /* fused: per trainer, the receive still filling got[t], or NULL */
    unsigned char *kind; /* fused: per trainer, this step: GK_* */
    char **ringbuf;      /* fused: per trainer, its ring (RECV_WINDOW pieces), made on first use */
} SGrad;

/* How a fused gradient's trainer sent it this step: not yet, a zero gradient, in pieces that go
 * through its ring (streamed), or whole into got[t]. */
enum { GK_NONE, GK_ZERO, GK_RING, GK_FULL };

typedef struct SBlock {
    size_t need;        /* gradient messages per step (grads x T) */
    size_t hdrs, have;  /* of them, this step: headers read, payloads complete */
    int64_t step;       /* the step being collected; -1: none */
    int64_t done;       /* the last step whose update is done; -1: none yet */
    double since;
    bool *contrib;      /* per trainer */
    size_t skip;        /* leading ops the server does itself (a fused mean) */
    /* A streamed update: a block of one fused gradient whose update is element-wise
     * (FlDistUpdate) takes the pieces of the step's gradient as they arrive from all trainers:
     * averages them, applies them and sends the parameter's updated piece to the trainers
     * waiting for it, while the next pieces are still being received. */
    SGrad *g;           /* the block's one fused gradient whose update is element-wise, or NULL */
    int streaming;      /* this step: 0 undecided, 1 streamed, -1 done whole */
    FlDistUpdate *upd;
    char *meanbuf;      /* one piece of the averaged gradient (made on first use) */
    bool plain;         /* the mean is trainer 0's gradient as received (T = 1, weight 1, no scale) */
    FlDType dt;         /* the gradient's dtype and elements */
    int64_t n;
    int64_t pieces, applied;
} SBlock;

typedef struct SGet {
    int64_t step; /* the requesting trainer's step */
    int src, tag;
    char *name;
    FlVar *var;
    size_t block;   /* the block writing var */
    int64_t sent;   /* a streamed answer: pieces posted; -1: none (answered whole) */
    FlTensor t;     /* a streamed answer: the tensor its pieces come from */
} SGet;

/* A var's writing block, cached per var (Server.writers, keyed by the FlVar pointer's bytes). */
typedef struct SWriter {
    FlVar *v;
    long k; /* -1: no optimize block writes it */
} SWriter;

typedef struct Server {
    FlMpi *m;
    FlDistServer *srv;
    SGrad *g;
    size_t ng;
    SBlock *b;
    size_t nb;
    int64_t lr_step;
    FL_VEC(SGet) gets;
    FlMap grads;   /* SGrad.name -> SGrad */
    FlMap writers; /* FlVar * -> SWriter */
    FL_VEC(SRecv *) recvs; /* sync: payloads being received, in header order */
    bool *blocked;         /* per trainer, scratch of advance() */
} Server;

/* "W@GRAD.block3" -> length of "W@GRAD", or 0 when the name has no .blockK suffix. */
static size_t strip_block(const char *name) { return fl_rule_block_base_len(name, NULL); }

static long find_grad(Server *s, const char *name) {
    SGrad *g = fl_map_find_str(&s->grads, name);
    size_t n;
    if (!g && (n = strip_block(name))) g = fl_map_find(&s->grads, name, n);
    return g ? (long)(g - s->g) : -1;
}

/* The server's var for `name`, or for name minus ".blockK" when the server holds it whole. */
static FlVar *find_var(Server *s, const char *name, const char **resolved, char *tmp, size_t ntmp) {
    FlVar *v = fl_dist_server_var(s->srv, name);
    *resolved = name;
    if (v) return v;
    size_t n = strip_block(name);
    if (!n || n >= ntmp) return NULL;
    memcpy(tmp, name, n);
    tmp[n] = 0;
    *resolved = tmp;
    return fl_dist_server_var(s->srv, tmp);
}

static FlStatus check_float(FlErr *e, const FlTensor *x, const char *name) {
    if (x->dtype == FL_DT_FLOAT32 || x->dtype == FL_DT_FLOAT64) return FL_OK;
    return fl_err(e, "gradient '%s' is %s; gradients must be float32 or float64", name, fl_dtype_name(x->dtype));
}

static FlStatus scale_add(FlErr *e, FlTensor *acc, const FlTensor *x, double w, const char *name) {
    int64_t n = fl_tensor_numel(x);
    if (check_float(e, x, name) != FL_OK) return FL_ERROR;
    if (!fl_tensor_has_data(acc)) {
        if (fl_tensor_alloc_like(e, acc, x, x->dtype) != FL_OK) return FL_ERROR;
        memset(fl_tensor_data(acc), 0, fl_tensor_nbytes(acc));
    }
    if (!fl_tensor_same_shape(acc, x) || acc->dtype != x->dtype)
        return fl_err(e, "gradient '%s': %s %s from one trainer, %s %s from another", name, fl_dtype_name(x->dtype),
                      fl_tensor_shape(x).s, fl_dtype_name(acc->dtype), fl_tensor_shape(acc).s);
    if (x->dtype == FL_DT_FLOAT32) {
        float *a = fl_tensor_data(acc);
        const float *b = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] += (float)w * b[i];
    } else {
        double *a = fl_tensor_data(acc);
        const double *b = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] += w * b[i];
    }
    return FL_OK;
}

static FlStatus scale_in_place(FlErr *e, FlTensor *x, double w, const char *name) {
    if (w == 1.0) return FL_OK;
    if (check_float(e, x, name) != FL_OK) return FL_ERROR;
    int64_t n = fl_tensor_numel(x);
    if (x->dtype == FL_DT_FLOAT32) {
        float *a = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] *= (float)w;
    } else {
        double *a = fl_tensor_data(x);
        for (int64_t i = 0; i < n; i++) a[i] *= w;
    }
    return FL_OK;
}

static FlStatus reply(Server *s, int src, int tag, const char *name, FlVar *v, FlErr *e) {
    FlTensor t = FL_TENSOR_INIT;
    if (!v || !fl_var_get_tensor(v, &t)) {
        char msg[NAME_MAX_LEN + 128];
        snprintf(msg, sizeof msg, "pserver %d holds no value for '%s'", s->m->index, name);
        return post(s->m, src, tag, K_ERROR, 0, name, NULL, msg, 0, e);
    }
    FlStatus st = post(s->m, src, tag, K_PARAM, 0, name, &t, NULL, 0, e);
    fl_tensor_fini(&t);
    return st;
}

/* The optimize block writing var v (named name), -1 when none; searched once per var. */
static long block_writing(Server *s, FlVar *v, const char *name) {
    SWriter *w = fl_map_find(&s->writers, (const char *)&v, sizeof v);
    if (w) return w->k;
    w = fl_xcalloc(1, sizeof *w);
    w->v = v;
    w->k = -1;
    for (size_t k = 0; k < s->nb && w->k < 0; k++)
        if (fl_dist_server_block_writes(s->srv, k, name)) w->k = (long)k;
    fl_map_put(&s->writers, (const char *)&w->v, sizeof w->v, w);
    return w->k;
}

/* The lr_block, once per step, before the step's first update. */
static FlStatus run_lr(Server *s, int64_t step, FlErr *e) {
    if (!fl_dist_server_has_lr(s->srv) || step <= s->lr_step) return FL_OK;
    s->lr_step = step;
    return fl_dist_server_run(s->srv, s->nb, e);
}

static FlStatus run_block(Server *s, size_t k, int64_t step, FlErr *e) {
    double t0 = now();
    FlStatus st = run_lr(s, step, e);
    if (st == FL_OK) st = fl_dist_server_run_from(s->srv, k, s->b[k].skip, e);
    s->m->compute += now() - t0;
    if (step + 1 > s->m->steps) s->m->steps = step + 1;
    return st;
}

/* n elements of a fused block's gradient into out from the trainers' src[t]: scale * sum_t w_t *
 * G_t + bias, the transpiled block's sum(G.trainer_t) and scale with the same float operations
 * in the same order. */
static void mean_piece(Server *s, const SGrad *g, FlDType dt, const void *const *src, void *out, int64_t n) {
    int T = s->m->T;
    const FlDistMean *mn = &g->mean;
    if (dt == FL_DT_FLOAT32) {
        const float *xs[64];
        float w[64];
        float sc = (float)mn->scale, bi = (float)mn->bias;
        float *o = out;
        for (int64_t j0 = 0; j0 < n; j0 += 4096) { /* trainers in chunks of 64 per pass */
            int64_t j1 = j0 + 4096 < n ? j0 + 4096 : n;
            for (int t0 = 0; t0 < T; t0 += 64) {
                int nt = T - t0 < 64 ? T - t0 : 64;
                for (int t = 0; t < nt; t++) {
                    xs[t] = src[t0 + t];
                    w[t] = (float)g->w[t0 + t];
                }
                for (int64_t i = j0; i < j1; i++) {
                    float a = t0 ? o[i] : w[0] * xs[0][i];
                    for (int t = t0 ? 0 : 1; t < nt; t++) a += w[t] * xs[t][i];
                    o[i] = a;
                }
            }
            for (int64_t i = j0; i < j1; i++) o[i] = mn->bias_after_scale ? sc * o[i] + bi : sc * (o[i] + bi);
        }
    } else {
        double *o = out;
        for (int64_t i = 0; i < n; i++) {
            double a = g->w[0] * ((const double *)src[0])[i];
            for (int t = 1; t < T; t++) a += g->w[t] * ((const double *)src[t])[i];
            o[i] = mn->bias_after_scale ? mn->scale * a + mn->bias : mn->scale * (a + mn->bias);
        }
    }
}

/* A fused block's trainers sent gradients of one float dtype and shape. */
static FlStatus check_same(Server *s, const SGrad *g, FlErr *e) {
    const FlTensor *x0 = &g->got[0];
    for (int t = 0; t < s->m->T; t++) {
        const FlTensor *x = &g->got[t];
        if (check_float(e, x, g->name) != FL_OK) return FL_ERROR;
        if (t && (!fl_tensor_same_shape(x, x0) || x->dtype != x0->dtype))
            return fl_err(e, "gradient '%s': %s %s from one trainer, %s %s from another", g->name, fl_dtype_name(x0->dtype),
                          fl_tensor_shape(x0).s, fl_dtype_name(x->dtype), fl_tensor_shape(x).s);
    }
    return FL_OK;
}

/* The mean is trainer 0's gradient as it came. */
static bool mean_is_plain(const Server *s, const SGrad *g) {
    return s->m->T == 1 && g->w[0] == 1.0 && g->mean.scale == 1.0 && g->mean.bias == 0.0;
}

/* A fused block's whole gradient, into its var. */
static FlStatus fused_mean(Server *s, SGrad *g, FlErr *e) {
    if (check_same(s, g, e) != FL_OK) return FL_ERROR;
    const FlTensor *x0 = &g->got[0];
    FlTensor r = FL_TENSOR_INIT;
    if (mean_is_plain(s, g)) {
        fl_tensor_ref(&r, x0);
    } else {
        if (spare_tensor(s->m, -1, g->name, x0->dtype, x0->ndim, x0->ne, fl_tensor_nbytes(x0), &r, e) != FL_OK)
            return FL_ERROR;
        const void **src = fl_xcalloc((size_t)s->m->T, sizeof *src);
        for (int t = 0; t < s->m->T; t++) src[t] = fl_tensor_data(&g->got[t]);
        mean_piece(s, g, x0->dtype, src, fl_tensor_data(&r), fl_tensor_numel(x0));
        free(src);
    }
    for (int t = 0; t < s->m->T; t++) fl_tensor_fini(&g->got[t]);
    fl_var_take_tensor(g->mean.out, &r);
    return FL_OK;
}

/* Block k's step is done (its update ran): reset it and answer the GETs that waited for it. */
static FlStatus finish_step(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    for (size_t i = 0; i < s->ng; i++) {
        SGrad *g = &s->g[i];
        if (g->block != k) continue;
        memset(g->have, 0, (size_t)s->m->T * sizeof *g->have);
        for (int t = 0; g->got && t < s->m->T; t++) {
            fl_tensor_fini(&g->got[t]);
            g->kind[t] = GK_NONE;
        }
    }
    b->done = b->step;
    b->step = -1;
    b->hdrs = b->have = 0;
    b->streaming = 0;
    memset(b->contrib, 0, (size_t)s->m->T * sizeof *b->contrib);
    size_t keep = 0;
    FlStatus st = FL_OK;
    for (size_t i = 0; i < s->gets.len; i++) {
        SGet *q = &s->gets.data[i];
        if (q->block == k && q->step <= b->done) {
            if (q->sent < 0 && st == FL_OK) st = reply(s, q->src, q->tag, q->name, q->var, e);
            fl_tensor_fini(&q->t);
            free(q->name);
        } else {
            s->gets.data[keep++] = *q;
        }
    }
    s->gets.len = keep;
    return st;
}

/* Sync: block k has every gradient of its step: store hand-written and fused means, run. */
static FlStatus complete(Server *s, size_t k, FlErr *e) {
    for (size_t i = 0; i < s->ng; i++) {
        SGrad *g = &s->g[i];
        if (g->block != k) continue;
        if (g->fused && fused_mean(s, g, e) != FL_OK) return FL_ERROR;
        if (!g->per_trainer) fl_var_take_tensor(g->var, &g->acc);
    }
    if (run_block(s, k, s->b[k].step, e) != FL_OK) return FL_ERROR;
    return finish_step(s, k, e);
}

/* A streamed block's GETs of this step: headers, then every piece applied so far. A GET of a
 * var the update does not write in pieces is answered whole when the step is done. */
static FlStatus stream_replies(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    for (size_t i = 0; i < s->gets.len; i++) {
        SGet *q = &s->gets.data[i];
        if (q->block != k || q->step > b->step) continue;
        if (q->sent < 0) {
            if (!fl_dist_update_tensor(b->upd, q->var, &q->t)) continue;
            if (fl_tensor_numel(&q->t) != b->n || q->t.dtype != b->dt) { /* not the pieces applied */
                fl_tensor_fini(&q->t);
                continue;
            }
            if (post_msg(s->m, q->src, q->tag, K_PARAM, 0, q->name, &q->t, NULL, 0, true, e) != FL_OK) return FL_ERROR;
            q->sent = 0;
        }
        for (; q->sent < b->applied; q->sent++)
            if (post_piece(s->m, q->src, q->tag, &q->t, q->sent, e) != FL_OK) return FL_ERROR;
    }
    return FL_OK;
}

/* Block k has every header of its step: when its gradient comes in pieces through the rings,
 * begin the streamed update (else the block runs whole once every payload is in). */
static FlStatus stream_begin(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    SGrad *g = b->g;
    FlMpi *m = s->m;
    b->streaming = -1;
    bool ring = false, full = false;
    for (int t = 0; t < m->T; t++) {
        ring |= g->kind[t] == GK_RING;
        full |= g->kind[t] == GK_FULL;
    }
    if (!ring) return FL_OK;
    if (full)
        return fl_err(e, "gradient '%s' comes in pieces of different sizes from different trainers (give every rank the "
                      "same --piece)", g->name);
    if (check_same(s, g, e) != FL_OK) return FL_ERROR;
    const FlTensor *x0 = &g->got[0]; /* its shape (a ring trainer's whole tensor is never filled) */
    b->dt = x0->dtype;
    b->n = fl_tensor_numel(x0);
    b->plain = mean_is_plain(s, g);
    if (!b->plain && !b->meanbuf) b->meanbuf = fl_xmalloc(m->piece);
    double t0 = now();
    FlStatus st = run_lr(s, b->step, e);
    if (st == FL_OK) st = fl_dist_update_begin(s->srv, k, b->skip, b->n, g->mean.out, b->dt, &b->upd, e);
    m->compute += now() - t0;
    if (st == FL_OK && !b->upd)
        st = fl_err(e, "optimize block %zu cannot apply gradient '%s' piece by piece: its state does not have the "
                    "gradient's shape", k, g->name);
    if (st != FL_OK) return st;
    b->streaming = 1;
    b->pieces = npieces(fl_tensor_nbytes(x0), m->piece);
    b->applied = 0;
    return FL_OK;
}

/* A streamed block: averages and applies the pieces every trainer's gradient has (freeing their
 * ring slots), answers, and ends the step after the last piece, once every payload is in. */
static FlStatus stream(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    SGrad *g = b->g;
    FlMpi *m = s->m;
    int T = m->T;
    int64_t avail = b->pieces;
    for (int t = 0; t < T; t++)
        if (g->rin[t] && g->rin[t]->done < avail) avail = g->rin[t]->done;
    size_t es = fl_dtype_size(b->dt);
    int64_t per = m->piece / (int64_t)es;
    const void *stack[8], **src = T <= 8 ? stack : fl_xcalloc((size_t)T, sizeof *src);
    double t0 = now();
    FlStatus st = FL_OK;
    for (; st == FL_OK && b->applied < avail; b->applied++) {
        int64_t c = b->applied, i0 = c * per, i1 = i0 + per < b->n ? i0 + per : b->n;
        for (int t = 0; t < T; t++)
            src[t] = g->kind[t] == GK_RING ? g->ringbuf[t] + (size_t)(c % RECV_WINDOW) * m->piece
                                           : (const char *)fl_tensor_data(&g->got[t]) + (size_t)i0 * es;
        const void *gp = src[0];
        if (!b->plain) {
            mean_piece(s, g, b->dt, src, b->meanbuf, i1 - i0);
            gp = b->meanbuf;
        }
        st = fl_dist_update_run(b->upd, i0, i1, gp, e);
        for (int t = 0; t < T; t++)
            if (g->rin[t]) g->rin[t]->consumed = c + 1;
    }
    if (src != stack) free(src);
    m->compute += now() - t0;
    if (st == FL_OK) st = stream_replies(s, k, e);
    if (st != FL_OK || b->applied < b->pieces || b->have < b->need) return st;
    st = fl_dist_update_end(b->upd, e);
    b->upd = NULL;
    if (b->step + 1 > m->steps) m->steps = b->step + 1;
    return st == FL_OK ? finish_step(s, k, e) : st;
}

/* Something of block k's step came in: stream, or run it whole when complete. */
static FlStatus block_progress(Server *s, size_t k, FlErr *e) {
    SBlock *b = &s->b[k];
    if (b->step < 0) return FL_OK;
    if (b->streaming == 0 && b->g && b->hdrs == b->need && stream_begin(s, k, e) != FL_OK) return FL_ERROR;
    if (b->streaming > 0) return stream(s, k, e);
    return b->have == b->need ? complete(s, k, e) : FL_OK;
}

/* Sync: trainer t's whole gradient x (taken) of entry g is in: weigh and store it. */
static FlStatus payload_in(Server *s, SGrad *g, int t, const Hdr *h, FlTensor *x, FlErr *e) {
    FlMpi *m = s->m;
    FlStatus st = FL_OK;
    double rows = (double)h->rows, global = (double)h->rows_global;
    double wt = global > 0 ? (double)m->T * rows / global : 1.0;
    if (g->fused) { /* kept as received; the mean weighs, sums and scales in one pass */
        st = check_float(e, x, g->name);
        fl_tensor_fini(&g->got[t]);
        g->got[t] = *x;
        *x = (FlTensor)FL_TENSOR_INIT;
        g->rin[t] = NULL;
    } else if (g->per_trainer) { /* G.trainer_t = T * rows_t / rows_global * G_t; the block sums and scales by 1/T */
        st = scale_in_place(e, x, wt, g->name);
        if (st == FL_OK) fl_var_take_tensor(g->per_trainer[t], x);
    } else { /* G = sum_t rows_t / rows_global * G_t */
        st = scale_add(e, &g->acc, x, global > 0 ? rows / global : 1.0 / m->T, g->name);
    }
    fl_tensor_fini(x);
    if (st != FL_OK) return FL_ERROR;
    s->b[g->block].have++;
    return block_progress(s, g->block, e);
}

/* A gradient's header. Async: received and applied at once. Sync: the step's bookkeeping now
 * (so that the trainer's GETs of the block wait for it); the payload now when it came inline,
 * else its receive starts (SRecv). */
static FlStatus on_grad(Server *s, int t, int src, const Hdr *h, const char *name, const char *payload, FlErr *e) {
    FlMpi *m = s->m;
    char pn[64];
    long gi = find_grad(s, name);
    if (gi < 0)
        return fl_err(e, "got gradient '%s' from %s, which no optimize block of this pserver takes", name,
                      peer_name(m, src, pn, sizeof pn));
    SGrad *g = &s->g[gi];
    FlTensor x = FL_TENSOR_INIT;
    if (!fl_dist_server_sync(s->srv)) { /* async: apply at once (a zero gradient: nothing to apply) */
        if (take_payload(m, h, name, payload, src, TAG_DATA, &x, e) != FL_OK) return FL_ERROR;
        if (h->flags & F_ZERO) {
            fl_tensor_fini(&x);
            return FL_OK;
        }
        fl_var_take_tensor(g->var, &x);
        return run_block(s, g->block, h->step, e);
    }
    SBlock *b = &s->b[g->block];
    if (b->step < 0) {
        b->step = h->step;
        b->since = now();
    } else if (h->step != b->step) {
        return fl_err(e, "got %s's gradient '%s' of step %lld while step %lld is incomplete", peer_name(m, src, pn, sizeof pn), name,
                      (long long)h->step, (long long)b->step);
    }
    if (g->have[t])
        return fl_err(e, "got gradient '%s' twice from %s in step %lld", name, peer_name(m, src, pn, sizeof pn),
                      (long long)h->step);
    g->have[t] = true;
    b->contrib[t] = true;
    b->hdrs++;
    if (g->fused) {
        double rows = (double)h->rows, global = (double)h->rows_global;
        g->w[t] = global > 0 ? (double)m->T * rows / global : 1.0;
    }
    /* a gradient its block streams goes through the trainer's ring: it is averaged and applied
     * piece by piece and never exists whole (x has its shape and no buffer) */
    bool ring = b->g == g && !(h->flags & (F_INLINE | F_ZERO)) && h->nbytes > m->piece && /* two pieces or more */
                h->piece == m->piece;
    int64_t pieces;
    if (payload_tensor(m, h, name, payload, src, ring, &x, &pieces, e) != FL_OK) return FL_ERROR;
    if (g->fused) g->kind[t] = (h->flags & F_ZERO) ? GK_ZERO : ring ? GK_RING : GK_FULL;
    if (pieces == 0) return payload_in(s, g, t, h, &x, e);
    SRecv *r = fl_xcalloc(1, sizeof *r);
    *r = (SRecv){.h = *h, .t = t, .src = src, .gi = gi, .x = x, .pieces = pieces, .since = now()};
    FL_VEC_PUSH(&s->recvs, r);
    if (g->fused) {
        fl_tensor_ref(&g->got[t], &r->x);
        g->rin[t] = r;
    }
    if (ring) {
        if (!g->ringbuf[t]) g->ringbuf[t] = fl_xmalloc((size_t)RECV_WINDOW * m->piece);
        r->ring = g->ringbuf[t];
    }
    return block_progress(s, g->block, e);
}

/* Sync: moves the payloads being received on: completes what arrived, posts the next pieces'
 * receives, and hands on what progressed; *moved tells whether anything did. A payload that
 * makes no progress for the timeout is an error naming its sender. */
static FlStatus advance(Server *s, bool *moved, FlErr *e) {
    FlMpi *m = s->m;
    double tn = now();
    memset(s->blocked, 0, (size_t)m->T * sizeof *s->blocked);
    for (size_t i = 0; i < s->recvs.len; i++) {
        SRecv *r = s->recvs.data[i];
        int64_t before = r->done;
        while (r->done < r->posted) {
            int flag = 0;
            MPI_TRY(MPI_Test(&r->req[r->done % RECV_WINDOW], &flag, MPI_STATUS_IGNORE), "receiving");
            if (!flag) break;
            r->done++;
        }
        /* a ring slot is free again once the stream has applied its piece */
        while (!s->blocked[r->t] && r->posted < r->pieces && r->posted - r->done < RECV_WINDOW &&
               (!r->ring || r->posted - r->consumed < RECV_WINDOW)) {
            int64_t c = r->posted;
            char *at = r->ring ? r->ring + (size_t)(c % RECV_WINDOW) * r->h.piece
                               : (char *)fl_tensor_data(&r->x) + (size_t)c * r->h.piece;
            MPI_TRY(MPI_Irecv(at, (int)piece_len(r->h.nbytes, r->h.piece, c), MPI_BYTE, r->src, TAG_DATA, MPI_COMM_WORLD,
                              &r->req[c % RECV_WINDOW]),
                    "posting a receive");
            r->posted++;
        }
        if (r->posted < r->pieces) s->blocked[r->t] = true; /* its later payloads wait their turn */
        bool waits_for_others = r->ring && r->done == r->posted && r->posted - r->consumed >= RECV_WINDOW;
        if (r->done > before) {
            *moved = true;
            r->since = tn;
        } else if (waits_for_others) { /* a full ring: the other trainers' silence is check_stalls' */
            r->since = tn;
        } else if (tn - r->since > m->timeout) {
            char pn[64];
            return fl_err(e, "receiving '%s': no data from %s for %.0f s (the peer timeout, flrun --timeout)",
                          s->g[r->gi].name, peer_name(m, r->src, pn, sizeof pn), m->timeout);
        }
    }
    size_t keep = 0;
    FlStatus st = FL_OK;
    for (size_t i = 0; i < s->recvs.len; i++) {
        SRecv *r = s->recvs.data[i];
        SGrad *g = &s->g[r->gi];
        if (st != FL_OK || r->done < r->pieces) {
            s->recvs.data[keep++] = r;
            if (st == FL_OK && r->done > 0 && s->b[g->block].streaming > 0) st = stream(s, g->block, e);
            continue;
        }
        st = payload_in(s, g, r->t, &r->h, &r->x, e);
        free(r);
    }
    s->recvs.len = keep;
    return st;
}

static FlStatus on_get(Server *s, int t, int src, const Hdr *h, const char *name, FlErr *e) {
    char tmp[NAME_MAX_LEN + 1];
    const char *res;
    FlVar *v = find_var(s, name, &res, tmp, sizeof tmp);
    if (!v) {
        char msg[NAME_MAX_LEN + 128];
        snprintf(msg, sizeof msg, "pserver %d has no var '%s'", s->m->index, name);
        return post(s->m, src, h->reply_tag, K_ERROR, 0, name, NULL, msg, 0, e);
    }
    long k = block_writing(s, v, res);
    /* Sync: a trainer's request in step s gets the block as updated by step s. It is held while
     * that update is not done: while the trainer's gradient is part of an unfinished step, and
     * also when the request overtook the gradient (a goroutine may recv while another sends),
     * and always while the block's update is streaming (its vars are half updated). */
    if (fl_dist_server_sync(s->srv) && k >= 0 &&
        ((s->b[k].step >= 0 && s->b[k].contrib[t]) || s->b[k].done < h->step || s->b[k].streaming > 0)) {
        SGet q = {.step = h->step, .src = src, .tag = h->reply_tag, .name = fl_xstrdup(name), .var = v,
                  .block = (size_t)k, .sent = -1, .t = FL_TENSOR_INIT};
        FL_VEC_PUSH(&s->gets, q);
        return s->b[k].streaming > 0 ? stream_replies(s, (size_t)k, e) : FL_OK;
    }
    return reply(s, src, h->reply_tag, name, v, e);
}

/* A block that waits longer than the timeout for some trainers' gradients: name them. */
static FlStatus check_stalls(Server *s, FlErr *e) {
    double t = now();
    for (size_t k = 0; k < s->nb; k++) {
        SBlock *b = &s->b[k];
        if (b->step < 0 || t - b->since <= s->m->timeout) continue;
        for (int i = 0; i < s->m->T; i++)
            if (!b->contrib[i]) {
                char pn[64];
                return fl_err(e, "step %lld: no gradient from %s for %.0f s (the peer timeout, flrun --timeout)",
                              (long long)b->step, peer_name(s->m, s->m->trainer_rank[i], pn, sizeof pn), s->m->timeout);
            }
    }
    return FL_OK;
}

/* Reads one waiting header (*got: whether one was waiting) and acts on it. */
static FlStatus read_header(Server *s, bool *done, int *ndone, bool *got, FlErr *e) {
    FlMpi *m = s->m;
    int flag = 0;
    MPI_Message msg;
    MPI_Status ms;
    MPI_TRY(MPI_Improbe(MPI_ANY_SOURCE, TAG_HDR, MPI_COMM_WORLD, &flag, &msg, &ms), "waiting for messages");
    *got = flag;
    if (!flag) return FL_OK;
    int count = 0;
    MPI_Get_count(&ms, MPI_BYTE, &count);
    int src = ms.MPI_SOURCE;
    char pn[64], buf[MSG_MAX], name[NAME_MAX_LEN + 1];
    if (count < 0 || (size_t)count > MSG_MAX)
        return fl_err(e, "a message of %d bytes from %s is too long", count, peer_name(m, src, pn, sizeof pn));
    MPI_TRY(MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "receiving");
    Hdr h;
    const char *payload;
    if (parse(m, src, buf, count, &h, name, &payload, e) != FL_OK) return FL_ERROR;
    if (m->role_of[src] != FL_MPI_TRAINER)
        return fl_err(e, "a message from %s, which is not a trainer", peer_name(m, src, pn, sizeof pn));
    int t = m->index_of[src];
    switch (h.kind) {
    case K_GRAD: return on_grad(s, t, src, &h, name, payload, e);
    case K_GET: return on_get(s, t, src, &h, name, e);
    case K_DONE:
        if (!done[t]) ++*ndone;
        done[t] = true;
        return FL_OK;
    default: return fl_err(e, "a message of unknown kind %d from %s", h.kind, peer_name(m, src, pn, sizeof pn));
    }
}

static FlStatus serve_loop(Server *s, FlErr *e) {
    FlMpi *m = s->m;
    bool *done = fl_xcalloc((size_t)m->T, sizeof *done);
    int ndone = 0;
    Backoff bo = {0};
    FlStatus st = FL_OK;
    while (st == FL_OK && (ndone < m->T || s->recvs.len > 0)) {
        if ((st = progress(m, false, e)) != FL_OK) break;
        bool moved = false, got = true;
        for (int n = 0; n < 256 && got && st == FL_OK; n++) { /* every header waiting, then the payloads */
            st = read_header(s, done, &ndone, &got, e);
            moved |= got;
        }
        if (st == FL_OK) st = advance(s, &moved, e);
        if (st != FL_OK) break;
        if (moved) {
            bo.n = 0;
        } else {
            st = check_stalls(s, e);
            backoff(&bo);
        }
    }
    if (st == FL_OK)
        for (size_t k = 0; k < s->nb; k++)
            if (s->b[k].step >= 0) {
                st = fl_err(e, "the trainers finished while step %lld of optimize block %zu was incomplete",
                            (long long)s->b[k].step, k);
                break;
            }
    if (st == FL_OK) st = progress(m, true, e);
    free(done);
    return st;
}

static FlStatus p_serve(FlDist *d, FlDistServer *srv, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    if (!m->assigned || m->role != FL_MPI_PSERVER)
        return fl_err(e, "listen_and_serv runs on pservers only (this is %s)", m->who);
    double t0 = now();
    Server s = {.m = m, .srv = srv, .lr_step = -1};
    s.ng = fl_dist_server_ngrads(srv);
    s.nb = fl_dist_server_nblocks(srv);
    s.g = fl_xcalloc(s.ng + 1, sizeof *s.g);
    s.b = fl_xcalloc(s.nb + 1, sizeof *s.b);
    fl_map_init(&s.grads);
    fl_map_init(&s.writers);
    FlStatus st = FL_OK;
    for (size_t k = 0; k < s.nb; k++) {
        s.b[k].step = -1;
        s.b[k].done = -1;
        s.b[k].contrib = fl_xcalloc((size_t)m->T, sizeof(bool));
    }
    char vn[NAME_MAX_LEN + 32];
    for (size_t i = 0; i < s.ng && st == FL_OK; i++) {
        SGrad *g = &s.g[i];
        g->name = fl_dist_server_grad(srv, i, &g->block);
        if (!fl_map_find_str(&s.grads, g->name)) fl_map_put_str(&s.grads, g->name, g); /* the first entry wins */
        g->acc = (FlTensor)FL_TENSOR_INIT;
        g->have = fl_xcalloc((size_t)m->T, sizeof(bool));
        s.b[g->block].need += (size_t)m->T;
        snprintf(vn, sizeof vn, "%s" FL_RULE_TRAINER_INFIX "0", g->name);
        if (fl_dist_server_sync(srv) && fl_dist_server_var(srv, vn)) {
            g->per_trainer = fl_xcalloc((size_t)m->T, sizeof *g->per_trainer);
            for (int t = 0; t < m->T && st == FL_OK; t++) {
                snprintf(vn, sizeof vn, "%s" FL_RULE_TRAINER_INFIX "%d", g->name, t);
                g->per_trainer[t] = fl_dist_server_var(srv, vn);
                if (!g->per_trainer[t])
                    st = fl_err(e, "the pserver program has no '%s': it was transpiled for fewer trainers than the job's %d", vn, m->T);
            }
        }
        g->var = fl_dist_server_var(srv, g->name);
        if (!g->per_trainer && !g->var && st == FL_OK)
            st = fl_err(e, "grad_to_block names '%s', which the pserver program does not declare", g->name);
    }
    /* a block taking one transpiled gradient whose head is its mean: do the mean on receipt */
    for (size_t i = 0; i < s.ng && st == FL_OK; i++) {
        SGrad *g = &s.g[i];
        size_t same = 0;
        for (size_t j = 0; j < s.ng; j++) same += s.g[j].block == g->block;
        if (!g->per_trainer || same != 1 || !fl_dist_server_find_mean(srv, g->block, g->name, m->T, &g->mean)) continue;
        g->fused = true;
        g->got = fl_xcalloc((size_t)m->T, sizeof *g->got);
        for (int t = 0; t < m->T; t++) g->got[t] = (FlTensor)FL_TENSOR_INIT;
        g->w = fl_xcalloc((size_t)m->T, sizeof *g->w);
        g->rin = fl_xcalloc((size_t)m->T, sizeof *g->rin);
        g->kind = fl_xcalloc((size_t)m->T, sizeof *g->kind);
        g->ringbuf = fl_xcalloc((size_t)m->T, sizeof *g->ringbuf);
        s.b[g->block].skip = g->mean.skip;
        if (fl_dist_server_updatable(srv, g->block, g->mean.skip)) s.b[g->block].g = g;
    }
    s.blocked = fl_xcalloc((size_t)m->T, sizeof *s.blocked);
    if (st == FL_OK) st = serve_loop(&s, e);
    for (size_t i = 0; i < s.ng; i++) {
        free(s.g[i].per_trainer);
        free(s.g[i].have);
        for (int t = 0; s.g[i].got && t < m->T; t++) fl_tensor_fini(&s.g[i].got[t]);
        free(s.g[i].got);
        free(s.g[i].w);
        free(s.g[i].rin);
        free(s.g[i].kind);
        for (int t = 0; s.g[i].ringbuf && t < m->T; t++) free(s.g[i].ringbuf[t]);
        free(s.g[i].ringbuf);
        fl_tensor_fini(&s.g[i].acc);
    }
    for (size_t k = 0; k < s.nb; k++) {
        free(s.b[k].contrib);
        fl_dist_update_free(s.b[k].upd);
        free(s.b[k].meanbuf);
    }
    for (size_t i = 0; i < s.recvs.len; i++) { /* after an error: drop what is still coming */
        SRecv *r = s.recvs.data[i];
        for (int64_t c = r->done; c < r->posted; c++) drop_reqs(&r->req[c % RECV_WINDOW], 1);
        fl_tensor_fini(&r->x);
        free(r);
    }
    FL_VEC_FREE(&s.recvs);
    free(s.blocked);
    for (size_t i = 0; i < s.gets.len; i++) {
        free(s.gets.data[i].name);
        fl_tensor_fini(&s.gets.data[i].t);
    }
    FL_VEC_FREE(&s.gets);
    fl_map_fini(&s.grads);
    for (size_t i = 0; i < s.writers.cap; i++)
        if (fl_map_slot_live(&s.writers, i)) free(s.writers.buckets[i].val);
    fl_map_fini(&s.writers);
    free(s.g);
    free(s.b);
    m->comm += now() - t0; /* the loop's time; compute is subtracted when printed */
    return st;
}


/* ---------------------------------------------------------------- stats */

void fl_mpi_get_stats(const FlMpi *m, FlMpiStats *out) {
    /* a pserver's loop time includes its optimize blocks; a trainer's run time its communication */
    bool server = m->assigned && m->role == FL_MPI_PSERVER;
    double comm = server ? m->comm - m->compute : m->comm;
    double compute = server ? m->compute : m->compute - m->comm;
    *out = (FlMpiStats){.bytes = m->bytes, .msgs = m->msgs, .steps = m->steps,
                        .comm = comm > 0 ? comm : 0, .compute = compute > 0 ? compute : 0};
}

void fl_mpi_print_stats(FlMpi *m, FILE *out) {
    if (!m->stats) return;
    FlMpiStats s;
    fl_mpi_get_stats(m, &s);
    double comm = s.comm, compute = s.compute;
    int64_t steps = m->steps > 0 ? m->steps : 1;
    double tot = comm + compute;
    fprintf(out,
            "flrun: stats %s: %lld steps, sent %llu bytes in %llu messages (%.0f bytes, %.1f messages per step), "
            "communication %.3f s, compute %.3f s (%.0f%% communication)\n",
            m->who, (long long)m->steps, (unsigned long long)m->bytes, (unsigned long long)m->msgs,
            (double)m->bytes / (double)steps, (double)m->msgs / (double)steps, comm, compute,
            tot > 0 ? 100.0 * comm / tot : 0.0);
    fflush(out);
}
