/* Shared utilities; see util.h for the contract of each function. */
#include "aw/util.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void aw_freep(void *pp)
{
	void **p = pp;

	free(*p);
	*p = NULL;
}

/* format(printf, 1, 0): fmt is checked at the callers, which take the variadic arguments. */
static char *vasprintf_alloc(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static char *vasprintf_alloc(const char *fmt, va_list ap)
{
	va_list copy;
	char *s;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *aw_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vasprintf_alloc(fmt, ap);
	va_end(ap);
	return s;
}

int aw_errorf(char **err, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return rc;
	free(*err);
	va_start(ap, fmt);
	*err = vasprintf_alloc(fmt, ap);
	va_end(ap);
	return rc;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
	} else {
		if (fsync(fd) < 0 && errno != EINVAL)
			rc = -errno;
		close(fd);
	}
	free(copy);
	return rc;
}

int aw_write_file_atomic(const char *path, const void *data, size_t len, char **err)
{
	char *tmp = NULL;
	int fd = -1, rc;

	tmp = aw_asprintf("%s.tmp.XXXXXX", path);
	if (!tmp)
		return aw_errorf(err, -ENOMEM, "cannot write '%s': out of memory", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = aw_errorf(err, -errno, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = write_all(fd, data, len);
	if (!rc && fchmod(fd, 0644) < 0)
		rc = -errno;
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	fd = -1;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		aw_errorf(err, rc, "cannot write '%s': %s", path, strerror(-rc));
		unlink(tmp);
		goto out;
	}
	rc = fsync_dir_of(path);
	if (rc)
		aw_errorf(err, rc, "cannot sync the directory of '%s': %s", path, strerror(-rc));
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	return rc;
}

/* Reads all of `fd` (at most `limit` bytes) into *data and *len, and closes it; *err names
 * `path`. */
static int read_fd(int fd, const char *path, size_t limit, char **data, size_t *len, char **err)
{
	char *buf = NULL;
	size_t used = 0, cap = 0;
	int rc = 0;

	for (;;) {
		ssize_t n;

		if (cap - used < 4096) {
			size_t ncap = cap ? cap * 2 : 8192;
			char *p;

			if (ncap > limit + 2)
				ncap = limit + 2;
			if (ncap <= used + 1) {
				rc = aw_errorf(err, -E2BIG, "'%s' is larger than %zu bytes", path,
				               limit);
				goto out;
			}
			p = realloc(buf, ncap);
			if (!p) {
				rc = aw_errorf(err, -ENOMEM, "cannot read '%s': out of memory",
				               path);
				goto out;
			}
			buf = p;
			cap = ncap;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = aw_errorf(err, -errno, "cannot read '%s': %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > limit) {
			rc = aw_errorf(err, -E2BIG, "'%s' is larger than %zu bytes", path, limit);
			goto out;
		}
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf) {
			rc = aw_errorf(err, -ENOMEM, "cannot read '%s': out of memory", path);
			goto out;
		}
	}
	buf[used] = '\0';
	*data = buf;
	*len = used;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

int aw_read_file(const char *path, size_t limit, char **data, size_t *len, char **err)
{
	int fd;

	*data = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return aw_errorf(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	return read_fd(fd, path, limit, data, len, err);
}

int aw_make_dirs(const char *path, mode_t mode)
{
	char *copy = strdup(path);
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	/* each prefix that ends before a '/' (not the root's), then the whole path */
	for (char *p = copy + (*copy == '/'); !rc; p++) {
		if (*p && *p != '/')
			continue;
		char saved = *p;

		*p = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			rc = -errno;
		*p = saved;
		if (!saved)
			break;
	}
	free(copy);
	return rc;
}

/* An open of `name` under `dfd` that failed with `err`: a link opened with O_DIRECTORY and
 * O_NOFOLLOW says ENOTDIR, told as openat2 tells a link (-ELOOP). */
static int link_errno(int dfd, const char *name, int err)
{
	struct stat st;

	if (err == -ENOTDIR && !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
		return -ELOOP;
	return err;
}

int aw_open_beneath_walk(const char *dir, const char *rel, int flags, mode_t mode, bool mkdirs)
{
	const int dflags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	if (dfd < 0)
		return -errno;
	for (const char *p = rel;;) {
		size_t n = strcspn(p, "/");
		char name[256];

		if (n >= sizeof(name)) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		/* what RESOLVE_BENEATH refuses: an absolute path or "..", which may leave dir */
		if (!strcmp(name, "..") || (p == rel && !n)) {
			fd = -EXDEV;
			break;
		}
		p += n;
		while (*p == '/')
			p++;
		if (!*p && !mkdirs) {
			fd = openat(dfd, *name ? name : ".", flags | O_NOFOLLOW | O_CLOEXEC, mode);
			fd = fd < 0 ? link_errno(dfd, name, -errno) : fd;
			break;
		}
		if (mkdirs && *name && mkdirat(dfd, name, 0755) < 0 && errno != EEXIST) {
			fd = -errno;
			break;
		}
		fd = openat(dfd, *name ? name : ".", dflags);
		if (fd < 0) {
			fd = link_errno(dfd, name, -errno);
			break;
		}
		close(dfd);
		dfd = fd;
		if (!*p)
			return dfd; /* mkdirs: the directory itself */
	}
	close(dfd);
	return fd;
}

int aw_open_beneath(const char *dir, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
	                       .mode = flags & O_CREAT ? mode : 0,
	                       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
	int dfd, fd;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	fd = link_errno(dfd, rel, fd);
	close(dfd);
	if (fd == -ENOSYS || fd == -EPERM) /* no openat2, or a seccomp filter refusing it */
		return aw_open_beneath_walk(dir, rel, flags, mode, false);
	return fd;
}

/* Splits `rel` into its directory (into parent[size]; "." for none) and its last component,
 * which it returns; NULL when the directory does not fit. */
static const char *split_rel(const char *rel, char *parent, size_t size)
{
	const char *slash = strrchr(rel, '/');

	if (snprintf(parent, size, "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".") >=
	    (int)size)
		return NULL;
	return slash ? slash + 1 : rel;
}

int aw_stat_beneath(const char *dir, const char *rel, struct stat *st)
{
	/* O_NONBLOCK: a FIFO planted there opens at once (and is then no regular file) */
	int fd = aw_open_beneath(dir, rel, O_RDONLY | O_NONBLOCK, 0), rc = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int aw_read_beneath(const char *dir, const char *rel, size_t limit, char **data, size_t *len)
{
	struct stat st;
	int fd, flags, rc = 0;

	*data = NULL;
	*len = 0;
	fd = aw_open_beneath(dir, rel, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -ENOENT;
	else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	return read_fd(fd, rel, limit, data, len, NULL);
}

int aw_write_beneath(const char *dir, const char *rel, const void *data, size_t len, bool sync,
                     char **err)
{
	char parent[PATH_MAX], tmp[NAME_MAX + 1];
	const char *name = split_rel(rel, parent, sizeof(parent));
	unsigned char rnd[6];
	int dfd, fd, rc = 0;

	if (!name || !*name || strlen(name) + 14 > NAME_MAX)
		return aw_errorf(err, -ENAMETOOLONG, "bad path '%s/%s'", dir, rel);
	dfd = aw_open_beneath_walk(dir, parent, 0, 0, true);
	if (dfd == -ENOENT) { /* `dir` itself is missing (below it the walk creates): the top */
		rc = aw_make_dirs(dir, 0755); /* is trusted */
		if (rc)
			return aw_errorf(err, rc, "cannot create '%s': %s", dir, strerror(-rc));
		dfd = aw_open_beneath_walk(dir, parent, 0, 0, true);
	}
	if (dfd < 0)
		return aw_errorf(err, dfd, "cannot create '%s/%s': %s", dir, parent,
		                 strerror(-dfd));
	rc = aw_random_bytes(rnd, sizeof(rnd));
	if (rc)
		goto out;
	snprintf(tmp, sizeof(tmp), ".%s.%02x%02x%02x%02x%02x%02x", name, rnd[0], rnd[1], rnd[2],
	         rnd[3], rnd[4], rnd[5]);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write_all(fd, data, len);
	if (!rc && fchmod(fd, 0644) < 0)
		rc = -errno;
	if (!rc && sync && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc)
		unlinkat(dfd, tmp, 0);
	if (!rc && sync && fsync(dfd) < 0)
		rc = -errno;
out:
	close(dfd);
	if (rc)
		return aw_errorf(err, rc, "cannot write '%s/%s': %s", dir, rel, strerror(-rc));
	return 0;
}

int aw_unlink_beneath(const char *dir, const char *rel)
{
	char parent[PATH_MAX];
	const char *name = split_rel(rel, parent, sizeof(parent));
	int dfd, rc = 0;

	if (!name || !*name)
		return -ENAMETOOLONG;
	dfd = aw_open_beneath(dir, parent, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, name, 0) < 0)
		rc = -errno;
	close(dfd);
	return rc;
}

int aw_random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int aw_uuid4(char *out)
{
	unsigned char b[16];
	int rc = aw_random_bytes(b, sizeof(b));

	if (rc)
		return rc;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, AW_UUID_LEN + 1,
	         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
	         b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
	         b[15]);
	return 0;
}

void aw_time_format(const struct timespec *ts, char *out)
{
	struct tm tm;
	time_t secs = ts->tv_sec;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(out, AW_TIME_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, AW_TIME_LEN - n, ".%06ldZ", (long)(ts->tv_nsec / 1000) % 1000000);
}

void aw_time_now(char *out)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	aw_time_format(&ts, out);
}

static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int aw_time_parse(const char *s, int64_t *epoch_us)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, scale = 1000000, t;
	const char *p = s;

	if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
	    digits(&p, 2, &d))
		return -EINVAL;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
	    digits(&p, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p)) {
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
			p++;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	t -= sign * (oh * 3600 + om * 60);
	*epoch_us = t * 1000000 + frac;
	return 0;
}

uint64_t aw_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool aw_valid_name(const char *s)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];

		if (n >= AW_NAME_MAX)
			return false;
		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	}
	return n > 0;
}

