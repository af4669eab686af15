/* trainer.c: the trainer client of the transport: the FlDist hooks a trainer's send, recv,
 * prefetch and barrier ops call, the step bookkeeping, the figures gathered to trainer 0, and
 * the DONE that ends a trainer's part.
 *
 * How: a send posts a GRAD message to its pserver and returns (the pending sends complete in
 * flm_progress, fl_mpi_step_end waits for them); a recv posts the receive of the answer, then a
 * GET on a fresh reply tag pair, and waits; a prefetch does the same without waiting and queues
 * the Fetch, which a later recv of the same (pserver, var) claims. While a trainer waits, the
 * prefetched answers whose headers came start receiving their pieces (flm_advance_fetches).
 *
 * Invariants: every Fetch in m->fetches has its answer's receive posted and is claimed or
 * drained (drain_fetches) before the step ends, so no answer stays in flight; m->fetches and
 * the posting order are under m->mu; send/recv may be called from several threads at once.
 */
#define _GNU_SOURCE
#include "runtime/mpi/mpi_impl.h"

#include <stdlib.h>
#include <string.h>

/* Frees f, withdrawing what it still has posted (its header's receive, its pieces'). */
void flm_fetch_free(Fetch *f) {
    if (!f->in) flm_drop_reqs(&f->req, 1);
    flm_drop_reqs(f->preq, f->np);
    free(f->preq);
    fl_tensor_fini(&f->t);
    free(f->buf);
    free(f->name);
}

/* The rank of pserver ps (-1 in an op without epmap: the job's only pserver) for op `op` of
 * var `name`, or -1 with the error in e. */
static int pserver_rank(FlMpi *m, int ps, const char *name, const char *op, FlErr *e) {
    if (!m->assigned || m->role != FL_MPI_TRAINER)
        return fl_err(e, "%s '%s': only trainers send and receive (this is %s)", op, name, m->who), -1;
    if (m->P == 0) return fl_err(e, "%s '%s': the job has no pserver", op, name), -1;
    if (ps < 0) {
        if (m->P != 1)
            return fl_err(e, "%s '%s': the op names no pserver (epmap) and the job has %d pservers", op, name, m->P), -1;
        ps = 0;
    }
    if (ps >= m->P) return fl_err(e, "%s '%s' to pserver %d: the job has %d pservers", op, name, ps, m->P), -1;
    return m->pserver_rank[ps];
}

void flm_add_comm(FlMpi *m, double t0) {
    pthread_mutex_lock(&m->mu);
    m->comm += flm_now() - t0;
    pthread_mutex_unlock(&m->mu);
}

FlStatus flm_t_send(FlDist *d, int ps, const char *name, const FlTensor *t, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    int dest = pserver_rank(m, ps, name, "sending", e);
    if (dest < 0) return FL_ERROR;
    uint16_t flags = m->rows == 0 && m->rows_global > 0 ? F_ZERO : 0;
    uint32_t seq = atomic_fetch_add(&m->seq, 1u) + 1u;
    FlStatus st = flm_post_msg(m, dest, TAG_HDR, K_GRAD, flags, name, t, NULL, 0, false, seq, e);
    if (st == FL_OK) st = flm_progress(m, false, e);
    flm_add_comm(m, t0);
    if (m->trace) { /* the arrow's start, at the span's start: the server's receipt comes later */
        fl_trace_flow(m->trace, 's', "grad", flm_flow_id(m->rank, seq), ts);
        flm_span(m, "send grad", ts, name, "\"to\":%d,\"bytes\":%zu,\"step\":%lld", dest,
                 (flags & F_ZERO) ? 0 : fl_tensor_nbytes(t), (long long)m->step);
    }
    return st;
}

/* A SelectedRows travels packed (fl_rows_pack) with F_ROWS. An empty share (rows 0) sends the
 * block's shape with no rows: nothing to add, and the lazy optimizers touch no row for it. */
