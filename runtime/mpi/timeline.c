/* timeline.c: the transport's part of `flrun --timeline` (mpi.h, "the timeline"): the ranks'
 * clock offsets against trainer 0, the transport's spans, and the gathering of every rank's
 * events to trainer 0.
 *
 * How: flm_clock_sync runs once, right after the roles are assigned (every rank is there):
 * trainer 0 takes the other ranks one after the other, FLM_CLOCK_ROUNDS ping-pongs each on
 * TAG_CLOCK (its receive posted before its ping, the rank's clock read as the ping is seen),
 * keeps the round with the smallest round trip and sends the rank its offset and trainer 0's
 * trace origin. fl_mpi_gather_bytes (the timeline's events, the profiler's tables) gathers byte
 * counts, then the bytes (MPI_Igatherv).
 *
 * Invariants: every wait is polled with the peer timeout (flm_wait_req); the clock exchange
 * uses its own tag, so nothing else of the protocol can be taken for it.
 */
#define _GNU_SOURCE
#include "runtime/mpi/mpi_impl.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Trainer 0's side with rank r: the best of the rounds into res {offset, rtt, origin}. */
static FlStatus measure(FlMpi *m, int r, int64_t res[3], FlErr *e) {
    int64_t best = INT64_MAX, off = 0;
    for (int k = 0; k < FLM_CLOCK_ROUNDS; k++) {
        int64_t tr = 0;
        int ping = k;
        MPI_Request rq, sq;
        MPI_TRY(MPI_Irecv(&tr, 1, MPI_INT64_T, r, TAG_CLOCK, MPI_COMM_WORLD, &rq), "measuring the clocks");
        int64_t t0 = fl_trace_now();
        int rc = MPI_Isend(&ping, 1, MPI_INT, r, TAG_CLOCK, MPI_COMM_WORLD, &sq);
        if (rc != MPI_SUCCESS) {
            flm_drop_reqs(&rq, 1);
            return flm_mpi_err(e, rc, "measuring the clocks");
        }
        if (flm_wait_req(m, &rq, NULL, r, "measuring the clocks (--timeline)", e) != FL_OK) {
            flm_drop_reqs(&sq, 1);
            return FL_ERROR;
        }
        int64_t t1 = fl_trace_now();
        if (flm_wait_req(m, &sq, NULL, r, "measuring the clocks (--timeline)", e) != FL_OK) return FL_ERROR;
        if (t1 - t0 < best) {
            best = t1 - t0;
            off = tr - (t0 + (t1 - t0) / 2);
        }
    }
    res[0] = off;
    res[1] = best;
    res[2] = fl_trace_origin(m->trace);
    return FL_OK;
}

/* Another rank's side: answers the pings with its clock, then takes the result. */
static FlStatus answer(FlMpi *m, int lead, int64_t res[3], FlErr *e) {
    for (int k = 0; k < FLM_CLOCK_ROUNDS; k++) {
        int ping = -1;
        MPI_Request rq, sq;
        MPI_TRY(MPI_Irecv(&ping, 1, MPI_INT, lead, TAG_CLOCK, MPI_COMM_WORLD, &rq), "measuring the clocks");
        if (flm_wait_req(m, &rq, NULL, lead, "measuring the clocks (--timeline)", e) != FL_OK) return FL_ERROR;
        int64_t tr = fl_trace_now();
        MPI_TRY(MPI_Isend(&tr, 1, MPI_INT64_T, lead, TAG_CLOCK, MPI_COMM_WORLD, &sq), "measuring the clocks");
        if (flm_wait_req(m, &sq, NULL, lead, "measuring the clocks (--timeline)", e) != FL_OK) return FL_ERROR;
    }
    MPI_Request rq;
    MPI_TRY(MPI_Irecv(res, 3, MPI_INT64_T, lead, TAG_CLOCK, MPI_COMM_WORLD, &rq), "measuring the clocks");
    return flm_wait_req(m, &rq, NULL, lead, "measuring the clocks (--timeline)", e);
}

