/* mpi.c: process setup and roles of the MPI transport (mpi.h): MPI's start and end, the
 * roles of the ranks (a plan's rank map, or each rank announcing its program's role), a
 * failing rank's abort, and the statistics.
 *
 * How: fl_mpi_init starts MPI (MPI_THREAD_MULTIPLE, errors returned, not fatal) and makes the
 * context with the FlDist hooks of trainer.c, allreduce.c and pserver.c; the assign functions
 * fill role_of per rank and number trainers and pservers in rank order (finish_roles), then
 * split a communicator per role.
 *
 * Invariants: m->assigned once roles are known (peer names say the role from then on); the
 * rank map is the same on every rank; fl_mpi_fail never returns and ends the whole job.
 */
#define _GNU_SOURCE
#include "runtime/mpi/mpi_impl.h"
#include "compiler/ops.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>


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
    m->trace = opt ? opt->trace : NULL;
    atomic_init(&m->seq, 0u);
    m->piece = piece;
    m->step = -1; /* no step yet: a GET now (a job that trains no step saving) reads the pservers' vars as they are */
    m->role_comm = MPI_COMM_NULL;
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    int tag_ub = flag && ub ? *ub : 32767;
    m->tag_pairs = (tag_ub - TAG_REPLY0) / 2;
    if (m->tag_pairs > 1 << 20) m->tag_pairs = 1 << 20;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->red_mu, NULL);
    pthread_mutex_init(&m->spare_mu, NULL);
    pthread_mutex_init(&m->alive_mu, NULL);
    pthread_cond_init(&m->alive_cv, NULL);
    /* backoff's 50 us sleeps would last 100 us with the default 50 us timer slack: a pserver
     * idle between steps then answers a step's first message that much later */
    prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0);
    snprintf(m->who, sizeof m->who, "rank %d", m->rank);
    fl_map_init(&m->spares);
    m->dist = (FlDist){.send = flm_t_send, .send_rows = flm_t_send_rows, .recv = flm_t_recv, .barrier = flm_t_barrier, .prefetch = flm_t_prefetch, .lookup = flm_t_lookup, .serve = flm_p_serve,
                       .allreduce = flm_t_allreduce, .allgather_rows = flm_t_allgather_rows,
                       .step_begin = flm_t_step_begin, .step_end = flm_t_step_end};
    *out = m;
    return FL_OK;
}

static void finish_barrier(FlMpi *m);
static void alive_stop(FlMpi *m);

void fl_mpi_free(FlMpi *m) {
    if (!m) return;
    finish_barrier(m);
    flm_watch_stop(m);
    alive_stop(m);
    flm_alive_poll(m); /* the last heartbeats */
    for (size_t i = 0; i < m->pend.len; i++) {
        free(m->pend.data[i].buf);
        fl_tensor_fini(&m->pend.data[i].ref);
    }
    FL_VEC_FREE(&m->pend);
    for (size_t i = 0; i < m->fetches.len; i++) flm_fetch_free(&m->fetches.data[i]); /* unclaimed (after an error) */
    FL_VEC_FREE(&m->fetches);
    for (size_t i = 0; i < m->saves.len; i++) flm_fetch_free(&m->saves.data[i]);
    FL_VEC_FREE(&m->saves);
    free(m->save_dir);
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
    free(m->host_of);
    free(m->trainer_rank);
    free(m->pserver_rank);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->red_mu);
    pthread_mutex_destroy(&m->spare_mu);
    pthread_mutex_destroy(&m->alive_mu);
    pthread_cond_destroy(&m->alive_cv);
    free((void *)m->heard);
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

/* ---------------------------------------------------------------- liveness */

/* A stopped or hung rank sends nothing; a busy one (a long evaluation, a large optimize block)
 * still does: every rank's heartbeat thread sends an empty TAG_ALIVE message to every other
 * rank each timeout/4 seconds, from the end of the announce exchange until the barrier before
 * MPI_Finalize has completed. A rank waiting without a request of its own to time out (the
 * pserver between steps, the finalising barrier) gives up on a peer it has heard nothing from
 * for the timeout. */
