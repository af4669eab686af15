/* fuzz_gen.h: the input of a generator-style fuzz target read as a stream of choices: each
 * pick takes the next byte modulo the number of choices, and 0 once the input is used up (so
 * every input, however short, makes a whole case). Header-only: one target includes it once. */
#ifndef FL_FUZZ_GEN_H
#define FL_FUZZ_GEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct Gen {
    const uint8_t *p;
    size_t n, i;
} Gen;

static inline unsigned pick(Gen *g, unsigned n) { /* the next input byte, modulo n (0 when used up) */
    unsigned b = g->i < g->n ? g->p[g->i++] : 0;
    return n ? b % n : 0;
}

#endif
