/* scope.h: variables and scopes, the runtime's name -> value store.
 *
 * An FlVar is a reference-counted holder with a tagged slot: empty, a tensor, or an opaque object
 * (channels and other raw values of later issues) with its release function. A tensor is never
 * modified in place once it is in a var: a writer builds a new tensor and swaps it in whole
 * (fl_var_set_tensor); a reader takes its own reference to the current tensor (fl_var_get_tensor).
 * (The exception, fl_var_lock_sole below, writes only a buffer no reader holds.)
 * Both happen under the var's mutex, which is held only to copy the small FlTensor struct and bump
 * the buffer's atomic reference count, so a reader sees the old or the new tensor, never a torn one,
 * and keeps a consistent tensor for as long as it holds its reference.
 *
 * An FlScope is a node of a tree: a map name -> FlVar plus a parent; lookups (fl_scope_find) walk
 * to the parent. A scope may also have a *layout*: a fixed, immutable table of names (the vars a
 * program block declares) with one atomic slot each. The executor makes every call scope and every
 * sub-block scope with its block's layout, so an op finds its vars by index, without hashing or
 * locking; name lookups see layout slots too, so both views agree. Slots go from NULL to a var once
 * (compare-and-swap) and never change afterwards; map entries are never removed. Hence a var
 * pointer found in a scope stays valid for as long as that scope lives.
 *
 * Memory model: the map is guarded by a rwlock (readers in parallel, inserts exclusive), slots are
 * C11 atomics (acquire loads, acq_rel CAS), var contents by the var's mutex, reference counts are
 * atomic. Every function here may be called from any number of threads at once.
 *
 * Ownership: a scope holds a reference to its parent and one to each of its vars; scopes and vars
 * are freed by their last release. Names are copied. A layout is borrowed and must outlive every
 * scope made with it (the executor owns layouts, and call scopes never outlive a call).
 */
#ifndef FL_SCOPE_H
#define FL_SCOPE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/base.h"
#include "runtime/rows.h"
#include "runtime/tensor.h"

typedef enum FlVarTag {
    FL_VAR_TAG_EMPTY,
    FL_VAR_TAG_TENSOR,
    FL_VAR_TAG_OBJECT,
    FL_VAR_TAG_ROWS, /* a SelectedRows (runtime/rows.h): row indices and a value block */
    FL_VAR_TAG_COUNT
} FlVarTag;

typedef struct FlVar FlVar;
typedef struct FlScope FlScope;

/* ---- vars ---- */
FlVar *fl_var_new(void); /* empty, one reference */
void fl_var_retain(FlVar *v);
void fl_var_release(FlVar *v); /* NULL is a no-op; frees the content on the last release */
FlVarTag fl_var_tag(FlVar *v);
/* A new reference to the current tensor in *out (released first). false when the var holds no
 * tensor (*out is then left empty). */
bool fl_var_get_tensor(FlVar *v, FlTensor *out);
/* Replaces the content by a reference to t's buffer (t stays the caller's). */
void fl_var_set_tensor(FlVar *v, const FlTensor *t);
/* Replaces the content by t, taking over t's reference; t becomes empty. */
void fl_var_take_tensor(FlVar *v, FlTensor *t);
/* In-place writes, the one exception to "never modified once in a var" (sparse optimizer
 * updates: docs/embedding.md, "In-place row updates"). True when v holds a tensor over held's
 * buffer (the same buffer, offset, dtype and shape) and nobody but v and `held` holds that
 * buffer; v is then locked until fl_var_unlock_sole(v), so no reader can take a new reference
 * meanwhile, and the caller may write into the buffer through `held` in between (and must do
 * nothing else with v, which would deadlock). False otherwise, with nothing locked: the caller
 * writes a copy. Readers that took their reference before keep the old, unchanged buffer;
 * readers that come after wait for the unlock and see the written one. */
bool fl_var_lock_sole(FlVar *v, const FlTensor *held);
void fl_var_unlock_sole(FlVar *v);
/* SelectedRows (a sparse gradient), replaced whole like a tensor: get takes new references to
 * both of its tensors into *out (released first) and is false when the var holds no SelectedRows
 * (*out is then empty); take takes over r's references (r becomes empty). fl_var_get_tensor is
 * false on such a var: readers that want a dense tensor densify it (fl_rows_to_dense). */
bool fl_var_get_rows(FlVar *v, FlSelectedRows *out);
void fl_var_take_rows(FlVar *v, FlSelectedRows *r);
/* Objects: the var owns `obj` and calls release(obj) when it is replaced or freed. get returns
 * NULL unless the var holds an object (borrowed; valid while the var holds it). */