static void *alive_main(void *arg) {
    FlMpi *m = arg;
    MPI_Request *rq = fl_xmalloc((size_t)m->size * sizeof *rq);
    for (int r = 0; r < m->size; r++) rq[r] = MPI_REQUEST_NULL;
    double every = m->timeout / 4 > 0.01 ? m->timeout / 4 : 0.01;
    pthread_mutex_lock(&m->alive_mu);
    while (!m->alive_stop) {
        for (int r = 0; r < m->size; r++) {
            int done = 1;
            if (r == m->rank) continue;
            if (rq[r] != MPI_REQUEST_NULL && MPI_Test(&rq[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 0;
            if (done) MPI_Isend(NULL, 0, MPI_BYTE, r, TAG_ALIVE, MPI_COMM_WORLD, &rq[r]);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + every;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&m->alive_cv, &m->alive_mu, &ts);
    }
    pthread_mutex_unlock(&m->alive_mu);
    for (int r = 0; r < m->size; r++)
        if (rq[r] != MPI_REQUEST_NULL) MPI_Request_free(&rq[r]); /* an empty send: it completes alone */
    free(rq);
    return NULL;
}

static void alive_start(FlMpi *m) {
    m->heard = fl_xcalloc((size_t)m->size, sizeof *m->heard);
    for (int r = 0; r < m->size; r++) flm_heard(m, r);
    if (m->size < 2) return;
    m->alive_on = pthread_create(&m->alive_thread, NULL, alive_main, m) == 0;
}

static void alive_stop(FlMpi *m) {
    if (!m->alive_on) return;
    pthread_mutex_lock(&m->alive_mu);
    m->alive_stop = true;
    pthread_cond_signal(&m->alive_cv);
    pthread_mutex_unlock(&m->alive_mu);
    pthread_join(m->alive_thread, NULL);
    m->alive_on = false;
}

void flm_heard(FlMpi *m, int rank) {
    if (m->heard && rank >= 0 && rank < m->size) atomic_store(&m->heard[rank], (int64_t)(flm_now() * 1e9));
}

double flm_silent(const FlMpi *m, int rank) {
    if (!m->heard || rank < 0 || rank >= m->size) return 0;
    return flm_now() - (double)atomic_load(&m->heard[rank]) * 1e-9;
}

bool flm_waited_too_long(FlMpi *m, int peer, double waited) {
    if (waited <= m->timeout) return false;
    if (!m->heard) return true;
    flm_alive_poll(m);
    if (waited > FLM_ALIVE_FACTOR * m->timeout) return true;
    if (peer >= 0) return flm_silent(m, peer) > m->timeout;
    /* a collective: too long once one of its ranks is silent (a trainer's are the trainers') */
    bool trainers = m->assigned && m->role == FL_MPI_TRAINER;
    for (int k = 0; k < (trainers ? m->T : m->size); k++) {
        int r = trainers ? m->trainer_rank[k] : k;
        if (r != m->rank && flm_silent(m, r) > m->timeout) return true;
    }
    return false;
}

void flm_alive_poll(FlMpi *m) {
    for (int k = 0; m->heard && k < 256; k++) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        if (MPI_Improbe(MPI_ANY_SOURCE, TAG_ALIVE, MPI_COMM_WORLD, &flag, &msg, &st) != MPI_SUCCESS || !flag) return;
        MPI_Mrecv(NULL, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        flm_heard(m, st.MPI_SOURCE);
    }
}

/* The barrier before MPI_Finalize (which would wait without limit for a stopped rank), polled:
 * every rank has come, or one has been silent for the timeout (the job then ends). */
static void finish_barrier(FlMpi *m) {
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS) return;
    double t0 = flm_now();
    Backoff b = {0};
    for (;;) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) return;
        flm_alive_poll(m);
        for (int r = 0; r < m->size; r++) {
            double q = m->heard ? flm_silent(m, r) : flm_now() - t0;
            if (r != m->rank && q > m->timeout) {
                char pn[FLM_PEER_NAME_MAX], msg[256];
                snprintf(msg, sizeof msg, "finishing: no sign of life from %s for %.0f s " FL_MPI_PEER_TIMEOUT,
                         m->heard ? flm_peer_name(m, r, pn, sizeof pn) : "the other ranks", m->timeout);
                fl_mpi_fail(m, msg);
            }
        }
        flm_backoff(&b);
    }
}

