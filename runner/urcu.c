/* liburcu's memory-barrier flavour, loaded at run time so that one runner binary measures it
 * where it is installed and reports it skipped elsewhere. */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "internal.h"

int aw_urcu_load(struct aw_urcu *u, const char **why)
{
	static const char *const names[] = {"liburcu-memb.so.8", "liburcu-memb.so.6",
	                                    "liburcu-memb.so"};

	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !u->handle; i++)
		u->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!u->handle) {
		*why = "liburcu (liburcu-memb.so) is not installed on this host";
		return -ENOENT;
	}
	/* POSIX allows converting dlsym's void * to a function pointer; memcpy keeps
	 * -Wpedantic quiet about it. */
#define SYM(field, name)                            \
	do {                                        \
		void *p_ = dlsym(u->handle, name);  \
		if (!p_)                            \
			goto missing;               \
		memcpy(&u->field, &p_, sizeof(p_)); \
	} while (0)
	SYM(read_lock, "urcu_memb_read_lock");
	SYM(read_unlock, "urcu_memb_read_unlock");
	SYM(register_thread, "urcu_memb_register_thread");
	SYM(unregister_thread, "urcu_memb_unregister_thread");
#undef SYM
	u->call.lock = u->read_lock;
	u->call.unlock = u->read_unlock;
	return 0;
missing:
	dlclose(u->handle);
	memset(u, 0, sizeof(*u));
	*why = "liburcu-memb.so lacks urcu_memb_read_lock and friends (liburcu older than 0.13)";
	return -ENOENT;
}

void aw_urcu_release(struct aw_urcu *u)
{
	if (u->handle)
		dlclose(u->handle);
	memset(u, 0, sizeof(*u));
}
