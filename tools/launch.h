/* launch.h: `flrun PLAN` run outside mpirun starts the plan's job itself, through Open MPI's
 * mpirun (docs/cluster.md, "One launch command").
 *
 * The launcher builds one mpirun command: the plan's rank count, the hosts (--hosts
 * host1:2,host2:2 or --hostfile FILE; none: this machine), MPI's interfaces pinned to --network
 * CIDR, Open MPI's settings that make a lost machine notice and be noticed (its daemons' TCP
 * keepalive), --allow-run-as-root for root and --oversubscribe for more ranks than a machine
 * has cores, and flrun with the plan and the options every rank takes. It forwards what mpirun
 * prints and watches the ranks' errors: once a rank has reported an error (or mpirun a lost
 * rank), mpirun has FL_LAUNCH_GRACE s to end the job; past them the launcher ends mpirun itself
 * (SIGKILL to its process group), so a job whose ranks have failed ends within the peer timeout and a
 * few seconds, also when mpirun would wait minutes for TCP to give up on a machine cut off.
 * Open MPI's daemons on the machines still reachable end their ranks when mpirun goes.
 *
 * Restarts (--restarts N): a job that failed because it lost a rank or a host (a rank named a
 * lost peer, FL_MPI_PEER_TIMEOUT or FL_MPI_PEER_GONE, or mpirun a rank killed by a signal or a
 * lost daemon) is started again, up to N times, with --resume when the ranks take --checkpoint
 * DIR (the last checkpoint: the steps after it are taken again, as the uninterrupted job takes
 * them). Before each restart every host is probed (a job of one process, `true`, through
 * mpirun, within FL_LAUNCH_PROBE_WAIT s): the ranks fill the slots of the hosts that answer, in
 * order, so a lost host is left out and a spare (slots beyond the job's) takes its place. A job
 * that failed with an error of the program's own (its data, a diverging loss, bad options) is
 * not restarted: it would fail again. Each restart is said on stderr ("flrun: launcher
 * HH:MM:SS: ...": which hosts answer, where the ranks go, from which checkpoint).
 *
 * Elastic jobs (--elastic MIN:MAX, with --checkpoint, --checkpoint-every and --restarts): each
 * attempt runs as many of the plan's trainers as the slots of the hosts that answer take beyond
 * the pservers, at most MAX, at least MIN (fewer: the launcher ends), passing the ranks
 * --trainers N (they keep the plan's global batch: docs/distributed.md, "Elastic jobs"). While
 * an attempt runs on fewer than MAX trainers, the hosts that did not answer (and hosts added to
 * --hostfile) are probed every --reprobe S (FL_LAUNCH_REWATCH); when they would give it more trainers the
 * launcher asks the job to stop at its next checkpoint (ckpt.h, DIR/STOP) and starts it again
 * there with them (this is not a restart: --restarts counts failures). Each change is said.
 *
 * The launcher is a process of its own that never joins the job: it starts mpirun (in a
 * process group of its own, so a terminal's Ctrl-C reaches the launcher, which passes it on).
 */
#ifndef FL_LAUNCH_H
#define FL_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

#define FL_LAUNCH_GRACE 2.0 /* seconds mpirun has to end a job whose rank failed */
#define FL_LAUNCH_PROBE_WAIT 5.0 /* seconds a host has to answer a probe */
#define FL_LAUNCH_REWATCH 5.0 /* --reprobe's default */

typedef struct FlLaunchOptions {
    const char *plan;        /* the plan's path, as given */
    int trainers, pservers;  /* the job's (the plan's, or --trainers) and the plan's */
    const char *hosts;       /* --hosts "host1:2,host2:2", or NULL */
    const char *hostfile;    /* --hostfile FILE, or NULL */
    const char *network;     /* --network CIDR, or NULL */
    int restarts;            /* --restarts N: restarts of a job that lost a rank or a host */
    const char *checkpoint;  /* --checkpoint DIR, or NULL: a restart goes on from its last */
    int elastic_min, elastic_max; /* --elastic MIN:MAX (0, 0: not elastic; max <= the plan's) */
    double reprobe;          /* --reprobe S: elastic: seconds between probes of the hosts that did not answer */
    char *const *rank_args;  /* the options every rank takes, in order (the plan's path left out) */
    size_t nrank_args;
} FlLaunchOptions;

/* Whether this process runs under an MPI launcher (mpirun, srun: its rank's environment). */
bool fl_launch_under_mpi(void);

/* Runs the job; returns flrun's exit code: 0 when the job ended well; mpirun's status when it
 * failed (1 for a failed rank, 128 + N for mpirun killed by signal N); 1 when the launcher had
 * to end mpirun; 2 for bad --hosts or --hostfile (said on stderr). */
int fl_launch(const FlLaunchOptions *o);

#endif