/* ---------------------------------------------------------------- roles */

/* What every rank tells the others before anything else (the announce exchange, an allgather
 * of one fixed record per rank, polled with the peer timeout): what it runs (a plan or a
 * program of its own), its role and mode, and whether it could take them. Every rank then
 * decides from the same records (verdict), so an error seen by some ranks ends every rank's
 * start alike, and ranks running different things are told so instead of misreading each
 * other's messages. */
#define ANNOUNCE_MAGIC 0x33414c46u /* "FLA3": the record's layout; another layout is another flrun */
enum { AK_PLAN = 1, AK_PROGRAM = 2 };
enum { AM_NONE, AM_SYNC, AM_ASYNC, AM_ALLREDUCE };

typedef struct Announce {
    uint32_t magic;
    int32_t kind, role, mode; /* AK_*, FlMpiRole, AM_* */
    int32_t ok;               /* 0: msg says why this rank cannot take its role */
    int32_t timeline;         /* 1: the rank records a timeline (every rank or none must) */
    uint64_t plan_id; /* a plan: a hash of its bytes (every rank must run the same plan) */
    char file[64];    /* the file this rank runs (its last 63 bytes) */
    char msg[192];
    char host[FLM_HOST_MAX]; /* the rank's host name */
    int32_t nagree, pad;
    FlmAgree agree[FL_MPI_AGREE_MAX]; /* the options every rank (or trainer) must have alike */
} Announce;

/* FNV-1a of n bytes, continuing h (start: FNV_OFFSET). */
#define FNV_OFFSET 1469598103934665603ull
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const uint8_t *d = data;
    for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211ull;
    return h;
}

void fl_mpi_agree(FlMpi *m, const char *option, const char *key, const char *shown, bool trainers_only) {
    FL_ASSERT(m->nagree < FL_MPI_AGREE_MAX && strlen(option) < sizeof m->agree[0].option);
    FlmAgree *a = &m->agree[m->nagree++];
    memset(a, 0, sizeof *a);
    snprintf(a->option, sizeof a->option, "%s", option);
    size_t n = strlen(shown);
    if (n < sizeof a->shown) snprintf(a->shown, sizeof a->shown, "%s", shown);
    else snprintf(a->shown, sizeof a->shown, "%.*s...", (int)sizeof a->shown - 4, shown);
    a->key = fnv(FNV_OFFSET, key, strlen(key));
    a->trainers = trainers_only;
}

