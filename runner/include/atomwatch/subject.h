/* atomwatch subject ABI: how a library under test exposes its per-CPU ops and readers so that
 * the agent can measure them at each commit ("subjects" in configs/agent.yaml).
 *
 * A subject library is a shared object exporting one function,
 *
 *     const struct atomwatch_subject *atomwatch_subject(void);
 *
 * that returns a static description of its ops. The agent dlopens the library, checks `abi`,
 * and times each op by calling it through a function pointer, subtracting the cost of calling
 * an empty function the same way. Each op must add exactly 1 to *counter (the agent checks the
 * count afterwards and fails the cell otherwise); readers take no argument and must pair up.
 * Names follow [A-Za-z0-9._-]{1,64}. This header has no dependencies and may be copied into
 * the subject's own tree. */
#ifndef ATOMWATCH_SUBJECT_H
#define ATOMWATCH_SUBJECT_H

#include <stdint.h>

#define ATOMWATCH_SUBJECT_ABI    1
#define ATOMWATCH_SUBJECT_SYMBOL "atomwatch_subject"

struct atomwatch_subject_op {
	const char *name;              /* e.g. "this_cpu_inc" */
	void (*op)(uint64_t *counter); /* adds 1 to *counter */
};

struct atomwatch_subject_reader {
	const char *name; /* e.g. "srcu_read" */
	void (*lock)(void);
	void (*unlock)(void);
};

struct atomwatch_subject {
	uint32_t abi;                                   /* ATOMWATCH_SUBJECT_ABI */
	const char *name;                               /* the library's own name, informational */
	const struct atomwatch_subject_op *ops;         /* ends with {NULL, NULL} */
	const struct atomwatch_subject_reader *readers; /* NULL, or ends with {NULL, NULL, NULL} */
};

typedef const struct atomwatch_subject *(*atomwatch_subject_fn)(void);

#endif