void fl_var_set_object(FlVar *v, void *obj, void (*release)(void *));
void *fl_var_get_object(FlVar *v);
/* Concurrency hook (runtime/core/ops_chan.c): the object, with retain(obj) called under the var's
 * lock, so the caller holds its own reference even if another thread replaces the object at once;
 * NULL (nothing retained) unless the var holds an object. */
void *fl_var_retain_object(FlVar *v, void (*retain)(void *));
/* Labels (concurrency hook): a var may carry a short string naming what its tensor is, e.g. the
 * parameter block "fc_0.w_0@GRAD.block0" that split_to_chan put on a channel; channel_recv sets
 * it on the receiving var, channel_send carries it along, and the distributed ops send under
 * that name. A label is independent of the content: writing a tensor keeps it. set copies label
 * (NULL clears); label_dup returns a malloc'd copy or NULL; fl_var_label returns the var's own
 * string (NULL when none), valid until the label is next set or the var is freed: use it only
 * where one thread owns the var (a goroutine's loop variable). */
void fl_var_set_label(FlVar *v, const char *label);
char *fl_var_label_dup(FlVar *v);
const char *fl_var_label(FlVar *v);

/* ---- layouts (built by the executor) ---- */
typedef struct FlScopeLayout {
    FlMap index;        /* name -> (void *)(uintptr_t)(slot + 1) */
    const char **names; /* slot -> name (borrowed from the program) */
    size_t n, cap;
} FlScopeLayout;

void fl_scope_layout_init(FlScopeLayout *l);
void fl_scope_layout_fini(FlScopeLayout *l);
/* The slot of name, adding it when absent (names are borrowed). */
size_t fl_scope_layout_add(FlScopeLayout *l, const char *name);
/* -1 when absent. */
long fl_scope_layout_find(const FlScopeLayout *l, const char *name);

/* ---- scopes ---- */
/* A new scope (one reference) under parent (retained; NULL for a root). */
FlScope *fl_scope_new(FlScope *parent);
/* The same with a layout (see above); the layout must outlive the scope. */
FlScope *fl_scope_new_layout(FlScope *parent, const FlScopeLayout *layout);
/* A scope that does NOT retain its parent: for scopes the parent itself keeps (in one of its vars,
 * as dynamic_rnn keeps its step scopes for the gradient), where a retained parent would make a
 * cycle that nothing frees. The caller guarantees that the parent outlives every use of it. */
FlScope *fl_scope_new_layout_weak(FlScope *parent, const FlScopeLayout *layout);
void fl_scope_retain(FlScope *s);
void fl_scope_release(FlScope *s); /* NULL is a no-op */
/* The embedding API's name for fl_scope_release. */
void fl_scope_free(FlScope *s);
FlScope *fl_scope_parent(const FlScope *s);

/* The var named `name` in s or its ancestors (nearest first); NULL when none. Borrowed: valid
 * while the scope that holds it lives. */
FlVar *fl_scope_find(FlScope *s, const char *name);
/* In s only. */
FlVar *fl_scope_find_local(FlScope *s, const char *name);
/* The var named `name` in s itself, created (empty) when absent; never NULL. Atomic: two threads
 * creating the same name get the same var. Borrowed as above. */
FlVar *fl_scope_var(FlScope *s, const char *name);
/* Binds `name` in s to the existing var v (retained): s's `name` and v are then one var, so
 * writes through either name are seen through both. false when s already binds `name` to a
 * different var. */
bool fl_scope_alias(FlScope *s, const char *name, FlVar *v);

/* Layout slots (s must have a layout; slot < layout->n). */
FlVar *fl_scope_slot(FlScope *s, size_t slot); /* NULL when unset */
/* Sets an unset slot to v (retained) and returns v; when another thread was first, returns that
 * var instead (v is not retained). */
FlVar *fl_scope_slot_set(FlScope *s, size_t slot, FlVar *v);
/* The slot's var, created when unset. */
FlVar *fl_scope_slot_var(FlScope *s, size_t slot);

/* Convenience for tests and the embedding API: a new reference to the tensor of the var `name`
 * (looked up through the parents; a SelectedRows as the dense tensor it stands for, a new
 * buffer), or an error naming it when it is absent or holds no tensor. */
FlStatus fl_scope_get_tensor(FlScope *s, const char *name, FlTensor *out, FlErr *e) FL_WARN_UNUSED;
/* Sets the var `name` of s itself (created when absent; parents are not consulted) to a
 * reference to t's buffer, replacing its tensor whole. */
void fl_scope_set_tensor(FlScope *s, const char *name, const FlTensor *t);

#endif
