/* tmpl.h: instantiates the template file named by FL_TMPL for float (suffix _f32) and double
 * (suffix _f64). Include it after defining FL_TMPL; it undefines FL_TMPL. No include guard: it is
 * meant to be included once per template. */
#define T float
#define S(n) n##_f32
#include FL_TMPL
#undef T
#undef S
#define T double
#define S(n) n##_f64
#include FL_TMPL
#undef T
#undef S
#undef FL_TMPL
