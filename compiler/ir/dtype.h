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
    FL_DT_COUNT
} FlDType;

static inline size_t fl_dtype_size(FlDType t) {
    switch (t) {
    case FL_DT_FLOAT32: return 4;
    case FL_DT_FLOAT64: return 8;
    case FL_DT_INT32: return 4;
    case FL_DT_INT64: return 8;
    case FL_DT_BOOL: return 1;
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
    case FL_DT_COUNT: break;
    }
    return "?";
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
