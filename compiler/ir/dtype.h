/* dtype.h: element types shared by the IR and the runtime. The numbering is part of the IR file
 * format (fluid.proto's DType uses the same values): never renumber, only append. */
#ifndef FL_DTYPE_H
#define FL_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef enum FlDType {
    FL_DT_FLOAT32 = 0,
    FL_DT_FLOAT64 = 1,
    FL_DT_INT32 = 2,
    FL_DT_INT64 = 3,
    FL_DT_BOOL = 4, /* one byte per element, 0 or 1 */
    /* Storage dtypes (fl_dtype_is_storage): tensors of them are held, moved, cast, saved and
     * loaded, and no op computes on them (the compiler refuses them elsewhere: cast first). */
    FL_DT_FLOAT16 = 5, /* IEEE 754 binary16, stored as uint16_t (runtime/half.h converts) */
    FL_DT_INT8 = 6,
    FL_DT_UINT8 = 7,
    FL_DT_COUNT
} FlDType;

static inline size_t fl_dtype_size(FlDType t) {
    switch (t) {
    case FL_DT_FLOAT32: return 4;
    case FL_DT_FLOAT64: return 8;
    case FL_DT_INT32: return 4;
    case FL_DT_INT64: return 8;
    case FL_DT_BOOL: return 1;
    case FL_DT_FLOAT16: return 2;
    case FL_DT_INT8: return 1;
    case FL_DT_UINT8: return 1;
    case FL_DT_COUNT: break;
    }
    return 0;
}

static inline const char *fl_dtype_name(FlDType t) {
    switch (t) {
    case FL_DT_FLOAT32: return "float32";
    case FL_DT_FLOAT64: return "float64";
    case FL_DT_INT32: return "int32";
    case FL_DT_INT64: return "int64";
    case FL_DT_BOOL: return "bool";
    case FL_DT_FLOAT16: return "float16";
    case FL_DT_INT8: return "int8";
    case FL_DT_UINT8: return "uint8";
    case FL_DT_COUNT: break;
    }
    return "?";
}

/* float16, int8 and uint8: the dtypes of storage only (Fluid's FP16, INT8 and UINT8 tensors on
 * the CPU). The ops that move tensors (cast, assign, fill_constant, feed/fetch, save/load, data
 * movement, control flow and channels) take them; every other op refuses them at compile time. */
static inline bool fl_dtype_is_storage(FlDType t) {
    return t == FL_DT_FLOAT16 || t == FL_DT_INT8 || t == FL_DT_UINT8;
}

/* The dtype named `name` (fl_dtype_name's names) into *out; false for any other name. */
static inline bool fl_dtype_from_name(const char *name, FlDType *out) {
    for (int t = 0; t < FL_DT_COUNT; t++)
        if (strcmp(name, fl_dtype_name((FlDType)t)) == 0) {
            *out = (FlDType)t;
            return true;
        }
    return false;
}

#endif
