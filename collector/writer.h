/* Group commit: writer threads, each with its own database connection, take every document
 * queued since their last transaction (up to a batch limit) and store them in ONE transaction,
 * then report each document's outcome. Uploads are answered only from that report, so a 2xx
 * always means committed, while the cost of a commit (an fsync with SQLite synchronous=FULL)
 * is shared by all documents that arrived meanwhile. */
#ifndef AW_COLLECTOR_WRITER_H
#define AW_COLLECTOR_WRITER_H

#include "store.h"

/* One queued document. The submitter owns it; the writer uses it from aw_writer_submit() until
 * it calls `done` and never touches it afterwards. */
struct aw_write {
	struct store_put put; /* in; outcome and seq are set when rc is 0 */
	int rc;               /* 0: committed; negative errno: nothing stored */
	void (*done)(struct aw_write *w, void *cls); /* on a writer thread */
	void *cls;
	struct aw_write *next; /* queue link, the writer's */
};

struct aw_writer;

/* Starts `threads` writers on `store` (each connects now). The queue holds documents of at
 * most `queue_max_cells` cells in all (each counts as its cells plus one): a bound on the
 * memory of parsed documents waiting. Returns 0 with *out, or a negative errno with *err. */
int aw_writer_start(struct store *store, unsigned threads, unsigned batch_max,
                    uint64_t queue_max_cells, struct aw_writer **out, char **err);

/* Queues a document (one larger than the whole queue is still taken into an empty queue).
 * Returns 0 (done will be called), -EBUSY when the queue is full or
 * -ESHUTDOWN when stopping (done will not be called). */
int aw_writer_submit(struct aw_writer *w, struct aw_write *item);

/* Documents waiting right now. */
unsigned aw_writer_depth(struct aw_writer *w);

/* Stores what is queued, stops the threads and closes their connections; sets *w to NULL. */
void aw_writer_stop(struct aw_writer **w);

#endif
