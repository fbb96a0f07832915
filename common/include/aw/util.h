/* Small utilities shared by every component: files written atomically, bounded reads,
 * random ids, RFC 3339 times, and the name/commit rules of the result document.
 * Conventions: int functions return 0 or a negative errno; error text, when a `char **err` is
 * given, is a malloc'd lowercase message naming the subject that the caller frees. */
#ifndef AW_UTIL_H
#define AW_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct stat;

#define AW_UUID_LEN   36
#define AW_TIME_LEN   32 /* "2026-11-29T19:19:00.123456Z" and the terminator fit */
#define AW_NAME_MAX   64
#define AW_COMMIT_MIN 7
#define AW_COMMIT_MAX 64

/* Frees *pp and sets it to NULL; pp is a pointer to any pointer. */
void aw_freep(void *pp);

/* malloc'd printf; NULL on allocation or format failure. */
char *aw_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sets *err (when err is not NULL) to a malloc'd formatted message; always returns `rc`. */
int aw_errorf(char **err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes `len` bytes to `path` so that readers see either the old file or the whole new one:
 * a temp file beside it, fsync, rename, fsync of the directory. Returns 0 or a negative errno
 * with *err naming the path; on error the temp file is removed and `path` is untouched. */
int aw_write_file_atomic(const char *path, const void *data, size_t len, char **err);

/* Reads a whole file of at most `limit` bytes into a malloc'd NUL-terminated buffer (*data,
 * *len). Returns 0, -E2BIG when larger than `limit`, or a negative errno; *err names the path. */
int aw_read_file(const char *path, size_t limit, char **data, size_t *len, char **err);

/* mkdir -p: creates `path` and each missing directory above it with `mode` (an existing one is
 * left as it is). Returns 0 or a negative errno (-ENOMEM, or mkdir's, -ENOENT for ""). */
int aw_make_dirs(const char *path, mode_t mode);

/* Opens `rel` (a relative path) under the directory `dir` without following any symbolic link
 * on the way, neither a directory nor the file, and without leaving `dir` (".."). `dir`
 * itself is trusted (followed). Uses openat2(2) with RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
 * and aw_open_beneath_walk() where the kernel has no openat2 (ENOSYS, before Linux 5.6).
 * `flags` are open(2)'s (O_CLOEXEC and O_NOFOLLOW are added). Returns the descriptor or a
 * negative errno: -ELOOP for a link met, -EXDEV for a path that leaves `dir`, -ENOENT,
 * -ENOTDIR... */
int aw_open_beneath(const char *dir, const char *rel, int flags, mode_t mode);

/* The same by one openat(O_NOFOLLOW) per component; with `mkdirs`, the missing directories
 * are created (0755) on the way and `rel` itself is opened as a directory (then `flags` and
 * `mode` are ignored). Exposed for the tests of the fallback. */
int aw_open_beneath_walk(const char *dir, const char *rel, int flags, mode_t mode, bool mkdirs);

/* fstat(2) of <dir>/<rel> reached as aw_open_beneath() does (a FIFO is opened without
 * blocking). Returns 0 or aw_open_beneath()'s negative errno. */
int aw_stat_beneath(const char *dir, const char *rel, struct stat *st);

/* aw_read_file() of <dir>/<rel> reached as aw_open_beneath() does: a regular file (anything
 * else is -ENOENT; a FIFO never blocks it), at most `limit` bytes (-E2BIG). */
int aw_read_beneath(const char *dir, const char *rel, size_t limit, char **data, size_t *len);

/* Writes <dir>/<rel> under a hidden temp name beside it (a leading '.'), then renames it over
 * whatever was there: a link or FIFO planted at that name is replaced, never written through.
 * `dir` is created when missing (it is trusted); the directories below it are created and
 * opened without following a link (a link to a directory elsewhere is refused, -ELOOP).
 * `sync`: fsync of the file before the rename and of its directory after. Returns 0 or a
 * negative errno with *err naming the path; on error the temp file is removed. */
int aw_write_beneath(const char *dir, const char *rel, const void *data, size_t len, bool sync,
                     char **err);

/* unlink(2) of <dir>/<rel>, its directory reached as aw_open_beneath() does: nothing outside
 * `dir` is ever removed. Returns 0 or a negative errno (-ENOENT when it was not there). */
int aw_unlink_beneath(const char *dir, const char *rel);

/* Fills `buf` with `len` bytes from the kernel's CSPRNG (getrandom, EINTR retried).
 * Returns 0 or a negative errno. */
int aw_random_bytes(void *buf, size_t len);

/* Writes a random (version 4) UUID in lowercase into out[AW_UUID_LEN + 1]. Returns 0 or a
 * negative errno. */
int aw_uuid4(char *out);

/* Formats `ts` as UTC RFC 3339 with microseconds into out[AW_TIME_LEN]. */
void aw_time_format(const struct timespec *ts, char *out);

/* The current CLOCK_REALTIME time formatted by aw_time_format(). */
void aw_time_now(char *out);

/* Parses an RFC 3339 date-time ("2026-11-29T19:19:00Z", fractional seconds and numeric
 * offsets allowed) into microseconds since the epoch. Returns 0 or -EINVAL. */
int aw_time_parse(const char *s, int64_t *epoch_us);

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). */
uint64_t aw_monotonic_ns(void);

