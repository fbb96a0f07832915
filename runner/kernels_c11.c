/* The C11 ops, on every architecture: what `atomic_fetch_add_explicit` and a CAS loop compile
 * to with this build's compiler and flags. */
#include "kernels_gen.h"

AW_DEFINE_OP(c11_relaxed, AW_C11_RELAXED_STEP)
AW_DEFINE_OP(c11_seqcst, AW_C11_SEQCST_STEP)
AW_DEFINE_OP(c11_cas, AW_C11_CAS_STEP)

#define twin_c11_relaxed aw_twin_inc
#define twin_c11_seqcst  aw_twin_inc
#define twin_c11_cas     aw_twin_inc

static const struct aw_kernel c11[] = {
    AW_KERNEL(c11_relaxed, AW_OP_ATOMIC, 1),
    AW_KERNEL(c11_seqcst, AW_OP_ATOMIC, 1),
    AW_KERNEL(c11_cas, AW_OP_ATOMIC, 1),
};

const struct aw_kernel *aw_c11_kernels(unsigned *n)
{
	*n = sizeof(c11) / sizeof(c11[0]);
	return c11;
}