FlStatus flm_t_send_rows(FlDist *d, int ps, const char *name, const FlSelectedRows *r, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = flm_now();
    int dest = pserver_rank(m, ps, name, "sending", e);
    if (dest < 0) return FL_ERROR;
    FlSelectedRows none;
    fl_rows_init(&none);
    const FlSelectedRows *src = r;
    FlStatus st = FL_OK;
    if (m->rows == 0 && m->rows_global > 0) {
        int64_t ne[FL_MAX_DIMS], zero = 0;
        memcpy(ne, r->value.ne, sizeof ne);
        ne[0] = 0;
        none.height = r->height;
        st = fl_tensor_alloc(e, &none.rows, FL_DT_INT64, 1, &zero);
        if (st == FL_OK) st = fl_tensor_alloc(e, &none.value, r->value.dtype, r->value.ndim, ne);
        src = &none;
    }
    FlTensor packed = FL_TENSOR_INIT;
    if (st == FL_OK) st = fl_rows_pack(e, src, &packed);
    if (st == FL_OK) st = flm_post(m, dest, TAG_HDR, K_GRAD, F_ROWS, name, &packed, NULL, 0, e);
    if (st == FL_OK) {
        pthread_mutex_lock(&m->mu); /* the bytes flm_post put on the wire: header, name, payload */
        m->sp_bytes += sizeof(Hdr) + strlen(name) + fl_tensor_nbytes(&packed);
        m->sp_rows += (uint64_t)src->rows.ne[0];
        m->sp_msgs++;
        pthread_mutex_unlock(&m->mu);
        st = flm_progress(m, false, e);
    }
    fl_tensor_fini(&packed);
    fl_rows_fini(&none);
    flm_add_comm(m, t0);
    return st;
}

/* Posts the receive of the answer, then a request of `kind` for var `name` to rank src, into f:
 * a GET, or a LOOKUP carrying the ids (inline, or in pieces on the data tag of the answer's tag
 * pair: a tag no other message from this trainer uses, so the server may receive them at once). */
static FlStatus start_req(FlMpi *m, int src, uint16_t kind, const char *name, const FlTensor *ids, Fetch *f, FlErr *e) {
    unsigned id = atomic_fetch_add(&m->reqs, 1u);
    *f = (Fetch){.src = src, .tag = TAG_REPLY0 + 2 * (int)(id % (unsigned)m->tag_pairs), .buf = fl_xmalloc(MSG_MAX),
                 .t = FL_TENSOR_INIT};
    int rc = MPI_Irecv(f->buf, (int)MSG_MAX, MPI_BYTE, src, f->tag, MPI_COMM_WORLD, &f->req);
    if (rc != MPI_SUCCESS) {
        free(f->buf);
        return flm_mpi_err(e, rc, "posting a receive");
    }
    FlStatus st = flm_post_msg(m, src, TAG_HDR, kind, 0, name, ids, NULL, f->tag, true, 0, e);
    size_t nb = ids ? fl_tensor_nbytes(ids) : 0;
    bool inl = nb <= FL_MPI_INLINE && nb <= m->piece;
    for (int64_t c = 0, np = flm_npieces(nb, m->piece); st == FL_OK && !inl && c < np; c++)
        st = flm_post_piece(m, src, f->tag, ids, c, e);
    if (st != FL_OK) {
        flm_drop_reqs(&f->req, 1);
        free(f->buf);
        return FL_ERROR;
    }
    f->name = fl_xstrdup(name);
    return FL_OK;
}

static FlStatus start_get(FlMpi *m, int src, const char *name, Fetch *f, FlErr *e) {
    return start_req(m, src, K_GET, name, NULL, f, e);
}

/* f's header has come: when it is the PARAM answer of f's var with pieces to come, starts their
 * receives (f->np > 0); anything else is left to the claim, which reports it. */
