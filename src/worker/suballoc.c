/*
 * suballoc.c - the lease region's allocator: see suballoc.h.
 *
 * Two treaps (binary search trees keyed by offset, heap-ordered by random
 * priorities, so expected depth O(log n)): the free ranges, always maximal
 * (neighbours merged), each node also holding the largest range in its
 * subtree so first fit descends straight to the lowest range that fits;
 * and the live allocations, to check and size a release.
 *
 * Nodes move between the trees instead of being reallocated: a range used
 * up whole becomes the live node, a released live node becomes the (merged)
 * free node. So release never allocates and cannot fail halfway, and alloc
 * allocates (one node) before it changes anything.
 */
#include "worker/suballoc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct node {
  uint64_t off;
  uint64_t len;
  uint64_t max; /* the largest len in this subtree */
  uint32_t prio;
  struct node *l, *r;
} node;

struct gl_suballoc {
  pthread_mutex_t mu;
  uint64_t capacity; /* usable bytes: a multiple of align */
  uint64_t align;
  uint64_t used;
  node *free_t; /* free ranges */
  node *live_t; /* live allocations */
  uint64_t rng; /* xorshift state for priorities */
};

/* ---- treap -------------------------------------------------------------- */

static uint64_t max_of(const node *n) { return n ? n->max : 0; }

static void fix(node *n) {
  uint64_t m = n->len;
  if (max_of(n->l) > m) m = max_of(n->l);
  if (max_of(n->r) > m) m = max_of(n->r);
  n->max = m;
}

/* Joins a and b, every key of a below every key of b. */
static node *merge(node *a, node *b) {
  if (!a) return b;
  if (!b) return a;
  if (a->prio > b->prio) {
    a->r = merge(a->r, b);
    fix(a);
    return a;
  }
  b->l = merge(a, b->l);
  fix(b);
  return b;
}

/* Splits t into the keys below off (*lo) and the others (*hi). */
static void split(node *t, uint64_t off, node **lo, node **hi) {
  if (!t) {
    *lo = *hi = NULL;
    return;
  }
  if (t->off < off) {
    split(t->r, off, &t->r, hi);
    *lo = t;
  } else {
    split(t->l, off, lo, &t->l);
    *hi = t;
  }
  fix(t);
}

/* Inserts n (off and len set; its key not in t). Returns the new root. */
static node *insert(gl_suballoc *a, node *t, node *n) {
  a->rng ^= a->rng >> 12;
  a->rng ^= a->rng << 25;
  a->rng ^= a->rng >> 27;
  n->prio = (uint32_t)((a->rng * 2685821657736338717ull) >> 32);
  n->l = n->r = NULL;
  fix(n);
  node *lo, *hi;
  split(t, n->off, &lo, &hi);
  return merge(merge(lo, n), hi);
}

/* Unlinks the node with key off (which must be in t). Returns the new root. */
static node *unlink_key(node *t, uint64_t off) {
  if (t->off == off) return merge(t->l, t->r);
  if (off < t->off)
    t->l = unlink_key(t->l, off);
  else
    t->r = unlink_key(t->r, off);
  fix(t);
  return t;
}

static node *find(node *t, uint64_t off) {
  while (t && t->off != off) t = off < t->off ? t->l : t->r;
  return t;
}

/* The node with the largest key below off, or NULL. */
static node *below(node *t, uint64_t off) {
  node *best = NULL;
  while (t) {
    if (t->off < off) {
      best = t;
      t = t->r;
    } else {
      t = t->l;
    }
  }
  return best;
}

/* The lowest-keyed node with len >= size, or NULL. */
static node *first_fit(node *t, uint64_t size) {
  if (max_of(t) < size) return NULL;
  for (;;) {
    if (max_of(t->l) >= size)
      t = t->l;
    else if (t->len >= size)
      return t;
    else
      t = t->r; /* max says it is there */
  }
}

static void free_tree(node *t) {
  while (t) {
    free_tree(t->l);
    node *r = t->r;
    free(t);
    t = r;
  }
}

/* ---- interface ---------------------------------------------------------- */

