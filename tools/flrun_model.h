/* flrun_model.h: flrun on an inference model (docs/running.md, "Inference models"): a directory
 * that fluid.io.save_inference_model wrote (its __model__ and parameters), or its model file. */
#ifndef FL_FLRUN_MODEL_H
#define FL_FLRUN_MODEL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct FlModelRun {
    const char *model;       /* the directory, or the model file */
    const char *predict;     /* DATA: one row of feature values per line */
    const char *predict_var; /* NULL: the model's targets; else the var to print */
    uint64_t seed;
    int threads;
} FlModelRun;

/* Loads the model and prints, for each row of DATA, its targets' values for that row (or the
 * var's); errors on stderr. Returns flrun's exit status (0, or 1: an error in the model, the data
 * or at run time). */
int fl_flrun_model(const FlModelRun *m);

#endif
