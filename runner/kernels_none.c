/* Architectures without hand-written kernels: only the C11 ops and readers built on them, with
 * C11 fences as the barriers. */
#include <stdbool.h>
#include <sys/utsname.h>

#include "kernels_gen.h"

static const struct aw_kernel none[1];

const struct aw_kernel *aw_arch_kernels(unsigned *n)
{
	*n = 0;
	return none;
}

#define SMP_MB() atomic_thread_fence(memory_order_seq_cst)

AW_DEFINE_READER(srcu, c11_relaxed, AW_C11_RELAXED_STEP, SMP_MB, SMP_MB)
AW_DEFINE_READER(srcu_fast, c11_relaxed, AW_C11_RELAXED_STEP, AW_BARRIER, AW_BARRIER)
AW_DEFINE_READER(srcu_nmisafe, c11_relaxed, AW_C11_RELAXED_STEP, SMP_MB, SMP_MB)

static const struct aw_reader_kernel readers[] = {
    AW_READER(srcu, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_fast, c11_relaxed, AW_OP_ATOMIC),
    AW_READER(srcu_nmisafe, c11_relaxed, AW_OP_ATOMIC),
};

const struct aw_reader_kernel *aw_arch_reader_kernels(unsigned *n)
{
	*n = sizeof(readers) / sizeof(readers[0]);
	return readers;
}

/* No asm here: the reference kernels are the C loops. */
uint64_t aw_reference_timed(const struct aw_loop *l)
{
	return aw_reference_portable(l);
}

uint64_t aw_mulindep_timed(const struct aw_loop *l)
{
	return aw_mulindep_portable(l);
}

uint64_t aw_atomicadd_timed(const struct aw_loop *l)
{
	return aw_atomicadd_portable(l);
}

uint64_t aw_memchase_timed(const struct aw_loop *l)
{
	return aw_memchase_portable(l);
}

uint64_t aw_memgather_timed(const struct aw_loop *l)
{
	return aw_memgather_portable(l);
}

const char *aw_build_arch(void)
{
	static struct utsname u;

	if (!u.machine[0] && uname(&u) < 0)
		return "unknown";
	return u.machine;
}

bool aw_cpu_has_lse(void)
{
	return false;
}
