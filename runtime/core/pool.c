/* pool.c: batches wait in a FIFO list while they have unclaimed iterations; workers sleep on one
 * condition variable until a batch is queued, claim its next index under the pool mutex, run it,
 * and count it done. The caller of fl_pool_run claims from its own batch the same way and then
 * waits for the iterations other threads took. Invariants (under mu): a batch is in the list
 * iff next < n; pending counts iterations claimed or not that have not finished. */
#include "runtime/core/pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct Batch {
    void (*fn)(void *, int);
    void *arg;
    int n, next;  /* iterations, and the next one nobody has claimed */
    int pending;  /* iterations not finished */
    struct Batch *link;
    pthread_cond_t done;
} Batch;

struct FlPool {
    pthread_mutex_t mu;
    pthread_cond_t work;
    Batch *head, *tail; /* batches with unclaimed iterations */
    bool stop;
    FL_VEC(pthread_t) threads;
};

/* Claims the next iteration of b (mu held); unlinks b from the queue when it was the last. */
static int claim(FlPool *p, Batch *b) {
    int i = b->next++;
    if (b->next == b->n) {
        Batch **pp = &p->head, *prev = NULL;
        while (*pp != b) prev = *pp, pp = &(*pp)->link;
        *pp = b->link;
        if (p->tail == b) p->tail = prev;
    }
    return i;
}

/* Runs iteration i of b with mu released; returns with mu held. */
static void run_one(FlPool *p, Batch *b, int i) {
    pthread_mutex_unlock(&p->mu);
    b->fn(b->arg, i);
    pthread_mutex_lock(&p->mu);
    if (--b->pending == 0) pthread_cond_signal(&b->done);
}

static void *worker(void *arg) {
    FlPool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop) pthread_cond_wait(&p->work, &p->mu);
        if (!p->head) break; /* stop and nothing left */
        Batch *b = p->head;
        run_one(p, b, claim(p, b));
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

void fl_pool_run(FlPool *p, int n, int width, void (*fn)(void *arg, int i), void *arg) {
    if (n <= 0) return;
    if (n == 1 || width <= 1) {
        for (int i = 0; i < n; i++) fn(arg, i);
        return;
    }
    Batch b = {.fn = fn, .arg = arg, .n = n, .pending = n};
    pthread_cond_init(&b.done, NULL);
    pthread_mutex_lock(&p->mu);
    size_t want = (size_t)(width < n ? width : n) - 1;
    while (p->threads.len < want) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, p) != 0) break; /* run on the threads there are */
        FL_VEC_PUSH(&p->threads, th);
    }
    if (p->tail) p->tail->link = &b;
    else p->head = &b;
    p->tail = &b;
    pthread_cond_broadcast(&p->work);
    while (b.next < b.n) run_one(p, &b, claim(p, &b));
    while (b.pending > 0) pthread_cond_wait(&b.done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&b.done);
}