static void announce_init(Announce *a, int kind, const char *file) {
    memset(a, 0, sizeof *a);
    a->magic = ANNOUNCE_MAGIC;
    a->kind = kind;
    a->ok = 1;
    size_t n = strlen(file);
    snprintf(a->file, sizeof a->file, "%s", n >= sizeof a->file ? file + n - (sizeof a->file - 1) : file);
    char host[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = 0;
    snprintf(a->host, sizeof a->host, "%.*s", (int)sizeof a->host - 1, host);
}

static void announce_error(Announce *a, const char *msg) {
    if (!a->ok) return;
    a->ok = 0;
    snprintf(a->msg, sizeof a->msg, "%s", msg);
}

/* The first op of program p with the given id (in any block), or NULL. */
static const FlOpDesc *find_op(const FlProgram *p, FlOpId id) {
    for (size_t i = 0; i < p->blocks.len; i++)
        for (size_t j = 0; j < p->blocks.data[i]->ops.len; j++) {
            const FlOpDesc *op = p->blocks.data[i]->ops.data[j];
            const FlOpInfo *info = fl_ops_find(op->type);
            if (info && !info->is_grad && info->id == id) return op;
        }
    return NULL;
}

static bool attr_true(const FlOpDesc *op, const char *name) {
    const FlAttr *a = fl_ir_op_attr(op, name);
    return a && a->type == FL_ATTR_BOOL && a->i;
}

/* The mode of a hand-written program: a pserver's is listen_and_serv's sync_mode; a trainer is
 * allreduce with an allreduce op, sync with a barrier or a send marked sync, async with sends
 * and neither. */
static int program_mode(const FlProgram *p, FlMpiRole role) {
    if (role == FL_MPI_PSERVER) {
        const FlOpDesc *ls = find_op(p, FL_OPID_listen_and_serv);
        return ls && attr_true(ls, "sync_mode") ? AM_SYNC : AM_ASYNC;
    }
    if (find_op(p, FL_OPID_allreduce)) return AM_ALLREDUCE;
    if (find_op(p, FL_OPID_send_barrier) || find_op(p, FL_OPID_fetch_barrier)) return AM_SYNC;
    bool sends = false;
    for (size_t i = 0; i < p->blocks.len; i++)
        for (size_t j = 0; j < p->blocks.data[i]->ops.len; j++) {
            const FlOpDesc *op = p->blocks.data[i]->ops.data[j];
            const FlOpInfo *info = fl_ops_find(op->type);
            if (!info || info->is_grad || info->id != FL_OPID_send) continue;
            if (attr_true(op, "sync")) return AM_SYNC;
            sends = true;
        }
    return sends ? AM_ASYNC : AM_NONE;
}

/* "ranks 0-2" / "rank 4" / "ranks 0, 3" of the ranks r whose all[r] `pick` selects. */
static void rank_list(const Announce *all, int n, bool (*pick)(const Announce *, const void *), const void *arg,
                      FlBuf *out) {
    int count = 0, first = -1, last = -2;
    bool runs = true;
    for (int r = 0; r < n; r++)
        if (pick(&all[r], arg)) {
            if (first < 0) first = r;
            else if (r != last + 1) runs = false;
            last = r;
            count++;
        }
    if (count == 1) fl_buf_printf(out, "rank %d", first);
    else if (runs) fl_buf_printf(out, "ranks %d-%d", first, last);
    else {
        fl_buf_printf(out, "ranks");
        for (int r = 0, k = 0; r < n; r++)
            if (pick(&all[r], arg)) fl_buf_printf(out, "%s %d", k++ ? "," : "", r);
    }
}
static bool pick_kind(const Announce *a, const void *k) { return a->kind == *(const int *)k; }
static bool pick_trainer_mode(const Announce *a, const void *md) {
    return a->role == FL_MPI_TRAINER && a->mode == *(const int *)md;
}
static bool pick_role(const Announce *a, const void *role) { return a->role == *(const int *)role; }
static bool pick_not_allreduce(const Announce *a, const void *unused) {
    return a->role == FL_MPI_TRAINER && a->mode != AM_ALLREDUCE;
}
static bool pick_pserver_mode(const Announce *a, const void *md) {
    return a->role == FL_MPI_PSERVER && a->mode == *(const int *)md;
}
static bool pick_timeline(const Announce *a, const void *on) { return a->timeline == *(const int *)on; }
/* The ranks that compare option k (every rank, or the trainers) and have the value `key`. */
typedef struct AgreePick {
    int k;
    uint64_t key;
} AgreePick;
static bool agree_counts(const Announce *a, int k) { return !a->agree[k].trainers || a->role == FL_MPI_TRAINER; }
static bool pick_agree(const Announce *a, const void *arg) {
    const AgreePick *p = arg;
    return agree_counts(a, p->k) && a->agree[p->k].key == p->key;
}

/* The first option of the records that the ranks comparing it do not have alike, said in b:
 * each value (up to 4) with the ranks that have it. */
static bool options_differ(FlMpi *m, const Announce *all, FlBuf *b) {
    int n = m->size;
    for (int k = 0; k < all[0].nagree; k++) {
        int first = -1;
        bool differ = false;
        for (int r = 0; r < n; r++)
            if (agree_counts(&all[r], k)) {
                if (first < 0) first = r;
                else differ |= all[r].agree[k].key != all[first].agree[k].key;
            }
        if (!differ) continue;
        const FlmAgree *o = &all[first].agree[k];
        fl_buf_printf(b, "the ranks run with different %s: ", o->option);
        uint64_t seen[4];
        int nseen = 0;
        for (int r = first; r < n && nseen < 4; r++) {
            if (!agree_counts(&all[r], k)) continue;
            bool old = false;
            for (int i = 0; i < nseen; i++) old |= seen[i] == all[r].agree[k].key;
            if (old) continue;
            seen[nseen++] = all[r].agree[k].key;
            AgreePick p = {k, all[r].agree[k].key};
            int count = 0;
            for (int q = 0; q < n; q++) count += pick_agree(&all[q], &p);
            fl_buf_printf(b, "%s%s on ", nseen > 1 ? ", " : "", all[r].agree[k].shown);
            char pn[FLM_PEER_NAME_MAX];
            if (count == 1) fl_buf_puts(b, flm_peer_name(m, r, pn, sizeof pn));
            else rank_list(all, n, pick_agree, &p, b);
        }
        fl_buf_printf(b, "; every %s of a job needs the same %s", o->trainers ? "trainer" : "rank", o->option);
        return true;
    }
    return false;
}

/* Numbers trainers and pservers by rank order from the records' roles. */
static void number_roles(FlMpi *m, const Announce *all) {
    m->role_of = fl_xcalloc((size_t)m->size, sizeof *m->role_of);
    m->index_of = fl_xcalloc((size_t)m->size, sizeof *m->index_of);
    m->trainer_rank = fl_xcalloc((size_t)m->size, sizeof *m->trainer_rank);
    m->pserver_rank = fl_xcalloc((size_t)m->size, sizeof *m->pserver_rank);
    m->host_of = fl_xcalloc((size_t)m->size, sizeof *m->host_of);
    m->T = m->P = 0;
    m->hosts = false;
    for (int r = 0; r < m->size; r++) {
        memcpy(m->host_of[r], all[r].host, sizeof all[r].host);
        m->host_of[r][FLM_HOST_MAX - 1] = 0;
        m->hosts |= strcmp(m->host_of[r], m->host_of[0]) != 0;
        m->role_of[r] = all[r].role == FL_MPI_PSERVER ? FL_MPI_PSERVER : FL_MPI_TRAINER;
        if (m->role_of[r] == FL_MPI_PSERVER) {
            m->index_of[r] = m->P;
            m->pserver_rank[m->P++] = r;
        } else {
            m->index_of[r] = m->T;
            m->trainer_rank[m->T++] = r;
        }
    }
    m->TP = m->T;
    m->role = (FlMpiRole)m->role_of[m->rank];
    m->index = m->index_of[m->rank];
    m->assigned = true;
    flm_peer_name(m, m->rank, m->who, sizeof m->who);
}

/* The job's verdict on the records, the same on every rank: what was mixed, which ranks could
 * not take their roles, which modes disagree. */
static FlStatus verdict(FlMpi *m, const Announce *all, FlErr *e) {
    int n = m->size;
    for (int r = 0; r < n; r++) {
        bool same = all[r].magic == ANNOUNCE_MAGIC && all[r].nagree == all[0].nagree;
        for (int k = 0; same && k < all[r].nagree; k++)
            same = !strncmp(all[r].agree[k].option, all[0].agree[k].option, sizeof all[r].agree[k].option);
        if (!same) return fl_err(e, "rank %d runs another version of flrun (its announcement is not this one's)", r);
    }
    int plan = AK_PLAN, prog = AK_PROGRAM, nplan = 0;
    for (int r = 0; r < n; r++) nplan += all[r].kind == AK_PLAN;
    FlBuf b = {0};
    FlStatus st = FL_OK;
    if (nplan > 0 && nplan < n) {
        int rp = 0, rf = 0;
        while (all[rp].kind != AK_PLAN) rp++;
        while (all[rf].kind == AK_PLAN) rf++;
        rank_list(all, n, pick_kind, &plan, &b);
        fl_buf_printf(&b, " run the plan '%s' and ", all[rp].file);
        rank_list(all, n, pick_kind, &prog, &b);
        fl_buf_printf(&b, " run%s their own program ('%s'): a job runs either one plan on every rank "
                      "(mpirun -np N flrun X.plan) or hand-written programs only", n - nplan == 1 ? "s" : "", all[rf].file);
        st = fl_err(e, "the job mixes a plan with hand-written programs: %s", fl_buf_str(&b));
        goto done;
    }
    for (int r = 1; nplan && r < n; r++)
        if (all[r].plan_id != all[0].plan_id) {
            st = fl_err(e, "the ranks run different plans: rank 0 runs '%s', rank %d '%s' (every rank runs the same plan)",
                        all[0].file, r, all[r].file);
            goto done;
        }
    number_roles(m, all);
    int nbad = 0, first = -1;
    bool same = true;
    for (int r = 0; r < n; r++)
        if (!all[r].ok) {
            nbad++;
            if (first < 0) first = r;
            else same &= !strcmp(all[r].msg, all[first].msg);
        }
    if (nbad == n && same) { /* every rank has the same complaint: the job's, not a rank's */
        st = fl_err(e, "%s", all[first].msg);
        goto done;
    }
    if (first >= 0) {
        char pn[FLM_PEER_NAME_MAX];
        for (int r = 0, k = 0; r < n; r++)
            if (!all[r].ok && k++ < 4)
                fl_buf_printf(&b, "%s%s: %s", k > 1 ? "; " : "", flm_peer_name(m, r, pn, sizeof pn), all[r].msg);
        st = fl_err(e, "%s", fl_buf_str(&b));
        goto done;
    }
    if (m->T == 0) {
        st = fl_err(e, "the job has no trainer (every rank runs a listen_and_serv program)");
        goto done;
    }
    int ntl = 0, on = 1, off = 0;
    for (int r = 0; r < n; r++) ntl += all[r].timeline != 0;
    if (ntl > 0 && ntl < n) {
        rank_list(all, n, pick_timeline, &on, &b);
        fl_buf_printf(&b, " record a timeline (--timeline) and ");
        rank_list(all, n, pick_timeline, &off, &b);
        st = fl_err(e, "%s do%s not: a job's timeline takes every rank (give each the --timeline option)",
                    fl_buf_str(&b), n - ntl == 1 ? "es" : "");
        goto done;
    }
    if (options_differ(m, all, &b)) {
        st = fl_err(e, "%s", fl_buf_str(&b));
        goto done;
    }
    int sync = AM_SYNC, async = AM_ASYNC, ar = AM_ALLREDUCE;
    bool t_sync = false, t_ar = false, t_other = false, p_async = false;
    for (int r = 0; r < n; r++) {
        if (all[r].role == FL_MPI_TRAINER) {
            t_sync |= all[r].mode == AM_SYNC;
            t_ar |= all[r].mode == AM_ALLREDUCE;
            t_other |= all[r].mode != AM_ALLREDUCE;
        } else {
            p_async |= all[r].mode == AM_ASYNC;
        }
    }
    if (t_ar && (m->P > 0 || t_other)) {
        fl_buf_printf(&b, "allreduce trainers on ");
        rank_list(all, n, pick_trainer_mode, &ar, &b);
        if (m->P) {
            fl_buf_printf(&b, ", pservers on ");
            rank_list(all, n, pick_role, &(int){FL_MPI_PSERVER}, &b);
        } else {
            fl_buf_printf(&b, ", other trainers on ");
            rank_list(all, n, pick_not_allreduce, NULL, &b);
        }
        st = fl_err(e, "the job mixes modes: %s; allreduce trainers run in a job of allreduce trainers alone",
                    fl_buf_str(&b));
        goto done;
    }
    if (t_sync && p_async) {
        fl_buf_printf(&b, "sync trainers on ");
        rank_list(all, n, pick_trainer_mode, &sync, &b);
        fl_buf_printf(&b, ", async pservers on ");
        rank_list(all, n, pick_pserver_mode, &async, &b);
        st = fl_err(e, "the job mixes sync and async: %s; a sync trainer's barriers need sync pservers (run the "
                    "trainers and pservers of one plan or one mode, flc transpile --mode)", fl_buf_str(&b));
        goto done;
    }
done:
    fl_buf_free(&b);
    return st;
}

/* The announce exchange and its verdict; then the role communicators and the heartbeat. An
 * exchange that does not complete within the timeout (a rank that never comes) ends the job. */
static FlStatus assign(FlMpi *m, Announce *mine, FlErr *e) {
    /* the transport's own options: every rank's heartbeats and patience, its message pieces */
    char key[64], shown[64];
    snprintf(key, sizeof key, "%.17g", m->timeout);
    snprintf(shown, sizeof shown, "%g s", m->timeout);
    fl_mpi_agree(m, "--timeout", key, shown, false);
    snprintf(key, sizeof key, "%u", m->piece);
    snprintf(shown, sizeof shown, "%u bytes", m->piece);
    fl_mpi_agree(m, "--piece", key, shown, false);
    mine->nagree = m->nagree;
    memcpy(mine->agree, m->agree, sizeof m->agree);
    Announce *all = fl_xcalloc((size_t)m->size, sizeof *all);
    MPI_Request req;
    int rc = MPI_Iallgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, MPI_COMM_WORLD, &req);
    FlStatus st = rc == MPI_SUCCESS ? flm_wait_req(m, &req, NULL, -1, "announcing the roles", e)
                                    : flm_mpi_err(e, rc, "announcing the roles");
    if (st != FL_OK) fl_mpi_fail(m, e->msg); /* the others may wait for this rank: end them all */
    st = verdict(m, all, e);
    free(all);
    if (st != FL_OK) return st;
    rc = MPI_Comm_split(MPI_COMM_WORLD, (int)m->role, m->rank, &m->role_comm);
    if (rc != MPI_SUCCESS) {
        flm_mpi_err(e, rc, "splitting the roles");
        fl_mpi_fail(m, e->msg);
    }
    alive_start(m);
    flm_watch_start(m);
    /* the timeline's clocks, while every rank is here (a failure may leave others waiting) */
    if (m->trace && flm_clock_sync(m, e) != FL_OK) fl_mpi_fail(m, e->msg);
    return FL_OK;
}

