/* The op tables of this build: the architecture's kernels followed by the C11 ones. */
#include <stddef.h>
#include <string.h>
#include <sys/utsname.h>

#include "kernels_gen.h"

AW_DEFINE_LOOP(empty_loop, AW_EMPTY_STEP)

uint64_t aw_empty_loop(const struct aw_loop *l)
{
	return empty_loop(l);
}

AW_DEFINE_REFERENCE(aw_reference_portable, AW_REFERENCE_C_STEP)

uint64_t aw_reference_twin(uint64_t x, uint64_t steps)
{
	for (; steps; steps--)
		x *= AW_REFERENCE_MUL;
	return x;
}

#define MAX_KERNELS 64

const struct aw_kernel *aw_kernels(unsigned *n)
{
	static struct aw_kernel all[MAX_KERNELS];
	static unsigned n_all;

	if (!n_all) {
		unsigned na, nc;
		const struct aw_kernel *a = aw_arch_kernels(&na), *c = aw_c11_kernels(&nc);

		_Static_assert(MAX_KERNELS >= 32, "room for every op");
		memcpy(all, a, na * sizeof(*a));
		memcpy(all + na, c, nc * sizeof(*c));
		n_all = na + nc;
	}
	*n = n_all;
	return all;
}

const struct aw_reader_kernel *aw_reader_kernels(unsigned *n)
{
	return aw_arch_reader_kernels(n);
}
