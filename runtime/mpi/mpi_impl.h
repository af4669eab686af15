/* mpi_impl.h: what the files of runtime/mpi share (never included from outside the folder):
 * the wire format (tags, message kinds, the header), the FlMpi context, and the helpers each
 * part uses from the others. mpi.h is the public contract; this is the folder's internal one.
 *
 *   mpi.c        process setup and roles: init/free, the rank map, the announce exchange,
 *                fail/abort, stats
 *   wire.c       the wire protocol: posting and parsing messages and their pieces, receive
 *                buffers, requests and the polled waits with their timeout
 *   trainer.c    the trainer client: send / recv / prefetch / barriers (the FlDist hooks), steps,
 *                finishing
 *   allreduce.c  the allreduce ring over the trainers
 *   pserver.c    the pserver loop (listen_and_serv): gradients, optimize blocks, streamed updates
 *   timeline.c   the timeline: clock offsets against trainer 0, spans, the gathering of events
 *   watch.c      a job on several hosts: the connections that name a rank whose process died
 *
 * Internal functions carry the prefix flm_; a function here is used by more than one file.
 */
#ifndef FL_MPI_IMPL_H
#define FL_MPI_IMPL_H

#include "runtime/mpi/mpi.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>

enum { TAG_HDR = 1, TAG_DATA = 2, TAG_ALIVE = 3, TAG_CLOCK = 4, TAG_REPLY0 = 16 };
enum { K_GRAD = 1, K_GET, K_PARAM, K_DONE, K_ERROR, K_LOOKUP, K_SAVE };
/* K_LOOKUP: rows of a distributed table's block; K_SAVE: write your shards into the directory
 * the name field holds (fl_mpi_save_ask) */
enum { F_INLINE = 1, F_ZERO = 2, F_ROWS = 4 }; /* F_ROWS: the payload is a packed SelectedRows (fl_rows_pack) */
#define MAGIC 0x324d4c46u /* "FLM2" */
#define NAME_MAX_LEN 1024
#define FLM_HOST_MAX 64       /* a host name as ranks tell it each other (longer ones are cut) */
#define FLM_PEER_NAME_MAX 128 /* "rank R (pserver I on HOST)" */
#define FLM_AGREE_SHOWN 64    /* bytes of an option's value a rank shows the others */

/* An option the ranks must have alike (fl_mpi_agree), as the announce exchange carries it. */
typedef struct FlmAgree {
    char option[24];
    char shown[FLM_AGREE_SHOWN];
    uint64_t key;     /* a hash of the compared value */
    int32_t trainers; /* 1: compared among the trainers only */
    int32_t pad;
} FlmAgree;

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
    uint32_t seq;       /* GRAD: the sender's message number (from 1), which with the sender's
                         * rank names the timeline's arrow from the send to its receipt */
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

/* A recv announced by prefetch (FlDist.prefetch): its GET is posted, its answer's header awaited.
 * While a trainer waits for one answer, the answers of its other prefetches that come in have
 * their pieces' receives posted at once (flm_advance_fetches), so the parameters the server has
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
    char (*host_of)[FLM_HOST_MAX]; /* per rank: its machine's host name (gethostname) */
    bool hosts;                    /* the ranks run on more than one host: names say where */
    int *trainer_rank, *pserver_rank;
    int T, P;
    int TP; /* the trainers the plan was transpiled for: T, or more when the job runs some of them
             * (a pserver's sync means count the absent ones as zero gradients) */
    FlMpiRole role;
    int index;
    MPI_Comm role_comm;
    char who[FLM_PEER_NAME_MAX];
    int64_t step, rows, rows_global;
    atomic_uint reqs;
    pthread_mutex_t mu; /* pend, posting order, stats */
    FL_VEC(Pending) pend;
    pthread_mutex_t spare_mu; /* spares (taken under mu or alone, never the other way round) */
    FlMap spares;          /* "src:name" -> Spare, under spare_mu */
    FL_VEC(Fetch) fetches; /* prefetched recvs not yet claimed, under mu */
    FL_VEC(Fetch) saves;   /* trainer 0: the SAVE requests whose answers fl_mpi_save_wait awaits */
    char *save_dir;        /* a pserver: the directory of the SAVE request received (NULL: none), */
    int save_src, save_tag; /* who asked and the answer's tag */
    pthread_mutex_t red_mu; /* allreduce: one at a time per process; red: one chunk of its ring */
    char *red;
    size_t red_cap;
    /* liveness (mpi.c): heard[r], the monotonic ns of rank r's last message (NULL before the
     * roles); the heartbeat thread and its stop signal */
    _Atomic int64_t *heard;
    pthread_t alive_thread;
    bool alive_on, alive_stop;
    pthread_mutex_t alive_mu;
    pthread_cond_t alive_cv;
    /* the watch (watch.c): NULL when off (one host, or rank 0 not reachable) */
    struct FlmWatch *watch;
    /* the timeline (timeline.c): NULL when off */
    FlTrace *trace;
    FlMpiClock clock;
    FlmAgree agree[FL_MPI_AGREE_MAX]; /* the options to compare at the announce exchange */
    int nagree;
    atomic_uint seq; /* GRAD messages sent (Hdr.seq) */
    /* stats */
    uint64_t bytes, msgs;
    uint64_t sp_rows, sp_bytes, sp_msgs; /* of them, SelectedRows gradients: rows, bytes, messages */
    uint64_t lk_rows, lk_sent, lk_recv, lk_msgs; /* distributed tables' lookups: rows asked, bytes of the
                                                  * requests sent and of the answers received, requests */
    uint64_t rbytes;                             /* a trainer: bytes of the answers it received */
    int64_t steps;
    double comm, compute;
    double step_t0; /* a driver's step (FlDist.step_begin): when it began */
};