/* A hash of what the plan runs (FNV-1a of its encoding), where each rank reads its data left
 * out: the readers' directories are the rank's own (the plan's folder on its host, its
 * --data-dir), so they are encoded from shallow copies without them. */
static uint64_t plan_id(const FlPlan *plan) {
    size_t n = plan->roles.len;
    FlPlan p = *plan;
    FlBundle **roles = fl_xcalloc(n + 1, sizeof *roles), *b = fl_xcalloc(n + 1, sizeof *b);
    FlReaderSpec *rd = fl_xcalloc(2 * n + 1, sizeof *rd);
    for (size_t k = 0; k < n; k++) {
        b[k] = *plan->roles.data[k];
        FlReaderSpec **rs[2] = {&b[k].run.reader, &b[k].run.test_reader};
        for (int i = 0; i < 2; i++)
            if (*rs[i]) {
                rd[2 * k + (size_t)i] = **rs[i];
                rd[2 * k + (size_t)i].base_dir = NULL;
                *rs[i] = &rd[2 * k + (size_t)i];
            }
        roles[k] = &b[k];
    }
    p.roles.data = roles;
    size_t len = 0;
    uint8_t *data = fl_ir_encode_plan(&p, &len);
    uint64_t h = fnv(FNV_OFFSET, data, len);
    free(data);
    free(rd);
    free(b);
    free(roles);
    return h;
}