/* Names (hosts, projects, ops, labels): [A-Za-z0-9._-]{1,64}. */
bool aw_valid_name(const char *s);

/* Commit ids: lowercase or uppercase hex, 7 to 64 digits. */
bool aw_valid_commit(const char *s);

/* Git ref names: 1..255 printable ASCII characters without spaces, '~', '^', ':', '?', '*',
 * '[', '\\' or "..", as git check-ref-format would mostly allow. */
bool aw_valid_ref(const char *s);

/* A canonical lowercase UUID (8-4-4-4-12 hex digits). */
bool aw_valid_uuid(const char *s);

/* Makes room for item [n] of a growing heap array: `items` points at the array's pointer, of
 * `*cap` items of `size` bytes; when full it is reallocated to twice its capacity (`first` for
 * an empty one). Returns 0 or -ENOMEM (nothing changed). */
int aw_array_reserve(void *items, size_t n, size_t *cap, size_t size, size_t first);

/* The value of a hexadecimal digit (either case), or -1. */
int aw_hex_value(char c);

/* Parses a whole string as a non-negative decimal integer no greater than `max`. Returns 0 or
 * -EINVAL / -ERANGE. */
int aw_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* A unit suffix and what one of it is worth. */
struct aw_unit {
	const char *suffix;
	uint64_t mult;
};

/* Parses a decimal number of at most `max` followed by one of the `n` unit suffixes (exactly,
 * after blanks when `blanks`; "" is a suffix like any other) into number x mult. Returns 0 or
 * -EINVAL. */
int aw_parse_scaled(const char *s, const struct aw_unit *units, size_t n, uint64_t max, bool blanks,
                    uint64_t *out);

/* Parses durations such as "30m", "90s", "2h", "1500ms" or a bare number of seconds into
 * milliseconds. Returns 0 or -EINVAL. */
int aw_parse_duration_ms(const char *s, uint64_t *out_ms);

/* Sleeps for `ns` nanoseconds, resuming after signals unless *stop becomes non-zero. */
void aw_sleep_ns(uint64_t ns, volatile int *stop);

/* The length (2-4) of the valid UTF-8 sequence at p, whose first byte is >= 0x80, or 0 when it
 * is not one (overlong forms, surrogates, code points above U+10FFFF, a byte that does not
 * continue it, the terminator included): what jansson's utf8_check_full() accepts. */
size_t aw_utf8_len(const unsigned char *p);

#endif
