/* params.h: saving and loading a program's persistable vars (parameters, optimizer state,
 * learning rates) — `flrun --save DIR` / `--load DIR`, and for embedders.
 *
 * Format: DIR holds one file per var, named after the var, and a MANIFEST listing the names.
 * Each var's file is
 *     "FLTENSOR"            8 bytes, magic
 *     u32 version (1), u32 dtype (FlDType), u32 ndim, u32 reserved (0)
 *     i64 dims[ndim]
 *     the elements, little-endian, row-major
 * Saving writes the whole directory next to DIR first and renames it into place, so an
 * interrupted save never leaves DIR half-written. Loading checks every persistable var of the
 * program before it sets any: a missing file, a different dtype or shape is an error naming the
 * var, and the scope is left untouched.
 */
#ifndef FL_PARAMS_H
#define FL_PARAMS_H

#include "base/base.h"
#include "compiler/ir/ir.h"
#include "runtime/api.h"

FlStatus fl_params_save(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) FL_WARN_UNUSED;
FlStatus fl_params_load(const FlLoadedProgram *p, FlScope *scope, const char *dir, FlErr *err) FL_WARN_UNUSED;

/* The pieces of both, for jobs whose saved vars are spread over processes (flrun's MPI jobs). */
typedef struct FlNamedTensor {
    const char *name; /* borrowed */
    FlTensor t;       /* owned by the list */
} FlNamedTensor;
typedef FL_VEC(FlNamedTensor) FlNamedTensors;
/* Appends the program's persistable vars (names borrowed from p) with their tensors in scope.
 * Errors: a var without a value (the list keeps what it has; free it either way). */
FlStatus fl_params_collect(const FlLoadedProgram *p, FlScope *scope, FlNamedTensors *out, FlErr *err) FL_WARN_UNUSED;
void fl_params_free(FlNamedTensors *v); /* releases the tensors and the list */
/* Writes the list as a saved directory (atomically, as fl_params_save does). */
FlStatus fl_params_write(const char *dir, const FlNamedTensors *v, FlErr *err) FL_WARN_UNUSED;
/* One var's saved value into *out (released first), checked against v's dtype and shape. */
FlStatus fl_params_read(const char *dir, const FlVarDesc *v, FlTensor *out, FlErr *err) FL_WARN_UNUSED;

#endif
