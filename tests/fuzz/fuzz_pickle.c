/* fuzz_pickle.c: libFuzzer target for the pickle reader of paddle.dataset (dataset/pickle.c),
 * which reads the pickles inside Paddle's cifar archives: hostile bytes as a pickle, and 16 of
 * its prefixes (a pickle cut short). Any outcome is fine but a crash, a sanitizer report, a hang
 * or a broken promise: a load gives a tree (walked to a bounded depth: a pickle may hold itself
 * through its memo) or an error that names the pickle ("seed: not a pickle Python reads (...
 * at byte N)").
 *
 * fuzz_pickle_corpus (an ordinary test, label runtime) replays tests/fuzz/corpus/pickle (Python
 * 2's and 3's pickles of protocols 0 to 5 of dicts of numpy arrays and lists, as cifar's) and the
 * kept crashers; with -DFL_FUZZ=ON the libFuzzer binary fuzz_pickle explores further:
 *   mkdir -p build-fuzz/corpus-pickle
 *   build-fuzz/tests/fuzz/fuzz_pickle build-fuzz/corpus-pickle tests/fuzz/corpus/pickle \
 *       -max_total_time=600 -timeout=10 -artifact_prefix=tests/fuzz/crashes/pickle/
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *msg) {
    if (ok) return;
    fprintf(stderr, "fuzz_pickle: broken promise: %s (%s)\n", what, msg);
    abort();
}

/* Reads every node and string the tree holds, to a depth of 32. */
static size_t walk(const FlPk *o, int depth) {
    if (!o || depth > 32) return 0;
    size_t sum = (size_t)o->kind;
    check(o->kind < FL_PK_KIND_COUNT, "a node of a known kind", "kind");
    for (size_t i = 0; i < o->len; i++) sum += (unsigned char)o->s[i];
    if (o->kind == FL_PK_GLOBAL) sum += strlen(o->s) + strlen(o->name);
    check(o->n <= o->cap, "items within their capacity", "n");
    check(o->kind != FL_PK_CALL || o->n == 2, "a call of a callable and its arguments", "call");
    for (size_t i = 0; i < o->n; i++) sum += walk(o->items[i], depth + 1);
    return sum + walk(o->state, depth + 1) + (size_t)fl_ds_pk_find(o, "data");
}

static void load(const uint8_t *data, size_t size) {
    char *copy = malloc(size ? size : 1); /* its own allocation: a read past the end is reported */
    if (size) memcpy(copy, data, size);
    FlArena a;
    fl_arena_init(&a);
    FlPk *out = NULL;
    FlErr e;
    if (fl_ds_pickle_load(&a, copy, size, "seed", &out, &e) == FL_OK) {
        check(out != NULL, "a tree when the load succeeds", "NULL");
        volatile size_t s = walk(out, 0);
        (void)s;
    } else {
        check(out == NULL, "no tree when the load fails", e.msg);
        check(strncmp(e.msg, "seed: not a pickle Python reads (", 33) == 0, "an error naming the pickle", e.msg);
    }
    fl_arena_fini(&a);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load(data, size);
    for (size_t k = 1; k <= 16 && size > 1; k++) load(data, size * k / 17);
    return 0;
}