/* ---- liveness (mpi.c) ---- */
/* Rank `rank` has just sent something. */
void flm_heard(FlMpi *m, int rank);
/* Seconds since rank `rank` last sent something (heartbeats included); 0 before the roles. */
double flm_silent(const FlMpi *m, int rank);
/* Whether a wait of `waited` seconds on rank `peer` (-1: a collective of several) has lasted too
 * long: past the timeout when the peer (one of the collective's ranks: the trainers for a
 * trainer, else every rank) is silent too (no heartbeat either: stopped, dead or cut off); past
 * FLM_ALIVE_FACTOR timeouts when they still send heartbeats (alive, but themselves waiting on
 * another rank). So the rank waiting on a dead peer reports it first, naming the right rank,
 * instead of a rank waiting on a live one that is stuck behind it (trainer 0 gathering the
 * figures while trainer 1 waits on a stopped pserver). Polls the heartbeats. */
#define FLM_ALIVE_FACTOR 3
bool flm_waited_too_long(FlMpi *m, int peer, double waited);

/* ---- the watch (watch.c) ---- */
typedef struct FlmWatch FlmWatch;
/* Collective, after the roles, in a job on several hosts: the connections to rank 0 and the
 * thread that ends the job naming a rank whose connection closes without a goodbye. */
void flm_watch_start(FlMpi *m);
/* Sends c to the watched peers: 'A', this rank fails (the abort's casualties are not lost ranks). */
void flm_watch_say(FlMpi *m, char c);
/* Once every rank has finished: the goodbye, then the thread and connections go. */
void flm_watch_stop(FlMpi *m);
/* Receives the heartbeats that have come (any thread may call it). */
void flm_alive_poll(FlMpi *m);

/* ---- helpers (wire.c) ---- */
double flm_now(void); /* monotonic seconds */
FlStatus flm_mpi_err(FlErr *e, int rc, const char *what);
#define MPI_TRY(call, what)                                       \
    do {                                                          \
        int rc_ = (call);                                         \
        if (rc_ != MPI_SUCCESS) return flm_mpi_err(e, rc_, what); \
    } while (0)
const char *flm_role_name(int r);
/* "rank 2 (pserver 0)" of any rank, into buf. */
/* "rank 2 (pserver 0)" of any rank, "rank 2 (pserver 0 on host3)" when the job spans hosts. */
const char *flm_peer_name(const FlMpi *m, int rank, char *buf, size_t n);
/* Withdraws n posted requests (after an error: their buffers may then go). */
void flm_drop_reqs(MPI_Request *r, int64_t n);

/* ---- waiting (wire.c) ---- */
typedef struct Backoff {
    unsigned n;
} Backoff;
/* Spin a little, then yield, then sleep 50 us. */
void flm_backoff(Backoff *b);
/* Waits for req, polling (with `adv`, the other prefetched answers move on meanwhile); gives up
 * after m->timeout naming peer (-1: "the other trainers"). */
FlStatus flm_wait_req_adv(FlMpi *m, MPI_Request *req, MPI_Status *st, int peer, const char *what, bool adv,
                          FlErr *e) FL_WARN_UNUSED;
FlStatus flm_wait_req(FlMpi *m, MPI_Request *req, MPI_Status *st, int peer, const char *what, FlErr *e) FL_WARN_UNUSED;
/* Completes what has completed of the posted sends; with `all`, waits for every one. */
FlStatus flm_progress(FlMpi *m, bool all, FlErr *e) FL_WARN_UNUSED;

/* ---- messages (wire.c) ---- */
/* The data messages of a payload of nbytes that is not inline: pieces of `piece` bytes. */
int64_t flm_npieces(uint64_t nbytes, uint32_t piece);
size_t flm_piece_len(uint64_t nbytes, uint32_t piece, int64_t c);
/* Posts one message to dest: the header on `tag` and, for a payload that is not inline, its
 * pieces on tag + 1, all of them unless `later` (the caller then posts each with
 * flm_post_piece as its bytes become final, in order). t: the tensor to send (NULL: none);
 * text: an inline text payload (ERROR replies); seq: Hdr.seq. */
FlStatus flm_post_msg(FlMpi *m, int dest, int tag, uint16_t kind, uint16_t flags, const char *name,
                      const FlTensor *t, const char *text, int32_t reply_tag, bool later, uint32_t seq,
                      FlErr *e) FL_WARN_UNUSED;