FlStatus flm_clock_sync(FlMpi *m, FlErr *e) {
    FL_ASSERT(m->assigned && m->trace);
    int lead = m->trainer_rank[0];
    if (m->rank != lead) {
        int64_t res[3];
        if (answer(m, lead, res, e) != FL_OK) return FL_ERROR;
        m->clock = (FlMpiClock){.offset_ns = res[0], .rtt_ns = res[1], .origin_ns = res[2]};
        return FL_OK;
    }
    m->clock = (FlMpiClock){.origin_ns = fl_trace_origin(m->trace)};
    for (int r = 0; r < m->size; r++) {
        if (r == lead) continue;
        int64_t res[3];
        if (measure(m, r, res, e) != FL_OK) return FL_ERROR;
        MPI_Request sq;
        MPI_TRY(MPI_Isend(res, 3, MPI_INT64_T, r, TAG_CLOCK, MPI_COMM_WORLD, &sq), "measuring the clocks");
        if (flm_wait_req(m, &sq, NULL, r, "measuring the clocks (--timeline)", e) != FL_OK) return FL_ERROR;
    }
    return FL_OK;
}

void fl_mpi_clock(const FlMpi *m, FlMpiClock *out) { *out = m->clock; }

bool fl_mpi_is_lead(const FlMpi *m) { return m->assigned && m->role == FL_MPI_TRAINER && m->index == 0; }

const char *fl_mpi_host(const FlMpi *m) { return m->host_of ? m->host_of[m->rank] : "?"; }

void flm_span(FlMpi *m, const char *name, int64_t t0, const char *var, const char *fmt, ...) {
    int64_t t1 = fl_trace_now();
    FlBuf b = {0};
    if (var) {
        fl_buf_puts(&b, "\"var\":");
        fl_trace_json_str(&b, var);
    }
    if (fmt) {
        if (var) fl_buf_putc(&b, ',');
        va_list ap;
        va_start(ap, fmt);
        fl_buf_vprintf(&b, fmt, ap);
        va_end(ap);
    }
    fl_trace_span_take(m->trace, "mpi", name, t0, t1, b.data);
}

FlStatus fl_mpi_gather_bytes(FlMpi *m, const char *what, const char *hint, const char *mine, size_t n, FlBuf *all,
                             FlErr *e) {
    FL_ASSERT(m->assigned);
    int root = m->trainer_rank[0];
    bool lead = m->rank == root;
    if (n > INT_MAX) return fl_err(e, "%s of %s is %zu bytes, more than MPI can gather (2 GiB)", what, m->who, n);
    int count = (int)n;
    int *counts = lead ? fl_xcalloc((size_t)m->size, sizeof *counts) : NULL;
    int *displs = lead ? fl_xcalloc((size_t)m->size, sizeof *displs) : NULL;
    char *got = NULL, ctx[96];
    snprintf(ctx, sizeof ctx, "gathering %s", what);
    FlStatus st = FL_ERROR;
    MPI_Request req;
    int rc = MPI_Igather(&count, 1, MPI_INT, counts, 1, MPI_INT, root, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) {
        flm_mpi_err(e, rc, ctx);
        goto done;
    }
    if (flm_wait_req(m, &req, NULL, -1, ctx, e) != FL_OK) goto done;
    size_t total = 0;
    for (int r = 0; lead && r < m->size; r++) {
        if (total + (size_t)counts[r] > INT_MAX) {
            /* the others are in the gather of the bytes already: end the job */
            char msg[256];
            snprintf(msg, sizeof msg, "error: the job's %s is more than MPI can gather (2 GiB)%s%s",
                     what + (strncmp(what, "the ", 4) ? 0 : 4), hint ? ": " : "", hint ? hint : "");
            fl_mpi_fail(m, msg);
        }
        displs[r] = (int)total;
        total += (size_t)counts[r];
    }
    if (lead) got = fl_xmalloc(total + 1);
    rc = MPI_Igatherv(mine, count, MPI_BYTE, got, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) {
        flm_mpi_err(e, rc, ctx);
        goto done;
    }
    if (flm_wait_req(m, &req, NULL, -1, ctx, e) != FL_OK) goto done;
    if (lead) fl_buf_append(all, got, total);
    st = FL_OK;
done:
    free(got);
    free(counts);
    free(displs);
    return st;
}

FlStatus fl_mpi_gather_timeline(FlMpi *m, const char *mine, size_t n, FlBuf *all, FlErr *e) {
    return fl_mpi_gather_bytes(m, "the timeline", "lower --timeline-events", mine, n, all, e);
}
