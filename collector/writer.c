/* Writer threads and their queue; see writer.h. A batch that fails as a whole because of a
 * concurrent transaction is retried; one that fails otherwise is stored document by document,
 * so one bad document cannot fail the others. */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "aw/log.h"
#include "aw/util.h"

#define RETRIES 8

struct writer_thread {
	struct aw_writer *w;
	pthread_t tid;
	struct store_conn *conn;
	struct store_put *puts; /* batch_max slots */
	struct aw_write **items;
	bool started;
};

struct aw_writer {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct aw_write *head, *tail;
	unsigned depth, batch_max;
	uint64_t queued_cells, queue_max_cells;
	bool stopping;
	unsigned n_threads;
	struct writer_thread *threads;
};

/* Stores items[0..n) in one transaction, retrying conflicts. Returns the store's verdict. */
static int store_batch(struct writer_thread *t, struct aw_write **items, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		t->puts[i] = items[i]->put;
	for (int attempt = 0; attempt < RETRIES; attempt++) {
		unsigned char r = 0;

		rc = store_put_runs(t->conn, t->puts, n);
		if (rc != -EAGAIN)
			break;
		/* A concurrent transaction (another writer or collector) got in the way:
		 * back off a little, with jitter, and try again. */
		aw_random_bytes(&r, 1);
		aw_sleep_ns((uint64_t)(1 + attempt) * (500000 + r * 4000u), NULL);
	}
	if (!rc) {
		store_note_write_ok();
		for (size_t i = 0; i < n; i++)
			items[i]->put = t->puts[i];
	}
	return rc;
}

static void process(struct writer_thread *t, struct aw_write **items, size_t n)
{
	int rc = store_batch(t, items, n);

	if (rc && n > 1 && rc != -EBUSY) {
		aw_warn("a batch of %zu documents failed; storing them one by one", n);
		for (size_t i = 0; i < n; i++)
			items[i]->rc = store_batch(t, &items[i], 1);
	} else {
		for (size_t i = 0; i < n; i++)
			items[i]->rc = rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct aw_write *item = items[i];

		items[i] = NULL;
		item->done(item, item->cls); /* the item may be freed from here on */
	}
}

static void *writer_main(void *arg)
{
	struct writer_thread *t = arg;
	struct aw_writer *w = t->w;

	for (;;) {
		size_t n = 0;

		pthread_mutex_lock(&w->lock);
		while (!w->head && !w->stopping)
			pthread_cond_wait(&w->work, &w->lock);
		if (!w->head) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		while (w->head && n < w->batch_max) {
			struct aw_write *item = w->head;

			w->head = item->next;
			item->next = NULL;
			t->items[n++] = item;
			w->depth--;
			w->queued_cells -= item->put.result->n_cells + 1;
		}
		if (!w->head)
			w->tail = NULL;
		else
			pthread_cond_signal(&w->work); /* more for another writer */
		pthread_mutex_unlock(&w->lock);
		process(t, t->items, n);
	}
	return NULL;
}

int aw_writer_start(struct store *store, unsigned threads, unsigned batch_max,
                    uint64_t queue_max_cells, struct aw_writer **out, char **err)
{
	struct aw_writer *w = calloc(1, sizeof(*w));
	int rc = 0;

	*out = NULL;
	if (!w)
		return aw_errorf(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	w->batch_max = batch_max ? batch_max : 1;
	w->queue_max_cells = queue_max_cells;
	w->threads = calloc(threads ? threads : 1, sizeof(*w->threads));
	if (!w->threads) {
		rc = aw_errorf(err, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < (threads ? threads : 1); i++) {
		struct writer_thread *t = &w->threads[i];

		w->n_threads++;
		t->w = w;
		t->puts = calloc(w->batch_max, sizeof(*t->puts));
		t->items = calloc(w->batch_max, sizeof(*t->items));
		if (!t->puts || !t->items) {
			rc = aw_errorf(err, -ENOMEM, "out of memory");
			goto fail;
		}
		rc = store_connect(store, &t->conn, err);
		if (rc)
			goto fail;
		rc = -pthread_create(&t->tid, NULL, writer_main, t);
		if (rc) {
			aw_errorf(err, rc, "cannot start a writer thread: %s", strerror(-rc));
			goto fail;
		}
		t->started = true;
	}
	*out = w;
	return 0;
fail:
	aw_writer_stop(&w);
	return rc;
}

int aw_writer_submit(struct aw_writer *w, struct aw_write *item)
{
	uint64_t weight = item->put.result->n_cells + 1;
	int rc = 0;

	item->next = NULL;
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		rc = -ESHUTDOWN;
	} else if (w->depth && w->queued_cells + weight > w->queue_max_cells) {
		rc = -EBUSY;
	} else {
		w->queued_cells += weight;
		if (w->tail)
			w->tail->next = item;
		else
			w->head = item;
		w->tail = item;
		w->depth++;
		pthread_cond_signal(&w->work);
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

unsigned aw_writer_depth(struct aw_writer *w)
{
	unsigned n;

	pthread_mutex_lock(&w->lock);
	n = w->depth;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void aw_writer_stop(struct aw_writer **wp)
{
	struct aw_writer *w = *wp;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->n_threads; i++) {
		struct writer_thread *t = &w->threads[i];

		if (t->started)
			pthread_join(t->tid, NULL);
		store_disconnect(&t->conn);
		free(t->puts);
		free(t->items);
	}
	free(w->threads);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->lock);
	free(w);
	*wp = NULL;
}
