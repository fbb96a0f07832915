/* What reports/ modules share and nobody else uses: the gnuplot script helpers (the only way
 * text and numbers reach a gnuplot script) and the drawing of one prepared chart. */
#ifndef AW_REPORTS_INTERNAL_H
#define AW_REPORTS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "aw/buf.h"
#include "reports.h"

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes there are not one
 * (overlong forms, surrogates and code points above U+10FFFF included). *p must not be 0. */
size_t aw_utf8_seq_len(const unsigned char *p);

/* Longest text put into a chart (bytes); longer strings are cut at a UTF-8 boundary and end
 * in "...". */
#define AW_GP_TEXT_MAX 160

/* Appends `s` as a double-quoted gnuplot string literal in which every byte other than
 * [A-Za-z ] is an octal escape (\ooo; digits too, since gnuplot reads "\0551" as one escape):
 * no quote, backquote, '@', '$', newline or backslash ever appears in the script, so no value
 * can end the string or start a command, a macro or a shell substitution. Control characters
 * become spaces and invalid UTF-8 '?'; at most `max` bytes of `s` are shown (0 or more than
 * AW_GP_TEXT_MAX: AW_GP_TEXT_MAX). NULL is "". Used with `noenhanced` terminals only, so
 * {}^_@&~ in the value are shown as themselves. Returns 0 or the buffer's error. */
int aw_gp_put_text(struct aw_buf *b, const char *s, size_t max);

/* Appends a file name the same way, byte for byte and never cut. Returns 0, -EINVAL when it
 * holds a control character, or the buffer's error. */
int aw_gp_put_path(struct aw_buf *b, const char *path);

/* Appends a finite number as %.17g (exact round trip); a non-finite one as '?' (the data
 * missing marker the scripts declare). Returns 0 or the buffer's error. */
int aw_gp_put_number(struct aw_buf *b, double v);

/* One chart to draw: `script` (settings, data blocks and plot commands, built with the two
 * helpers above) is run once for each output, after the terminal and a temp output file are
 * set. gnuplot writes the temps into its own private (0700) directory, never into `dir`;
 * once it printed that it finished without error, each is copied to <dir>/<svg_rel> or
 * <dir>/<png_rel> (either may be NULL) by aw_write_beneath(): no symbolic link under `dir`
 * is followed, and a reader sees the old file or the new one, never a part. */
struct aw_gp_job {
	const char *script;
	size_t script_len;
	unsigned width, height;
	const char *dir;
	const char *svg_rel;
	const char *png_rel;
};

/* Draws a job. Restarts a dead gnuplot first, and retries once when the process it found
 * running died before answering. Returns 0 or -EIO (gnuplot reported an error; *err holds its
 * message), -ETIMEDOUT (it was killed), -EPIPE (it died), or a file error; temp files are
 * removed on error. */
int aw_gnuplot_draw(struct aw_gnuplot *gp, const struct aw_gp_job *job, char **err);

#endif
