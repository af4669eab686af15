/* plan_mutate: writes a mutated copy of a plan, for the MPI plan fuzzer (fuzz_plan.sh).
 *   plan_mutate IN.plan SEED OUT.plan
 * SEED picks one to three mutations: of the rank map, the mode, the trainer/pserver counts, a
 * role's ops (removed, an attribute changed to an extreme or a wrong value, an argument renamed)
 * or vars (a shape changed, a declaration removed), a role dropped or duplicated, or raw bytes
 * of the encoded file flipped. The result is written without validation (the point is what
 * flrun makes of it); it prints the mutations it made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"

static uint64_t st;
static uint64_t rnd(void) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    return st;
}
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }

static const int64_t extremes[] = {-1, 0, 1, 2, 3, 7, 1 << 20, INT64_MAX, INT64_MIN, 1099511627776};

static FlBundle *any_role(FlPlan *p) { return p->roles.len ? p->roles.data[below(p->roles.len)] : NULL; }
static FlProgram *any_prog(FlBundle *b) { return below(2) ? b->main : b->startup; }
static FlBlock *any_block(FlProgram *pr) {
    return pr && pr->blocks.len ? fl_ir_block(pr, (int)below(pr->blocks.len)) : NULL;
}

static void mutate(FlPlan *p) {
    FlBundle *b = any_role(p);
    FlBlock *blk = b ? any_block(any_prog(b)) : NULL;
    switch (below(10)) {
    case 0: /* the rank map */
        if (p->rank_role.len > 1 && below(2)) {
            size_t i = below(p->rank_role.len), j = below(p->rank_role.len);
            int64_t t = p->rank_role.data[i];
            p->rank_role.data[i] = p->rank_role.data[j];
            p->rank_role.data[j] = t;
            printf("rank map: swapped ranks %zu and %zu\n", i, j);
        } else if (p->rank_role.len) {
            size_t i = below(p->rank_role.len);
            p->rank_role.data[i] = extremes[below(FL_ARRAY_LEN(extremes))];
            printf("rank map: rank %zu -> role %lld\n", i, (long long)p->rank_role.data[i]);
        }
        break;
    case 1: {
        static const char *const modes[] = {"sync", "async", "allreduce", "", "bogus"};
        free(p->mode);
        p->mode = strdup(modes[below(FL_ARRAY_LEN(modes))]);
        printf("mode -> '%s'\n", p->mode);
        break;
    }
    case 2:
        if (below(2)) p->trainers = extremes[below(FL_ARRAY_LEN(extremes))];
        else p->pservers = extremes[below(FL_ARRAY_LEN(extremes))];
        printf("counts -> %lld pservers, %lld trainers\n", (long long)p->pservers, (long long)p->trainers);
        break;
    case 3: /* remove an op */
        if (blk && blk->ops.len) {
            size_t i = below(blk->ops.len);
            printf("removed op %zu '%s' of block %d\n", i, blk->ops.data[i]->type, blk->idx);
            fl_ir_op_remove(blk, i);
        }
        break;
    case 4: /* an attribute */
        if (blk && blk->ops.len) {
            FlOpDesc *op = blk->ops.data[below(blk->ops.len)];
            if (!op->attrs.len) break;
            FlAttr *a = &op->attrs.data[below(op->attrs.len)];
            int64_t v = extremes[below(FL_ARRAY_LEN(extremes))];
            if (a->type == FL_ATTR_INT || a->type == FL_ATTR_BOOL) a->i = v;
            else if (a->type == FL_ATTR_FLOAT) a->f = (double)v;
            else if ((a->type == FL_ATTR_INTS || a->type == FL_ATTR_BLOCKS) && a->n) a->ints[below(a->n)] = v;
            else if (a->type == FL_ATTR_STRINGS && a->n) {
                free(a->strs[0]);
                a->strs[0] = strdup("no_such_var:9");
            } else break;
            printf("op '%s' attribute '%s' changed (%lld)\n", op->type, a->name, (long long)v);
        }
        break;
    case 5: /* an argument renamed */
        if (blk && blk->ops.len) {
            FlOpDesc *op = blk->ops.data[below(blk->ops.len)];
            FlSlot *s = below(2) && op->ins.len ? &op->ins.data[below(op->ins.len)]
                                                : op->outs.len ? &op->outs.data[below(op->outs.len)] : NULL;
            if (!s || !s->nargs) break;
            size_t k = below(s->nargs);
            free(s->args[k]);
            s->args[k] = strdup(below(2) ? "no_such_var" : "fc_0.w_0");
            printf("op '%s' slot %s arg %zu -> '%s'\n", op->type, s->name, k, s->args[k]);
        }
        break;
    case 6: /* a var's shape */
        if (blk && blk->vars.len) {
            FlVarDesc *v = blk->vars.data[below(blk->vars.len)];
            if (!v->ndim) break;
            int d = (int)below((uint64_t)v->ndim);
            static const int64_t dims[] = {-1, 0, 1, 3, 1000, 1 << 30};
            v->shape[d] = dims[below(FL_ARRAY_LEN(dims))];
            printf("var '%s' dim %d -> %lld\n", v->name, d, (long long)v->shape[d]);
        }
        break;
    case 7: /* a var's dtype or kind */
        if (blk && blk->vars.len) {
            FlVarDesc *v = blk->vars.data[below(blk->vars.len)];
            v->dtype = (FlDType)below(FL_DT_COUNT);
            printf("var '%s' dtype -> %d\n", v->name, (int)v->dtype);
        }
        break;
    case 8: /* a role dropped or duplicated */
        if (p->roles.len > 1 && below(2)) {
            size_t i = below(p->roles.len);
            fl_ir_bundle_free(p->roles.data[i]);
            memmove(&p->roles.data[i], &p->roles.data[i + 1], (p->roles.len - i - 1) * sizeof *p->roles.data);
            p->roles.len--;
            printf("role %zu dropped\n", i);
        } else if (b) {
            size_t len;
            FlPlan *one = fl_ir_plan_new();
            FL_VEC_PUSH(&one->roles, b);
            uint8_t *bytes = fl_ir_encode_plan(one, &len);
            one->roles.len = 0;
            fl_ir_plan_free(one);
            FlBundle *copy = NULL;
            FlPlan *pc = NULL;
            FlErr e;
            if (fl_ir_decode(bytes, len, &copy, &pc, &e) == FL_OK && pc && pc->roles.len) {
                size_t i = below(p->roles.len);
                FlBundle *dup = pc->roles.data[0];
                pc->roles.len = 0;
                fl_ir_bundle_free(p->roles.data[i]);
                p->roles.data[i] = dup;
                printf("role %zu replaced by a copy of another\n", i);
            }
            fl_ir_plan_free(pc);
            fl_ir_bundle_free(copy);
            free(bytes);
        }
        break;
    case 9: /* the learning-rate / block attributes of listen_and_serv, or a block's parent */
        if (blk && blk->idx > 0) {
            blk->parent = (int)extremes[below(4)];
            printf("block %d parent -> %d\n", blk->idx, blk->parent);
        }
        break;
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: plan_mutate IN.plan SEED OUT.plan\n");
        return 2;
    }
    st = strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    FlErr e;
    if (fl_ir_read(argv[1], &b, &p, &e) != FL_OK || !p) {
        fprintf(stderr, "plan_mutate: %s\n", p ? "" : e.msg);
        return 1;
    }
    int n = 1 + (int)below(3);
    for (int i = 0; i < n; i++) mutate(p);
    size_t len;
    uint8_t *bytes = fl_ir_encode_plan(p, &len);
    if (below(8) == 0 && len) { /* raw bytes too */
        for (int k = 0; k < 4; k++) bytes[below(len)] ^= (uint8_t)(1u << below(8));
        printf("flipped 4 bits of the encoded file\n");
    }
    FILE *f = fopen(argv[3], "wb");
    int rc = f && fwrite(bytes, 1, len, f) == len ? 0 : 1;
    if (f && fclose(f) != 0) rc = 1;
    free(bytes);
    fl_ir_plan_free(p);
    return rc;
}
