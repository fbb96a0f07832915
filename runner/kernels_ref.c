/* The family of reference kernels (kernels.h): their table, the plain C loops every build
 * carries, the twins, and the walk of memchase-v1 (which memgather-v1 reads too), built once per
 * process and NUMA node. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels_gen.h"

AW_DEFINE_MULINDEP(aw_mulindep_portable, AW_MULINDEP_C_STEP)
AW_DEFINE_LOOP(atomicadd_c11, AW_C11_RELAXED_STEP)
AW_DEFINE_MEMCHASE(aw_memchase_portable, AW_MEMCHASE_C_STEP)
AW_DEFINE_MEMGATHER(aw_memgather_portable, AW_MEMGATHER_C_STEP)

uint64_t aw_atomicadd_portable(const struct aw_loop *l)
{
	struct aw_loop plain = *l;

	plain.duty = 0;
	return atomicadd_c11(&plain);
}

void aw_mulindep_twin(struct aw_slot *s, uint64_t steps)
{
	uint64_t x[AW_MULINDEP_CHAINS];

	memcpy(x, s, sizeof(x));
	for (unsigned i = 0; i < AW_MULINDEP_CHAINS; i++)
		x[i] = aw_reference_twin(x[i], steps);
	memcpy(s, x, sizeof(x));
}

/* ---- the walk ---- */

/* Walks beyond this many NUMA nodes share the last one's (no host we know has more). */
#define MAX_NODES 64

static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
static void *walks[MAX_NODES];
static uint32_t *permutation; /* line i links to line permutation[i] */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Sattolo's shuffle of the identity: a permutation that is one cycle through every line. */
static void make_cycle(uint32_t *perm)
{
	uint64_t state = AW_MEMCHASE_SEED;

	for (uint32_t i = 0; i < AW_MEMCHASE_LINES; i++)
		perm[i] = i;
	for (uint32_t i = AW_MEMCHASE_LINES - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(splitmix64(&state) % i), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

/* The cycle, once per process. Called with walk_lock held; 0 or -ENOMEM. */
static int build_permutation(void)
{
	if (permutation)
		return 0;
	permutation = malloc(AW_MEMCHASE_LINES * sizeof(*permutation));
	if (!permutation)
		return -ENOMEM;
	make_cycle(permutation);
	return 0;
}

/* The node of the calling thread (0 when the kernel does not say). */
static unsigned current_node(void)
{
	unsigned cpu = 0, node = 0;

	if (syscall(SYS_getcpu, &cpu, &node, NULL) < 0)
		return 0;
	return node < MAX_NODES ? node : MAX_NODES - 1;
}

const void *aw_memchase_walk(void)
{
	const size_t bytes = (size_t)AW_MEMCHASE_LINES * AW_MEMCHASE_LINE;
	unsigned node = current_node();
	char *walk;

	pthread_mutex_lock(&walk_lock);
	walk = walks[node];
	if (walk || build_permutation())
		goto out;
	walk = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (walk == MAP_FAILED) {
		walk = NULL;
		goto out;
	}
#ifdef MADV_NOHUGEPAGE
	madvise(walk, bytes, MADV_NOHUGEPAGE); /* advice: a kernel without THP has none to refuse */
#endif
	/* written by this thread, so the first touch puts the pages on its node */
	for (uint32_t i = 0; i < AW_MEMCHASE_LINES; i++)
		*(uintptr_t *)(walk + (size_t)i * AW_MEMCHASE_LINE) =
		    (uintptr_t)(walk + (size_t)permutation[i] * AW_MEMCHASE_LINE);
	walks[node] = walk;
out:
	pthread_mutex_unlock(&walk_lock);
	return walk;
}

uint32_t aw_memchase_twin(uint32_t index, uint64_t steps)
{
	/* its own copy of the cycle: the walk's pointers are what it checks */
	uint32_t *perm = malloc(AW_MEMCHASE_LINES * sizeof(*perm));

	if (!perm)
		return UINT32_MAX;
	make_cycle(perm);
	for (; steps; steps--)
		index = perm[index];
	free(perm);
	return index;
}

int aw_memgather_twin(struct aw_slot *s, uint64_t steps)
{
	uint32_t *perm = malloc(AW_MEMCHASE_LINES * sizeof(*perm));
	uint64_t x = s->value, sum = s->pair_hi;

	if (!perm)
		return -ENOMEM;
	make_cycle(perm);
	for (; steps; steps--) {
		sum += s->pad[0] + (uint64_t)perm[x >> 48] * AW_MEMCHASE_LINE;
		x = x * AW_MEMGATHER_MUL + AW_MEMGATHER_ADD;
	}
	free(perm);
	s->value = x;
	s->pair_hi = sum;
	return 0;
}

/* ---- the table ---- */

static int start_mulchain(struct aw_slot *s)
{
	s->value = AW_REFERENCE_SEED;
	return 0;
}

static int start_mulindep(struct aw_slot *s)
{
	uint64_t x[AW_MULINDEP_CHAINS];

	/* odd seeds, so that no chain ever reaches 0 */
	for (unsigned i = 0; i < AW_MULINDEP_CHAINS; i++)
		x[i] = AW_REFERENCE_SEED + 2 * i;
	memcpy(s, x, sizeof(x));
	return 0;
}

static int start_atomicadd(struct aw_slot *s)
{
	s->value = 0;
	return 0;
}

static int start_memchase(struct aw_slot *s)
{
	const void *walk = aw_memchase_walk();

	if (!walk)
		return -ENOMEM;
	s->value = (uintptr_t)walk;
	return 0;
}

static int start_memgather(struct aw_slot *s)
{
	const void *walk = aw_memchase_walk();

	if (!walk)
		return -ENOMEM;
	s->value = AW_MEMGATHER_SEED;
	s->pair_hi = 0;
	s->pad[0] = (uintptr_t)walk;
	return 0;
}

const struct aw_reference_kernel *aw_reference_kernels(unsigned *n)
{
	static const struct aw_reference_kernel family[] = {
	    {AW_REF_MULCHAIN, AW_REF_MULCHAIN_NAME, aw_reference_timed, aw_reference_portable,
	     start_mulchain},
	    {AW_REF_MULINDEP, AW_REF_MULINDEP_NAME, aw_mulindep_timed, aw_mulindep_portable,
	     start_mulindep},
	    {AW_REF_ATOMICADD, AW_REF_ATOMICADD_NAME, aw_atomicadd_timed, aw_atomicadd_portable,
	     start_atomicadd},
	    {AW_REF_MEMCHASE, AW_REF_MEMCHASE_NAME, aw_memchase_timed, aw_memchase_portable,
	     start_memchase},
	    {AW_REF_MEMGATHER, AW_REF_MEMGATHER_NAME, aw_memgather_timed, aw_memgather_portable,
	     start_memgather},
	};

	_Static_assert(sizeof(family) / sizeof(family[0]) == AW_REF_COUNT, "every kernel");
	*n = AW_REF_COUNT;
	return family;
}
