/*
 * onepathd caches: what tiles of every level keep under one byte budget, least recently
 * used first out. Two of them: the tile blobs (--cache-bytes; an evicted tile is rebuilt
 * on its next read, to the same bytes) and the tiles' rebuild bases
 * (--rebuild-cache-bytes; a tile whose base was evicted is built from scratch, to the
 * same bytes). An entry lives inside its owner (a tile entry) and is guarded by the
 * owner's lock; the cache lock guards only the LRU list and the byte count (lock order:
 * owner -> cache). Eviction walks from the oldest entry and only tries each owner's lock,
 * so it never waits behind a level.
 * Typical: 10^2..10^6 entries of 1..100 KiB.
 */
#include <stdint.h>
#include <stdlib.h>

#include "level.h"

struct opd_cache {
    pthread_mutex_t mu;
    opd_cache_entry *head, *tail; /* newest .. oldest */
    size_t bytes, budget;
    size_t room; /* what --max-memory leaves it (opd_cache_set_room); SIZE_MAX: no bound */
    void (*free_fn)(void *data, int n);
    opd_stats *stats;
    opd_cache_kind kind;
};

/* Entries evicted per pass; the rest go on the next build's pass. */
#define OPD_EVICT_BATCH 64

opd_cache *opd_cache_create(size_t budget, void (*free_fn)(void *data, int n), opd_stats *stats,
                            opd_cache_kind kind)
{
    opd_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->budget = budget;
    c->room = SIZE_MAX;
    c->free_fn = free_fn;
    c->stats = stats;
    c->kind = kind;
    return c;
}

void opd_cache_destroy(opd_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void opd_blobs_free(op_bytes *b, int n)
{
    for (int i = 0; b && i < n; i++)
        op_bytes_free(&b[i]);
    free(b);
}

void opd_blobs_free_data(void *data, int n)
{
    opd_blobs_free(data, n);
}

static void unlink_entry(opd_cache *c, opd_cache_entry *e)
{
    if (!e->in_lru)
        return;
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
    e->in_lru = 0;
}

static void push_entry(opd_cache *c, opd_cache_entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    else
        c->tail = e;
    c->head = e;
    e->in_lru = 1;
}

void opd_cache_put(opd_cache *c, opd_cache_entry *e, void *data, int n, size_t bytes)
{
    e->data = data;
    e->n = n;
    e->bytes = bytes;
    pthread_mutex_lock(&c->mu);
    push_entry(c, e);
    c->bytes += bytes;
    pthread_mutex_unlock(&c->mu);
}

void opd_cache_grow(opd_cache *c, opd_cache_entry *e, void *data, int n, size_t more)
{
    e->data = data;
    e->n = n;
    pthread_mutex_lock(&c->mu);
    e->bytes += more;
    c->bytes += more;
    pthread_mutex_unlock(&c->mu);
}

void opd_cache_drop(opd_cache *c, opd_cache_entry *e)
{
    if (!e->data)
        return;
    pthread_mutex_lock(&c->mu);
    unlink_entry(c, e);
    c->bytes -= e->bytes;
    pthread_mutex_unlock(&c->mu);
    c->free_fn(e->data, e->n);
    e->data = NULL;
    e->n = 0;
    e->bytes = 0;
}

void opd_cache_touch(opd_cache *c, opd_cache_entry *e)
{
    pthread_mutex_lock(&c->mu);
    if (e->in_lru) {
        unlink_entry(c, e);
        push_entry(c, e);
    }
    pthread_mutex_unlock(&c->mu);
}

void opd_cache_evict(opd_cache *c)
{
    typedef struct gone {
        void *data;
        int n;
    } gone;
    gone g[OPD_EVICT_BATCH];
    int ng = 0;
    pthread_mutex_lock(&c->mu);
    opd_cache_entry *e = c->tail;
    size_t limit = c->budget < c->room ? c->budget : c->room;
    while (c->bytes > limit && e && e != c->head && ng < OPD_EVICT_BATCH) {
        opd_cache_entry *prev = e->prev;
        if (pthread_mutex_trylock(e->owner_mu) == 0) {
            unlink_entry(c, e);
            c->bytes -= e->bytes;
            g[ng++] = (gone){e->data, e->n};
            e->data = NULL;
            e->n = 0;
            e->bytes = 0;
            pthread_mutex_unlock(e->owner_mu);
        }
        e = prev;
    }
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < ng; i++)
        c->free_fn(g[i].data, g[i].n);
    if (ng)
        opd_stats_cache(c->stats, c->kind, 0, 0, ng);
}

void opd_cache_set_room(opd_cache *c, size_t room)
{
    pthread_mutex_lock(&c->mu);
    c->room = room;
    pthread_mutex_unlock(&c->mu);
}

size_t opd_cache_budget(const opd_cache *c)
{
    return c->budget;
}

size_t opd_cache_bytes(opd_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t b = c->bytes;
    pthread_mutex_unlock(&c->mu);
    return b;
}