/* flm_post_msg without `later`, with seq 0. */
FlStatus flm_post(FlMpi *m, int dest, int tag, uint16_t kind, uint16_t flags, const char *name, const FlTensor *t,
                  const char *text, int32_t reply_tag, FlErr *e) FL_WARN_UNUSED;
/* Piece c of a message whose header flm_post_msg posted with `later`. */
FlStatus flm_post_piece(FlMpi *m, int dest, int tag, const FlTensor *t, int64_t c, FlErr *e) FL_WARN_UNUSED;
/* Checks a received message from rank src: its header, name and inline payload. */
FlStatus flm_parse(const FlMpi *m, int src, const char *buf, int count, Hdr *h, char *name, const char **payload,
                   FlErr *e) FL_WARN_UNUSED;
/* An uninitialised tensor of the given dtype and shape (nb bytes), from the Spare pool. */
FlStatus flm_spare_tensor(FlMpi *m, int src, const char *name, FlDType dt, int ndim, const int64_t *ne, size_t nb,
                          FlTensor *out, FlErr *e) FL_WARN_UNUSED;
/* A new tensor of the header's dtype and shape for its payload (*pieces: data messages to
 * come; `bare`: no buffer, the pieces go elsewhere). */
FlStatus flm_payload_tensor(FlMpi *m, const Hdr *h, const char *name, const char *payload, int src, bool bare,
                            FlTensor *out, int64_t *pieces, FlErr *e) FL_WARN_UNUSED;
/* Posts the receives of all np pieces of h's payload from src on data_tag into t. */
FlStatus flm_recv_pieces(const Hdr *h, FlTensor *t, int64_t np, int src, int data_tag, MPI_Request **out,
                         FlErr *e) FL_WARN_UNUSED;
/* Waits for the n requests in order; after an error none stays posted. */
FlStatus flm_wait_all(FlMpi *m, MPI_Request *rq, int64_t n, int src, const char *what, bool adv, FlErr *e) FL_WARN_UNUSED;
/* flm_payload_tensor, then every piece received. */
FlStatus flm_take_payload(FlMpi *m, const Hdr *h, const char *name, const char *payload, int src, int data_tag,
                          FlTensor *out, FlErr *e) FL_WARN_UNUSED;

/* ---- the trainer client (trainer.c) ---- */
/* Frees f, withdrawing what it still has posted (its header's receive, its pieces'). */
void flm_fetch_free(Fetch *f);
/* The prefetched answers whose headers have come start their pieces' receives. */
void flm_advance_fetches(FlMpi *m);
/* Adds the seconds since t0 to the communication time. */
void flm_add_comm(FlMpi *m, double t0);
FlStatus flm_t_send(FlDist *d, int ps, const char *name, const FlTensor *t, FlErr *e);
FlStatus flm_t_send_rows(FlDist *d, int ps, const char *name, const FlSelectedRows *r, FlErr *e);
FlStatus flm_t_recv(FlDist *d, int ps, const char *name, FlTensor *out, FlErr *e);
FlStatus flm_t_barrier(FlDist *d, FlDistBarrier kind, FlErr *e);
FlStatus flm_t_prefetch(FlDist *d, int ps, const char *name, FlErr *e);
void flm_t_step_begin(FlDist *d, int64_t step, int64_t rows, int64_t rows_global);
FlStatus flm_t_step_end(FlDist *d, FlErr *e);
FlStatus flm_t_lookup(FlDist *d, size_t n, const int *ps, const char *const *names, const FlTensor *ids, FlTensor *out,
                      FlErr *e);

/* ---- the allreduce ring (allreduce.c) ---- */
FlStatus flm_t_allreduce(FlDist *d, size_t n, const char *const *names, const FlTensor *in, FlTensor *out,
                         bool loss_sum, FlErr *e);
FlStatus flm_t_allgather_rows(FlDist *d, const char *name, const FlSelectedRows *in, bool loss_sum,
                              FlSelectedRows *out, FlErr *e);

/* ---- the timeline (timeline.c) ---- */
#define FLM_CLOCK_ROUNDS 8
/* Collective, after the roles (assign): the clock offsets of fl_mpi_clock. */
FlStatus flm_clock_sync(FlMpi *m, FlErr *e) FL_WARN_UNUSED;
/* A span [t0, now] of the transport in m->trace (the caller tests m->trace): name, and args
 * "var": var (when not NULL) then the members fmt prints (may be NULL). */
void flm_span(FlMpi *m, const char *name, int64_t t0, const char *var, const char *fmt, ...) FL_PRINTF(5, 6);
/* The flow id of GRAD message seq of rank `rank` (its send's arrow to the server's receipt). */
static inline uint64_t flm_flow_id(int rank, uint32_t seq) { return ((uint64_t)(unsigned)rank << 32) | seq; }

/* ---- the pserver loop (pserver.c) ---- */
FlStatus flm_p_serve(FlDist *d, FlDistServer *srv, FlErr *e);

#endif