bool aw_valid_commit(const char *s)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++)
		if (n >= AW_COMMIT_MAX || !isxdigit((unsigned char)s[n]))
			return false;
	return n >= AW_COMMIT_MIN;
}

bool aw_valid_ref(const char *s)
{
	size_t n = 0;

	if (!s || !*s || *s == '-' || *s == '/')
		return false;
	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];

		if (n >= 255 || c <= ' ' || c >= 0x7f || strchr("~^:?*[\\", c))
			return false;
		if (c == '.' && s[n + 1] == '.')
			return false;
	}
	return s[n - 1] != '/' && s[n - 1] != '.';
}

bool aw_valid_uuid(const char *s)
{
	if (!s || strlen(s) != AW_UUID_LEN)
		return false;
	for (int i = 0; i < AW_UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
		} else if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) {
			return false;
		}
	}
	return true;
}

int aw_array_reserve(void *items, size_t n, size_t *cap, size_t size, size_t first)
{
	void *array, *moved;
	size_t grown;

	/* items are added one at a time: doubling past [n] would not reach a later index */
	assert(n <= *cap);
	assert(size > 0 && (*cap || first > 0));
	if (n < *cap)
		return 0;
	grown = *cap ? *cap * 2 : first;
	if (grown > SIZE_MAX / size)
		return -ENOMEM;
	memcpy(&array, items, sizeof(array)); /* *items is some T *, not a void * */
	moved = realloc(array, grown * size);
	if (!moved)
		return -ENOMEM;
	memcpy(items, &moved, sizeof(moved));
	*cap = grown;
	return 0;
}

