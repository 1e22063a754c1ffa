/* admit.c - see admit.h. A chained hash table of the tenants that have
 * unfinished requests, under one mutex; an entry lives while its tenant
 * has one (the ticket is the entry). */
#include "daemon/admit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 256

typedef struct entry {
  struct entry *next;
  uint32_t requests;
  uint64_t bytes;
  char tenant[]; /* NUL-terminated */
} entry;

struct gl_admit {
  pthread_mutex_t mu;
  uint32_t max_requests;
  uint64_t max_bytes;
  uint64_t requests, bytes;          /* all tenants */
  uint64_t released, released_bytes; /* since gl_admit_take_released */
  entry *buckets[NBUCKETS];
};

static unsigned bucket_of(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h % NBUCKETS;
}

gl_admit *gl_admit_new(uint32_t max_requests, uint64_t max_bytes) {
  gl_admit *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  pthread_mutex_init(&a->mu, NULL);
  a->max_requests = max_requests;
  a->max_bytes = max_bytes;
  return a;
}

void gl_admit_free(gl_admit *a) {
  if (!a) return;
  for (unsigned i = 0; i < NBUCKETS; i++) {
    for (entry *e = a->buckets[i]; e;) {
      entry *n = e->next;
      free(e);
      e = n;
    }
  }
  pthread_mutex_destroy(&a->mu);
  free(a);
}

void gl_admit_set_limits(gl_admit *a, uint32_t max_requests, uint64_t max_bytes) {
  pthread_mutex_lock(&a->mu);
  a->max_requests = max_requests;
  a->max_bytes = max_bytes;
  pthread_mutex_unlock(&a->mu);
}

bool gl_admit_begin(gl_admit *a, const char *tenant, uint64_t whole, void **ticket,
                    gl_admit_refusal *why) {
  memset(why, 0, sizeof *why);
  unsigned b = bucket_of(tenant);
  pthread_mutex_lock(&a->mu);
  entry *e = a->buckets[b];
  while (e && strcmp(e->tenant, tenant) != 0) e = e->next;
  if (e && (e->requests >= a->max_requests || e->bytes + whole > a->max_bytes)) {
    *why = (gl_admit_refusal){.requests = e->requests,
                              .bytes = e->bytes,
                              .max_requests = a->max_requests,
                              .max_bytes = a->max_bytes,
                              .by_bytes = e->requests < a->max_requests};
    pthread_mutex_unlock(&a->mu);
    return false;
  }
  if (!e) {
    size_t n = strlen(tenant) + 1;
    e = malloc(sizeof *e + n);
    if (!e) {
      pthread_mutex_unlock(&a->mu);
      return false;
    }
    memcpy(e->tenant, tenant, n);
    e->requests = 0;
    e->bytes = 0;
    e->next = a->buckets[b];
    a->buckets[b] = e;
  }
  e->requests++;
  e->bytes += whole;
  a->requests++;
  a->bytes += whole;
  pthread_mutex_unlock(&a->mu);
  *ticket = e;
  return true;
}

void gl_admit_end(gl_admit *a, void *ticket, uint64_t whole) {
  entry *e = ticket;
  if (!a || !e) return;
  pthread_mutex_lock(&a->mu);
  e->requests--;
  e->bytes -= whole;
  a->requests--;
  a->bytes -= whole;
  a->released++;
  a->released_bytes += whole;
  if (e->requests == 0) {
    for (entry **pp = &a->buckets[bucket_of(e->tenant)]; *pp; pp = &(*pp)->next) {
      if (*pp == e) {
        *pp = e->next;
        free(e);
        break;
      }
    }
  }
  pthread_mutex_unlock(&a->mu);
}

void gl_admit_totals(gl_admit *a, uint64_t *requests, uint64_t *bytes) {
  pthread_mutex_lock(&a->mu);
  *requests = a->requests;
  *bytes = a->bytes;
  pthread_mutex_unlock(&a->mu);
}

void gl_admit_take_released(gl_admit *a, uint64_t *requests, uint64_t *bytes) {
  pthread_mutex_lock(&a->mu);
  *requests = a->released;
  *bytes = a->released_bytes;
  a->released = a->released_bytes = 0;
  pthread_mutex_unlock(&a->mu);
}
