/* allreduce.c: the FlDist allreduce of allreduce jobs (no pservers): a step's gradients,
 * weighted by this trainer's share of the global batch, packed per float dtype into one
 * buffer and summed over the trainers by a ring.
 *
 * How: ring_allreduce runs T-1 reduce-scatter steps and T-1 allgather steps over the trainers'
 * communicator (raw chunks, no headers, TAG_RING), each exchange posted as non-blocking sends
 * and receives of at most RED_SEG bytes and waited for with the peer timeout.
 *
 * Invariants: one reduction at a time per process (m->red_mu); every trainer reduces the same
 * gradients in the same order (the ops run the same program), so the chunks pair up; the
 * outputs are views of the packed buffer, which goes with the last of them.
 */
#include "runtime/mpi/mpi_impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>


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
            flm_drop_reqs(r, nr);
            return flm_mpi_err(e, rc, "allreduce");
        }
        for (int k = 0; k < nr; k++)
            if (flm_wait_req(m, &r[k], NULL, m->trainer_rank[k < ns ? to : from], "reducing the gradients", e) != FL_OK) {
                flm_drop_reqs(r + k, nr - k);
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
FlStatus flm_t_allreduce(FlDist *d, size_t n, const char *const *names, const FlTensor *in, FlTensor *out,
                         bool loss_sum, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    if (!m->assigned || m->role != FL_MPI_TRAINER)
        return fl_err(e, "allreduce: only trainers reduce gradients (this is %s)", m->who);
    for (size_t i = 0; i < n; i++)
        if (in[i].dtype != FL_DT_FLOAT32 && in[i].dtype != FL_DT_FLOAT64)
            return fl_err(e, "allreduce: '%s' is %s; only float tensors are reduced", names[i], fl_dtype_name(in[i].dtype));
    double t0 = flm_now();
    int64_t ts = m->trace ? fl_trace_now() : 0;
    /* without global rows (no reader) every trainer ran the same batch: the mean */
    double w = m->rows_global <= 0 ? 1.0 / m->T
               : loss_sum        ? (m->rows > 0 ? 1.0 : 0.0)
                                 : (double)m->rows / (double)m->rows_global;
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
    flm_add_comm(m, t0);
    if (m->trace) flm_span(m, "allreduce ring", ts, NULL, "\"tensors\":%zu,\"step\":%lld", n, (long long)m->step);
    return st;
}

/* A SelectedRows gradient of an allreduce job: every trainer's rows, its value weighted as
 * flm_t_allreduce weighs a dense gradient, gathered in trainer order (MPI_Iallgatherv of the
 * packed forms on the trainers' communicator, polled): the rows of the global batch in batch
 * order, as the local program's lookup_table_grad makes them, so the sparse optimizer that
 * follows updates the rows any trainer touched and no other (lazy Adam, Ftrl included). */
FlStatus flm_t_allgather_rows(FlDist *d, const char *name, const FlSelectedRows *in, bool loss_sum,
                              FlSelectedRows *out, FlErr *e) {
    FlMpi *m = (FlMpi *)d;
    if (!m->assigned || m->role != FL_MPI_TRAINER)
        return fl_err(e, "allreduce: only trainers reduce gradients (this is %s)", m->who);
    double t0 = flm_now();
    double w = m->rows_global <= 0 ? 1.0 / m->T
               : loss_sum        ? (m->rows > 0 ? 1.0 : 0.0)
                                 : (double)m->rows / (double)m->rows_global;
    int T = m->T;
    FlSelectedRows mine, *parts = fl_xcalloc((size_t)T, sizeof *parts);
    const FlSelectedRows **pp = fl_xcalloc((size_t)T, sizeof *pp);
    int *cnt = fl_xcalloc((size_t)T, sizeof *cnt), *displ = fl_xcalloc((size_t)T, sizeof *displ);
    FlTensor packed = FL_TENSOR_INIT, all = FL_TENSOR_INIT;
    fl_rows_init(&mine);
    for (int t = 0; t < T; t++) fl_rows_init(&parts[t]);
    FlStatus st = FL_OK;
    if (m->rows == 0 && m->rows_global > 0) { /* an empty share: no rows */
        int64_t ne[FL_MAX_DIMS], zero = 0;
        memcpy(ne, in->value.ne, sizeof ne);
        ne[0] = 0;
        mine.height = in->height;
        st = fl_tensor_alloc(e, &mine.rows, FL_DT_INT64, 1, &zero);
        if (st == FL_OK) st = fl_tensor_alloc(e, &mine.value, in->value.dtype, in->value.ndim, ne);
    } else {
        st = fl_rows_scale(e, in, w, &mine);
    }
    if (st == FL_OK) st = fl_rows_pack(e, &mine, &packed);
    int64_t words = fl_tensor_numel(&packed), total = 0;
    if (st == FL_OK && words > INT_MAX) st = fl_err(e, "allreduce: '%s' has too many rows to gather", name);
    pthread_mutex_lock(&m->red_mu);
    MPI_Request r;
    int n = (int)words, rc = MPI_SUCCESS;
    if (st == FL_OK) {
        rc = MPI_Iallgather(&n, 1, MPI_INT, cnt, 1, MPI_INT, m->role_comm, &r);
        st = rc != MPI_SUCCESS ? flm_mpi_err(e, rc, "allreduce") : flm_wait_req(m, &r, NULL, -1, "gathering the sparse gradients", e);
    }
    for (int t = 0; st == FL_OK && t < T; t++) {
        displ[t] = (int)total;
        total += cnt[t];
        if (total > INT_MAX) st = fl_err(e, "allreduce: '%s': the trainers' rows are too many to gather", name);
    }
    if (st == FL_OK) st = fl_tensor_alloc_uninit(e, &all, FL_DT_INT64, 1, &total);
    if (st == FL_OK) {
        rc = MPI_Iallgatherv(fl_tensor_data(&packed), n, MPI_INT64_T, fl_tensor_data(&all), cnt, displ, MPI_INT64_T,
                             m->role_comm, &r);
        st = rc != MPI_SUCCESS ? flm_mpi_err(e, rc, "allreduce") : flm_wait_req(m, &r, NULL, -1, "gathering the sparse gradients", e);
    }
    pthread_mutex_unlock(&m->red_mu);
    for (int t = 0; st == FL_OK && t < T; t++) {
        FlTensor seg = FL_TENSOR_INIT;
        int64_t ne = cnt[t];
        st = fl_tensor_view(e, &seg, &all, displ[t], 1, &ne);
        if (st == FL_OK) st = fl_rows_unpack(e, &seg, &parts[t]);
        fl_tensor_fini(&seg);
        pp[t] = &parts[t];
    }
    if (st == FL_OK) st = fl_rows_concat(e, pp, T, out);
    if (st == FL_OK) {
        pthread_mutex_lock(&m->mu);
        uint64_t nb = (uint64_t)words * 8 * (uint64_t)(T - 1);
        m->bytes += nb;
        m->msgs += (uint64_t)(T - 1);
        m->sp_bytes += nb;
        m->sp_rows += (uint64_t)mine.rows.ne[0] * (uint64_t)(T - 1);
        m->sp_msgs += (uint64_t)(T - 1);
        pthread_mutex_unlock(&m->mu);
    }
    for (int t = 0; t < T; t++) fl_rows_fini(&parts[t]);
    free(parts);
    free(pp);
    free(cnt);
    free(displ);
    fl_rows_fini(&mine);
    fl_tensor_fini(&packed);
    fl_tensor_fini(&all);
    flm_add_comm(m, t0);
    return st;
}