static void early(FlMpi *m, Fetch *f) {
    Hdr h;
    char name2[NAME_MAX_LEN + 1];
    const char *payload = NULL;
    FlErr ignored;
    int64_t np;
    if (flm_parse(m, f->src, f->buf, f->count, &h, name2, &payload, &ignored) != FL_OK || h.kind != K_PARAM ||
        strcmp(name2, f->name) != 0 || (h.flags & (F_INLINE | F_ZERO)) || h.nbytes == 0)
        return;
    if (flm_payload_tensor(m, &h, f->name, payload, f->src, false, &f->t, &np, &ignored) != FL_OK || np == 0) return;
    if (flm_recv_pieces(&h, &f->t, np, f->src, f->tag + 1, &f->preq, &ignored) != FL_OK) {
        fl_tensor_fini(&f->t); /* left to the claim */
        return;
    }
    f->np = np;
}

/* The prefetched answers whose headers have come start their pieces' receives. */
void flm_advance_fetches(FlMpi *m) {
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
        if (flm_wait_req_adv(m, &f->req, &st, f->src, what, true, e) != FL_OK) goto done;
        f->in = true;
        MPI_Get_count(&st, MPI_BYTE, &f->count);
    }
    pthread_mutex_lock(&m->mu); /* the answer's header, name and payload */
    m->rbytes += (uint64_t)f->count;
    pthread_mutex_unlock(&m->mu);
    if (f->np > 0) { /* its pieces are on their way already */
        pthread_mutex_lock(&m->mu);
        m->rbytes += fl_tensor_nbytes(&f->t);
        pthread_mutex_unlock(&m->mu);
        FlStatus st = flm_wait_all(m, f->preq, f->np, f->src, what, true, e);
        f->np = 0; /* nothing of them is posted any more */
        if (st != FL_OK) goto done;
        fl_tensor_fini(out);
        *out = f->t;
        f->t = (FlTensor)FL_TENSOR_INIT;
        rc = FL_OK;
        goto done;
    }
    Hdr h;
    const char *payload = NULL;
    if (flm_parse(m, f->src, f->buf, f->count, &h, name2, &payload, e) != FL_OK) goto done;
    if (h.kind == K_ERROR) {
        char pn[FLM_PEER_NAME_MAX];
        fl_err(e, "%s: %.*s", flm_peer_name(m, f->src, pn, sizeof pn), (int)h.nbytes, payload);
        goto done;
    }
    if (h.kind != K_PARAM || strcmp(name2, f->name) != 0) {
        fl_err(e, "%s: the answer names '%s' (kind %d)", what, name2, h.kind);
        goto done;
    }
    FlTensor t = FL_TENSOR_INIT;
    if (flm_take_payload(m, &h, f->name, payload, f->src, f->tag + 1, &t, e) != FL_OK) goto done;
    if (!(h.flags & F_INLINE)) {
        pthread_mutex_lock(&m->mu);
        m->rbytes += h.nbytes;
        pthread_mutex_unlock(&m->mu);
    }
    fl_tensor_fini(out);
    *out = t;
    rc = FL_OK;
done:
    flm_fetch_free(f);
    return rc;
}

FlStatus flm_t_prefetch(FlDist *d, int ps, const char *name, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    int src = pserver_rank(m, ps, name, "receiving", e);
    Fetch f;
    FlStatus st = src < 0 ? FL_ERROR : start_get(m, src, name, &f, e);
    if (st == FL_OK) {
        pthread_mutex_lock(&m->mu);
        FL_VEC_PUSH(&m->fetches, f);
        pthread_mutex_unlock(&m->mu);
    }
    flm_add_comm(m, t0);
    if (m->trace) flm_span(m, "prefetch param", ts, name, "\"from\":%d", src);
    return st;
}

