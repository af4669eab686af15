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
    m->dist = (FlDist){.send = flm_t_send, .recv = flm_t_recv, .barrier = flm_t_barrier, .prefetch = flm_t_prefetch, .serve = flm_p_serve,
                       .allreduce = flm_t_allreduce};
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
    for (size_t i = 0; i < m->fetches.len; i++) flm_fetch_free(&m->fetches.data[i]); /* unclaimed (after an error) */
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
    snprintf(m->who, sizeof m->who, "rank %d (%s %d)", m->rank, flm_role_name(m->role), m->index);
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
        return fl_err(e, "the plan's rank map does not number its %ss in rank order", flm_role_name(m->role));
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