int aw_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int aw_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		/* (a digit above max would wrap max - d round) */
		if (d > max || v > (max - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int aw_parse_scaled(const char *s, const struct aw_unit *units, size_t n, uint64_t max, bool blanks,
                    uint64_t *out)
{
	char num[32];
	size_t len = 0;
	uint64_t v;

	if (!s)
		return -EINVAL;
	while (isdigit((unsigned char)s[len]) && len < sizeof(num) - 1) {
		num[len] = s[len];
		len++;
	}
	num[len] = '\0';
	if (!len || aw_parse_u64(num, max, &v))
		return -EINVAL;
	while (blanks && s[len] == ' ')
		len++;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(s + len, units[i].suffix)) {
			*out = v * units[i].mult;
			return 0;
		}
	}
	return -EINVAL;
}

int aw_parse_duration_ms(const char *s, uint64_t *out_ms)
{
	static const struct aw_unit units[] = {
	    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}};

	return aw_parse_scaled(s, units, sizeof(units) / sizeof(units[0]), UINT64_MAX / 3600000,
	                       false, out_ms);
}

void aw_sleep_ns(uint64_t ns, volatile int *stop)
{
	struct timespec req = {.tv_sec = (time_t)(ns / 1000000000u),
	                       .tv_nsec = (long)(ns % 1000000000u)};
	struct timespec rem;

	while (nanosleep(&req, &rem) < 0 && errno == EINTR) {
		if (stop && *stop)
			return;
		req = rem;
	}
}

size_t aw_utf8_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] >= 0xC2 && p[0] <= 0xDF) {
		n = 2;
		cp = p[0] & 0x1Fu;
	} else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
		n = 3;
		cp = p[0] & 0x0Fu;
	} else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
		n = 4;
		cp = p[0] & 0x07u;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3Fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}
