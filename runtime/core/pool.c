/* pool.c: idle workers wait on one condition variable for a task in a FIFO queue; fl_pool_run
 * pushes its n-1 tasks and, before that, starts as many new workers as there are tasks beyond the
 * idle count, so every queued task has a thread to take it at once. Completion is a per-call
 * counter under the pool mutex. */
#include "runtime/core/pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct Batch {
    void (*fn)(void *, int);
    void *arg;
    int pending; /* tasks of this batch not finished yet (guarded by pool mu) */
    pthread_cond_t done;
} Batch;

typedef struct Task {
    Batch *batch;
    int i;
    struct Task *next;
} Task;

struct FlPool {
    pthread_mutex_t mu;
    pthread_cond_t work;
    Task *head, *tail;
    int idle;    /* workers waiting for work, minus tasks already queued for them */
    bool stop;
    FL_VEC(pthread_t) threads;
};

static void *worker(void *arg) {
    FlPool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop) pthread_cond_wait(&p->work, &p->mu);
        if (!p->head) break; /* stop and nothing left */
        Task *t = p->head;
        p->head = t->next;
        if (!p->head) p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        t->batch->fn(t->batch->arg, t->i);
        pthread_mutex_lock(&p->mu);
        if (--t->batch->pending == 0) pthread_cond_signal(&t->batch->done);
        free(t);
        p->idle++;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

FlPool *fl_pool_new(void) {
    FlPool *p = fl_xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    return p;
}

void fl_pool_free(FlPool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->threads.len; i++) pthread_join(p->threads.data[i], NULL);
    FL_VEC_FREE(&p->threads);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void fl_pool_run(FlPool *p, int n, void (*fn)(void *arg, int i), void *arg) {
    if (n <= 0) return;
    Batch b = {.fn = fn, .arg = arg, .pending = n - 1};
    pthread_cond_init(&b.done, NULL);
    pthread_mutex_lock(&p->mu);
    for (int i = 1; i < n; i++) {
        if (p->idle == 0) {
            pthread_t th;
            if (pthread_create(&th, NULL, worker, p) != 0)
                fl_panic(__FILE__, __LINE__, "cannot start a worker thread");
            FL_VEC_PUSH(&p->threads, th);
        } else {
            p->idle--;
        }
        Task *t = fl_xmalloc(sizeof *t);
        *t = (Task){.batch = &b, .i = i, .next = NULL};
        if (p->tail) p->tail->next = t;
        else p->head = t;
        p->tail = t;
    }
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0);
    pthread_mutex_lock(&p->mu);
    while (b.pending > 0) pthread_cond_wait(&b.done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&b.done);
}