FlStatus flm_t_recv(FlDist *d, int ps, const char *name, FlTensor *out, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    int src = pserver_rank(m, ps, name, "receiving", e);
    if (src < 0) return FL_ERROR;
    Fetch f = {0};
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
    if (rc == FL_OK) rc = flm_progress(m, false, e);
    flm_add_comm(m, t0);
    if (m->trace)
        flm_span(m, "recv param", ts, name, "\"from\":%d,\"bytes\":%zu,\"prefetched\":%s", src,
                 rc == FL_OK ? fl_tensor_nbytes(out) : 0, found ? "true" : "false");
    return rc;
}

/* A distributed table's rows: every request posted (ids[i] to pserver ps[i], block names[i]),
 * then every answer awaited in turn. */
FlStatus flm_t_lookup(FlDist *d, size_t n, const int *ps, const char *const *names, const FlTensor *ids, FlTensor *out,
                      FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    Fetch *f = fl_xcalloc(n + 1, sizeof *f);
    size_t posted = 0;
    uint64_t rows = 0, sent = 0, recv0;
    FlStatus st = FL_OK;
    pthread_mutex_lock(&m->mu);
    recv0 = m->rbytes;
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < n && st == FL_OK; i++) {
        int src = pserver_rank(m, ps[i], names[i], "looking up rows of", e);
        st = src < 0 ? FL_ERROR : start_req(m, src, K_LOOKUP, names[i], &ids[i], &f[i], e);
        if (st != FL_OK) break;
        posted++;
        rows += (uint64_t)fl_tensor_numel(&ids[i]);
        size_t nb = fl_tensor_nbytes(&ids[i]);
        sent += sizeof(Hdr) + strlen(names[i]) + nb;
    }
    for (size_t i = 0; i < posted; i++) {
        if (st == FL_OK) st = finish_get(m, &f[i], &out[i], e);
        else flm_fetch_free(&f[i]);
    }
    free(f);
    if (st == FL_OK) st = flm_progress(m, false, e);
    pthread_mutex_lock(&m->mu);
    m->lk_rows += rows;
    m->lk_sent += sent;
    m->lk_recv += m->rbytes - recv0;
    m->lk_msgs += posted;
    pthread_mutex_unlock(&m->mu);
    flm_add_comm(m, t0);
    if (m->trace) flm_span(m, "lookup rows", ts, names[0], "\"blocks\":%zu,\"rows\":%llu", n, (unsigned long long)rows);
    return st;
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
FlStatus flm_t_barrier(FlDist *d, FlDistBarrier kind, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    int64_t ts = m->trace ? fl_trace_now() : 0;
    if (kind == FL_DIST_FETCH_BARRIER) {
        if (m->trace) flm_span(m, "barrier wait (fetch)", ts, NULL, "\"step\":%lld", (long long)m->step);
        return FL_OK;
    }
    double t0 = flm_now();
    FlStatus st = flm_progress(m, false, e);
    flm_add_comm(m, t0);
    if (m->trace) flm_span(m, "barrier wait (send)", ts, NULL, "\"step\":%lld", (long long)m->step);
    return st;
}

void fl_mpi_step_begin(FlMpi *m, int64_t step, size_t rows, size_t rows_global) {
    m->step = step;
    m->rows = (int64_t)rows;
    m->rows_global = (int64_t)rows_global;
    if (step + 1 > m->steps) m->steps = step + 1;
}

FlStatus fl_mpi_step_end(FlMpi *m, FlErr *e) {
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    FlStatus st = drain_fetches(m, e);
    if (st == FL_OK) st = flm_progress(m, true, e);
    flm_add_comm(m, t0);
    if (m->trace) flm_span(m, "step end wait", ts, NULL, "\"step\":%lld", (long long)m->step);
    return st;
}

/* FlDist's driver steps: a negative step is the next after the steps run so far; the step's
 * time, from its beginning to its sends completed, is compute time (--stats subtracts the time
 * spent communicating). */