int64_t fl_mpi_plan_role(const FlPlan *plan, int trainers, int rank) {
    int64_t skip = trainers > 0 ? plan->trainers - trainers : 0; /* the absent trainers' ranks */
    return plan->rank_role.data[rank < plan->trainers - skip ? rank : rank + skip];
}

FlStatus fl_mpi_assign_plan(FlMpi *m, const FlPlan *plan, int trainers, const char *file, FlErr *e) {
    Announce a;
    announce_init(&a, AK_PLAN, file);
    a.timeline = m->trace != NULL;
    a.plan_id = plan_id(plan);
    FL_ASSERT(trainers >= 0 && trainers <= plan->trainers);
    size_t nr = plan->rank_role.len - (size_t)(trainers ? plan->trainers - trainers : 0);
    char msg[sizeof a.msg];
    if ((size_t)m->size != nr && trainers && trainers != plan->trainers) {
        snprintf(msg, sizeof msg, "the job runs %d of the plan's %lld trainers (--trainers): it needs %zu ranks (%d trainer%s "
                 "+ %lld pservers) but has %d: run mpirun -np %zu flrun %s --trainers %d", trainers,
                 (long long)plan->trainers, nr, trainers, trainers == 1 ? "" : "s", (long long)plan->pservers, m->size, nr, file, trainers);
        announce_error(&a, msg);
    } else if ((size_t)m->size != nr) {
        snprintf(msg, sizeof msg, "the plan needs %zu ranks (%lld trainers + %lld pservers) but the job has %d: run "
                 "mpirun -np %zu flrun %s", nr, (long long)plan->trainers, (long long)plan->pservers, m->size, nr, file);
        announce_error(&a, msg);
    } else {
        /* fl_ir_validate_plan (the reader) holds the map to one rank per role, numbered in rank order */
        int64_t k = fl_mpi_plan_role(plan, trainers, m->rank);
        FL_ASSERT(k >= 0 && (size_t)k < plan->roles.len);
        const FlBundle *b = plan->roles.data[k];
        a.role = !strcmp(b->role, "pserver") ? FL_MPI_PSERVER : FL_MPI_TRAINER;
        a.mode = !strcmp(plan->mode, "allreduce") ? AM_ALLREDUCE : !strcmp(plan->mode, "async") ? AM_ASYNC : AM_SYNC;
    }
    FlStatus st = assign(m, &a, e);
    if (st == FL_OK) m->TP = (int)plan->trainers;
    return st;
}

