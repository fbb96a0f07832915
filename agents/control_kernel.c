/* The control op of control.h, alone in its file so that it is built without sanitizers
 * (aw_no_sanitize in agents/CMakeLists.txt): its time must never change with the agent's build
 * configuration, only with the host. */
#include "control.h"

static uint64_t carry = 1;

void aw_control_chain(uint64_t *counter)
{
	uint64_t x = carry + 1, k = 3;

	/* the empty asm keeps each multiply dependent on the one before: the compiler may not
	 * fold the chain into one multiply */
	for (int i = 0; i < 8; i++) {
		x *= k;
		__asm__ __volatile__("" : "+r"(x));
	}
	carry = x;
	++*counter;
}
