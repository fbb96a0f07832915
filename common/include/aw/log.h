/* Logging to stderr: "prog: level: message". Log an error once, where it is decided. */
#ifndef AW_LOG_H
#define AW_LOG_H

enum aw_log_level {
	AW_LOG_ERROR,
	AW_LOG_WARN,
	AW_LOG_INFO,
	AW_LOG_DEBUG
};

/* Sets the program name shown before every line and the most verbose level printed
 * (default: "atomwatch", AW_LOG_INFO). Not thread-safe; call once at start. */
void aw_log_init(const char *prog, enum aw_log_level level);

void aw_log(enum aw_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define aw_error(...) aw_log(AW_LOG_ERROR, __VA_ARGS__)
#define aw_warn(...)  aw_log(AW_LOG_WARN, __VA_ARGS__)
#define aw_info(...)  aw_log(AW_LOG_INFO, __VA_ARGS__)
#define aw_debug(...) aw_log(AW_LOG_DEBUG, __VA_ARGS__)

#endif
