/* The names of the fixed matrix (DESIGN.md, "The fixed matrix"), on every architecture. */
#include <string.h>

#include "internal.h"

static const struct aw_op_info ops[] = {
    /* aarch64 */
    {"plain", NULL, false, false},
    {"llsc", "aarch64", true, false},
    {"stadd", "aarch64", true, true},
    {"ldadd", "aarch64", true, true},
    {"ldadda", "aarch64", true, true},
    {"ldaddl", "aarch64", true, true},
    {"ldaddal", "aarch64", true, true},
    {"prfm_keep_stadd", "aarch64", true, true},
    {"prfm_strm_stadd", "aarch64", true, true},
    {"cas", NULL, true, false}, /* aarch64: LSE CAS (lse checked per kernel); x86: lock cmpxchg */
    {"icas", "aarch64", true, true},
    {"swp", "aarch64", false, true},
    {"casp", "aarch64", true, true},
    {"ldxp_stxp", "aarch64", true, false},
    /* x86-64 */
    {"lock_inc", "x86_64", true, false},
    {"lock_xadd", "x86_64", true, false},
    {"xchg", "x86_64", false, false},
    {"prefetchw_lock_inc", "x86_64", true, false},
    {"cmpxchg16b", "x86_64", true, false},
    /* every architecture */
    {"c11_relaxed", NULL, true, false},
    {"c11_seqcst", NULL, true, false},
    {"c11_cas", NULL, true, false},
};

static const char *const readers[] = {"srcu", "srcu_fast", "srcu_nmisafe", "urcu_memb"};

const struct aw_op_info *aw_op_infos(unsigned *n)
{
	*n = sizeof(ops) / sizeof(ops[0]);
	return ops;
}

const struct aw_op_info *aw_op_lookup(const char *name)
{
	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	return NULL;
}

bool aw_op_on_arch(const struct aw_op_info *op, const char *arch)
{
	return !op->arch || !strcmp(op->arch, arch);
}

bool aw_reader_known(const char *name)
{
	for (unsigned i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		if (!strcmp(readers[i], name))
			return true;
	return false;
}