void flm_t_step_begin(FlDist *d, int64_t step, int64_t rows, int64_t rows_global) {
    FlMpi *m = (FlMpi *)d;
    fl_mpi_step_begin(m, step < 0 ? m->steps : step, (size_t)rows, (size_t)rows_global);
    m->step_t0 = flm_now();
}

FlStatus flm_t_step_end(FlDist *d, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    FlStatus st = fl_mpi_step_end(m, e);
    if (st == FL_OK) fl_mpi_add_compute(m, flm_now() - m->step_t0);
    return st;
}

void fl_mpi_add_compute(FlMpi *m, double seconds) {
    pthread_mutex_lock(&m->mu);
    m->compute += seconds;
    pthread_mutex_unlock(&m->mu);
}

FlStatus fl_mpi_gather_trainers(FlMpi *m, const double *mine, size_t n, double *all, FlErr *e) {
    FL_ASSERT(m->assigned && m->role == FL_MPI_TRAINER);
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    MPI_Request r;
    MPI_TRY(MPI_Igather(mine, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, 0, m->role_comm, &r), "gathering figures");
    FlStatus st = flm_wait_req(m, &r, NULL, -1, "gathering the trainers' figures", e);
    flm_add_comm(m, t0);
    if (m->trace) flm_span(m, "gather figures", ts, NULL, NULL);
    return st;
}

FlStatus fl_mpi_bcast_trainers(FlMpi *m, void *buf, size_t n, FlErr *e) {
    FL_ASSERT(m->assigned && m->role == FL_MPI_TRAINER);
    double t0 = flm_now();
    MPI_Request r;
    MPI_TRY(MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, m->role_comm, &r), "telling the trainers");
    FlStatus st = flm_wait_req(m, &r, NULL, m->trainer_rank[0], "waiting for trainer 0's word", e);
    flm_add_comm(m, t0);
    return st;
}

FlStatus fl_mpi_finish(FlMpi *m, FlErr *e) {
    if (!m->assigned || m->role != FL_MPI_TRAINER) return FL_OK;
    if (drain_fetches(m, e) != FL_OK) return FL_ERROR;
    for (int p = 0; p < m->P; p++)
        if (flm_post(m, m->pserver_rank[p], TAG_HDR, K_DONE, 0, "", NULL, NULL, 0, e) != FL_OK) return FL_ERROR;
    return flm_progress(m, true, e);
}

FlStatus fl_mpi_save_ask(FlMpi *m, const char *dir, FlErr *e) {
    FL_ASSERT(m->assigned && m->role == FL_MPI_TRAINER && m->index == 0);
    for (int p = 0; p < m->P; p++) {
        Fetch f;
        if (start_req(m, m->pserver_rank[p], K_SAVE, dir, NULL, &f, e) != FL_OK) return FL_ERROR;
        FL_VEC_PUSH(&m->saves, f);
    }
    return FL_OK;
}

FlStatus fl_mpi_save_wait(FlMpi *m, int64_t *files, int64_t *bytes, FlErr *e) {
    FlStatus st = FL_OK;
    *files = *bytes = 0;
    for (size_t i = 0; i < m->saves.len; i++) {
        FlTensor t = FL_TENSOR_INIT;
        if (st != FL_OK) {
            flm_fetch_free(&m->saves.data[i]);
            continue;
        }
        st = finish_get(m, &m->saves.data[i], &t, e);
        if (st == FL_OK && (t.dtype != FL_DT_INT64 || fl_tensor_numel(&t) != 2))
            st = fl_err(e, "a pserver answered the save with %s %s", fl_dtype_name(t.dtype), fl_tensor_shape(&t).s);
        if (st == FL_OK) {
            *files += ((const int64_t *)fl_tensor_data(&t))[0];
            *bytes += ((const int64_t *)fl_tensor_data(&t))[1];
        }
        fl_tensor_fini(&t);
    }
    m->saves.len = 0;
    return st;
}
