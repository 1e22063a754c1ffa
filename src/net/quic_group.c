/*
 * quic_group.c - see quic_group.h. The servers use the group's fields
 * directly (quic_server_int.h); this file makes, counts and frees it.
 */
#include "net/quic_group.h"

#include <stdlib.h>

#include "net/quic_server_int.h"

gl_qgroup *gl_qgroup_new(void) {
  gl_qgroup *g = calloc(1, sizeof *g);
  uint64_t key;
  if (!g) return NULL;
  if (gl_q_random(&key, sizeof key) != 0 ||
      gl_q_random(g->retry_secret, sizeof g->retry_secret) != 0 ||
      gl_q_addrtab_init(&g->addrs, key ^ 0x9e3779b97f4a7c15ull) != 0) {
    free(g);
    return NULL;
  }
  if (gl_q_addrtab_init(&g->hs_addrs, key ^ 0x6a09e667f3bcc909ull) != 0) {
    gl_q_addrtab_free(&g->addrs);
    free(g);
    return NULL;
  }
  pthread_mutex_init(&g->mu, NULL);
  g->refs = 1;
  return g;
}

gl_qgroup *gl_qgroup_ref(gl_qgroup *g) {
  __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
  return g;
}

void gl_qgroup_unref(gl_qgroup *g) {
  if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  gl_q_addrtab_free(&g->addrs);
  gl_q_addrtab_free(&g->hs_addrs);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

size_t gl_qgroup_connection_count(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->nactive, __ATOMIC_RELAXED) : 0;
}

size_t gl_qgroup_handshake_count(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->nhandshaking, __ATOMIC_RELAXED) : 0;
}

size_t gl_qgroup_retries_sent(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->retries_sent, __ATOMIC_RELAXED) : 0;
}

size_t gl_qgroup_tokens_refused(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->tokens_refused, __ATOMIC_RELAXED) : 0;
}

size_t gl_qgroup_initials_dropped(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->initials_dropped, __ATOMIC_RELAXED) : 0;
}

size_t gl_qgroup_held_count(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->nconns, __ATOMIC_RELAXED) : 0;
}

uint16_t gl_qgroup_port(const gl_qgroup *g) {
  return g ? __atomic_load_n(&g->port, __ATOMIC_RELAXED) : 0;
}