gl_suballoc *gl_suballoc_new(uint64_t capacity_bytes, uint64_t align) {
  if (align == 0 || (align & (align - 1)) != 0) return NULL;
  gl_suballoc *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->align = align;
  a->capacity = capacity_bytes & ~(align - 1);
  a->rng = 0x9E3779B97F4A7C15ull;
  if (pthread_mutex_init(&a->mu, NULL) != 0) {
    free(a);
    return NULL;
  }
  if (a->capacity > 0) {
    node *n = malloc(sizeof *n);
    if (!n) {
      pthread_mutex_destroy(&a->mu);
      free(a);
      return NULL;
    }
    n->off = 0;
    n->len = a->capacity;
    a->free_t = insert(a, NULL, n);
  }
  return a;
}

void gl_suballoc_free(gl_suballoc *a) {
  if (!a) return;
  pthread_mutex_destroy(&a->mu);
  free_tree(a->free_t);
  free_tree(a->live_t);
  free(a);
}

gpulease_status gl_suballoc_alloc(gl_suballoc *a, uint64_t size_bytes, uint64_t *offset, char *err,
                                  size_t errlen) {
  if (size_bytes == 0) {
    snprintf(err, errlen, "lease VRAM: cannot allocate 0 bytes");
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (size_bytes > UINT64_MAX - (a->align - 1)) {
    snprintf(err, errlen, "lease VRAM: %" PRIu64 " bytes requested: the size overflows",
             size_bytes);
    return GPULEASE_INVALID_ARGUMENT;
  }
  uint64_t size = (size_bytes + a->align - 1) & ~(a->align - 1);

  pthread_mutex_lock(&a->mu);
  node *f = first_fit(a->free_t, size);
  if (!f) {
    uint64_t free_bytes = a->capacity - a->used, largest = max_of(a->free_t);
    pthread_mutex_unlock(&a->mu);
    snprintf(err, errlen,
             "lease VRAM: %" PRIu64 " bytes requested, %" PRIu64
             " bytes free, largest free range %" PRIu64 " bytes",
             size, free_bytes, largest);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  uint64_t off = f->off;
  node *live;
  if (f->len == size) {
    a->free_t = unlink_key(a->free_t, off); /* used up: becomes the live node */
    live = f;
  } else {
    live = malloc(sizeof *live);
    if (!live) {
      pthread_mutex_unlock(&a->mu);
      snprintf(err, errlen, "lease VRAM: out of host memory for the allocation table");
      return GPULEASE_INTERNAL;
    }
    /* The rest of the range keeps its place in key order but its key and
     * the subtree maxima change: take it out and put it back. */
    a->free_t = unlink_key(a->free_t, off);
    f->off += size;
    f->len -= size;
    a->free_t = insert(a, a->free_t, f);
  }
  live->off = off;
  live->len = size;
  a->live_t = insert(a, a->live_t, live);
  a->used += size;
  pthread_mutex_unlock(&a->mu);
  *offset = off;
  return GPULEASE_OK;
}

bool gl_suballoc_release(gl_suballoc *a, uint64_t offset) {
  pthread_mutex_lock(&a->mu);
  node *x = find(a->live_t, offset);
  if (!x) {
    pthread_mutex_unlock(&a->mu);
    return false;
  }
  a->live_t = unlink_key(a->live_t, offset);
  a->used -= x->len;

  /* x becomes the free range, swallowing adjacent free neighbours (its
   * end, at most capacity, cannot overflow). */
  node *left = below(a->free_t, offset);
  if (left && left->off + left->len == offset) {
    a->free_t = unlink_key(a->free_t, left->off);
    x->off = left->off;
    x->len += left->len;
    free(left);
  }
  node *right = find(a->free_t, x->off + x->len);
  if (right) {
    a->free_t = unlink_key(a->free_t, right->off);
    x->len += right->len;
    free(right);
  }
  a->free_t = insert(a, a->free_t, x);
  pthread_mutex_unlock(&a->mu);
  return true;
}

uint64_t gl_suballoc_used(gl_suballoc *a) {
  pthread_mutex_lock(&a->mu);
  uint64_t u = a->used;
  pthread_mutex_unlock(&a->mu);
  return u;
}
