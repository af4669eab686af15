/* conc.h: the hook between the executor's concurrency ops and a goroutine scheduler.
 *
 * The ops go, channel_create/send/recv/close, select, split_to_chan and chan_concat (adapters in
 * ops_chan.c; the goroutine lifecycle under them in conc.c) run on an FlSched (runtime/sched/sched.h). The embedder (flrun) makes one scheduler
 * for the process and attaches it to the ROOT scope it runs programs on with fl_conc_attach, as
 * dist.h attaches the MPI transport: it becomes the object var FL_SCHED_VAR of that scope and
 * every run under that scope uses it, so the embedder can read its deadlock report
 * (fl_sched_deadlock_report) and list leaked goroutines (fl_sched_list) after a run. Without an
 * attached scheduler an executor whose program has concurrency ops makes its own on first use and
 * frees it in fl_exec_free.
 *
 * A run of such a program attaches its calling thread to the scheduler for the run (so the main
 * program counts for deadlock detection) unless the thread is a goroutine or attached already.
 * Goroutines outlive the run that started them (Go's semantics: nobody waits for them); their
 * scopes are reference counted and keep the scopes above them alive. A goroutine that fails
 * (send on a closed channel, a kernel error) panics, as in Go: its error is recorded, every
 * block of the executor stops at its next op and the scheduler wakes every blocked party
 * (fl_sched_panic), so the run in progress ends at once and returns that error. The executor
 * and the scheduler stay failed: a panicked program is over.
 *
 * Ownership and order: s is borrowed; free it (fl_sched_free: leaked goroutines are woken, unwind
 * and release their scopes) BEFORE the executors that ran goroutines on it and before the scope.
 */
#ifndef FL_CONC_H
#define FL_CONC_H

#include "runtime/core/scope.h"
#include "runtime/sched/sched.h"

#define FL_SCHED_VAR "@SCHED@" /* the root scope's object var holding the FlSched */

/* Goroutine stacks the executor's schedulers use (kernels and the executor run on them). */
#define FL_CONC_STACK_SIZE (512u * 1024u)

void fl_conc_attach(FlScope *root, FlSched *s);
/* The scheduler attached to s or an ancestor; NULL when none. */
FlSched *fl_conc_find(FlScope *s);

#endif
