/* tfevents.c: TensorBoard event files (tfevents.h): Events encoded with protobuf-c, framed as
 * TFRecords with masked CRC32Cs.
 *
 * How: each record is assembled in one buffer (length, its CRC, the Event, its CRC) and written
 * with one fwrite, then flushed, so a reader never meets half a record of ours unless the disk
 * fills. The CRC is computed bit by bit: records are a few dozen bytes a step.
 */
#define _GNU_SOURCE
#include "tools/tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/tfevents.pb-c.h"

struct FlEvents {
    FILE *f;
    char *path;
};

uint32_t fl_events_crc32c(const void *data, size_t n) {
    const uint8_t *p = data;
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return crc ^ 0xffffffffu;
}

uint32_t fl_events_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

static void put_le(uint8_t *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Encodes ev and writes it as one record. */
static FlStatus write_event(FlEvents *w, const Tfevents__Event *ev, FlErr *e) {
    size_t n = tfevents__event__get_packed_size(ev);
    uint8_t *rec = fl_xmalloc(n + 16);
    put_le(rec, n, 8);
    put_le(rec + 8, fl_events_mask(fl_events_crc32c(rec, 8)), 4);
    tfevents__event__pack(ev, rec + 12);
    put_le(rec + 12 + n, fl_events_mask(fl_events_crc32c(rec + 12, n)), 4);
    bool ok = fwrite(rec, 1, n + 16, w->f) == n + 16 && fflush(w->f) == 0;
    free(rec);
    return ok ? FL_OK : fl_err(e, "--tensorboard: cannot write '%s': %s", w->path, strerror(errno));
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

FlStatus fl_events_open(const char *dir, FlEvents **out, FlErr *e) {
    *out = NULL;
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return fl_err(e, "--tensorboard '%s' exists and is not a directory", dir);
    } else if (errno != ENOENT || mkdir(dir, 0777) != 0) {
        return fl_err(e, "--tensorboard: cannot make the directory '%s': %s", dir, strerror(errno));
    }
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "localhost");
    for (char *h = host; *h; h++) /* a file name: no separator from the host's name */
        if (*h == '/') *h = '_';
    double now = wall_now();
    FlBuf path = {0};
    fl_buf_printf(&path, "%s/events.out.tfevents.%010lld.%s.%d", dir, (long long)now, host, (int)getpid());
    int fd = open(fl_buf_str(&path), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        FlStatus s = fl_err(e, "--tensorboard: cannot make '%s': %s", fl_buf_str(&path), strerror(errno));
        if (fd >= 0) close(fd);
        fl_buf_free(&path);
        return s;
    }
    FlEvents *w = fl_xcalloc(1, sizeof *w);
    w->f = f;
    w->path = path.data;
    Tfevents__Event ev = TFEVENTS__EVENT__INIT;
    ev.has_wall_time = 1;
    ev.wall_time = now;
    ev.has_step = 1;
    ev.step = 0;
    ev.file_version = "brain.Event:2";
    if (write_event(w, &ev, e) != FL_OK) {
        fclose(w->f);
        free(w->path);
        free(w);
        return FL_ERROR;
    }
    *out = w;
    return FL_OK;
}

const char *fl_events_path(const FlEvents *ev) { return ev->path; }

FlStatus fl_events_scalars(FlEvents *w, int64_t step, double wall_time, const char *const *tags, const double *values,
                           size_t n, FlErr *e) {
    Tfevents__Summary__Value *vals = fl_xcalloc(n + 1, sizeof *vals);
    Tfevents__Summary__Value **ptrs = fl_xcalloc(n + 1, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        tfevents__summary__value__init(&vals[i]);
        vals[i].tag = (char *)tags[i];
        vals[i].has_simple_value = 1;
        vals[i].simple_value = (float)values[i];
        ptrs[i] = &vals[i];
    }
    Tfevents__Summary sum = TFEVENTS__SUMMARY__INIT;
    sum.n_value = n;
    sum.value = ptrs;
    Tfevents__Event ev = TFEVENTS__EVENT__INIT;
    ev.has_wall_time = 1;
    ev.wall_time = wall_time;
    ev.has_step = 1;
    ev.step = step;
    ev.summary = &sum;
    FlStatus st = write_event(w, &ev, e);
    free(vals);
    free(ptrs);
    return st;
}

void fl_events_abandon(FlEvents *w) {
    if (!w) return;
    fclose(w->f);
    free(w->path);
    free(w);
}

FlStatus fl_events_close(FlEvents *w, FlErr *e) {
    if (!w) return FL_OK;
    FlStatus st = fclose(w->f) == 0 ? FL_OK : fl_err(e, "--tensorboard: cannot write '%s': %s", w->path, strerror(errno));
    free(w->path);
    free(w);
    return st;
}