FlStatus fl_mpi_assign_announce(FlMpi *m, const FlBundle *b, const char *file, FlErr *e) {
    Announce a;
    announce_init(&a, AK_PROGRAM, file);
    a.timeline = m->trace != NULL;
    bool server = !strcmp(b->role, "pserver") || find_op(b->main, FL_OPID_listen_and_serv);
    a.role = server ? FL_MPI_PSERVER : FL_MPI_TRAINER;
    a.mode = program_mode(b->main, (FlMpiRole)a.role);
    return assign(m, &a, e);
}

FL_NORETURN void fl_mpi_fail(FlMpi *m, const char *msg) {
    if (m) flm_watch_say(m, 'A'); /* the ranks the abort ends are not lost ones */
    fprintf(stderr, "flrun: %s: %s\n", m ? m->who : "rank ?", msg);
    fflush(stderr);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

/* ---------------------------------------------------------------- stats */

void fl_mpi_get_stats(const FlMpi *m, FlMpiStats *out) {
    /* a pserver's loop time includes its optimize blocks; a trainer's run time its communication */
    bool server = m->assigned && m->role == FL_MPI_PSERVER;
    double comm = server ? m->comm - m->compute : m->comm;
    double compute = server ? m->compute : m->compute - m->comm;
    *out = (FlMpiStats){.bytes = m->bytes, .msgs = m->msgs, .steps = m->steps, .sparse_rows = m->sp_rows,
                        .sparse_bytes = m->sp_bytes, .sparse_msgs = m->sp_msgs,
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
    if (s.sparse_msgs)
        fprintf(out,
                "flrun: stats %s: sparse gradients: %llu rows, %llu bytes in %llu messages (%.1f rows, %.0f bytes per "
                "step); dense: %llu bytes (%.0f per step)\n",
                m->who, (unsigned long long)s.sparse_rows, (unsigned long long)s.sparse_bytes,
                (unsigned long long)s.sparse_msgs, (double)s.sparse_rows / (double)steps,
                (double)s.sparse_bytes / (double)steps, (unsigned long long)(s.bytes - s.sparse_bytes),
                (double)(s.bytes - s.sparse_bytes) / (double)steps);
    if (m->lk_msgs)
        fprintf(out,
                "flrun: stats %s: distributed tables: %llu rows looked up in %llu requests (%.1f rows per step), "
                "%llu bytes sent and %llu received (%.0f and %.0f per step); all answers received: %llu bytes (%.0f per "
                "step)\n",
                m->who, (unsigned long long)m->lk_rows, (unsigned long long)m->lk_msgs, (double)m->lk_rows / (double)steps,
                (unsigned long long)m->lk_sent, (unsigned long long)m->lk_recv, (double)m->lk_sent / (double)steps,
                (double)m->lk_recv / (double)steps, (unsigned long long)m->rbytes, (double)m->rbytes / (double)steps);
    fflush(out);
}
