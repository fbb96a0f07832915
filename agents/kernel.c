/* The running kernel's commit, from its release string or /proc/version; see kernel.h. */
#include "kernel.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define PROC_VERSION_LIMIT 4096
#define SHA_MIN            7  /* git's shortest abbreviation; setlocalversion uses 12 */
#define SHA_MAX            40 /* a full SHA-1 */

/* The hex digits of a "-g<sha>" token in s (s[i] == '-' starts it), or 0 when there is none
 * there. The token ends the string or is followed by '-', '+', '.', a blank or ')'. */
static size_t sha_at(const char *s, size_t i, bool *dirty)
{
	size_t n = 0;
	const char *h = s + i + 2, *end;

	if (s[i] != '-' || s[i + 1] != 'g' || i == 0 || !isalnum((unsigned char)s[i - 1]))
		return 0;
	while (isxdigit((unsigned char)h[n]) && n <= SHA_MAX)
		n++;
	if (n < SHA_MIN || n > SHA_MAX)
		return 0;
	end = h + n;
	if (*end && !strchr("-+. )\n", *end))
		return 0;
	*dirty = !strncmp(end, "-dirty", 6) || *end == '+';
	return n;
}

/* The last "-g<sha>" of s (a release may carry a base version's "-g" too; the last is the
 * commit of the tree). Returns its length and sets *pos, or 0. */
static size_t find_sha(const char *s, size_t len, size_t *pos, bool *dirty)
{
	size_t found = 0;

	for (size_t i = 0; s && i + 2 < len; i++) {
		bool d = false;
		size_t n = sha_at(s, i, &d);

		if (n) {
			found = n;
			*pos = i + 2;
			*dirty = d;
		}
	}
	return found;
}

int aw_kernel_commit_of(const char *release, const char *proc_version, struct aw_kernel_id *id,
                        char **err)
{
	const char *src = release;
	size_t pos = 0, n;
	bool dirty = false;

	memset(id, 0, sizeof(*id));
	n = find_sha(release, release ? strlen(release) : 0, &pos, &dirty);
	if (n) {
		id->from = "uname -r";
	} else if (proc_version) {
		/* only the first line, and not past its end: a long version is no commit */
		size_t len = strcspn(proc_version, "\n");

		if (len > PROC_VERSION_LIMIT)
			len = PROC_VERSION_LIMIT;
		n = find_sha(proc_version, len, &pos, &dirty);
		src = proc_version;
		id->from = "/proc/version";
	}
	if (!n)
		return aw_errorf(
		    err, -ENOENT,
		    "the running kernel '%s' names no commit: neither its release (uname -r) nor "
		    "/proc/version holds -g<sha> (build it from a git tree with "
		    "CONFIG_LOCALVERSION_AUTO=y, or give the commit with --commit SHA)",
		    release ? release : "?");
	for (size_t i = 0; i < n; i++)
		id->commit[i] = (char)tolower((unsigned char)src[pos + i]);
	id->commit[n] = '\0';
	id->dirty = dirty;
	return 0;
}

int aw_kernel_commit(struct aw_kernel_id *id, char **err)
{
	struct utsname uts;
	char *version = NULL, *why = NULL;
	size_t len;
	int rc;

	if (uname(&uts) < 0)
		return aw_errorf(err, -errno, "uname: %s", strerror(errno));
	/* /proc/version may be missing (a container without /proc): the release alone decides */
	if (aw_read_file("/proc/version", PROC_VERSION_LIMIT, &version, &len, &why))
		version = NULL;
	rc = aw_kernel_commit_of(uts.release, version, id, err);
	free(version);
	free(why);
	return rc;
}
