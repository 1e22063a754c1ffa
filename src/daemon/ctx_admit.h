/*
 * ctx_admit.h - the isolated contexts a GPU holds at once, and the queue
 * of the lease requests that wait for one (issue 34, docs/protocol.md
 * "Isolated contexts").
 *
 * A CUDA driver holds only so many contexts on one GPU: an H200 on driver
 * 580 refuses cuDevicePrimaryCtxRetain with CUDA_ERROR_OUT_OF_MEMORY after
 * about 100, with most of its VRAM free. Each GPU therefore has a limit
 * (gpuleased --max-isolated-contexts, lowered when the driver refuses a
 * context below it: gl_ctx_admit_learn). A request that finds no room
 * waits here, in one FIFO per tenant served round robin, until room comes
 * back (gl_ctx_admit_poke) or its deadline passes; the queue is bounded
 * in all and per tenant.
 *
 * This module keeps the limits, the waiters and their timers; what "room"
 * means (warm workers, spares, the count of contexts) is the caller's
 * (room_fn), as is what serving or refusing a waiter does (done_fn). All
 * calls on the loop's thread.
 */
#ifndef GL_DAEMON_CTX_ADMIT_H
#define GL_DAEMON_CTX_ADMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ev_loop;
typedef struct gl_ctx_admit gl_ctx_admit;

/* The defaults of the flags. 16 contexts: an H200 on driver 580 holds
 * about 100, but every context more slows the driver's work in all of
 * them (cuMemAlloc, cuMemFree, NVML's queries take milliseconds with 36
 * contexts busy). 100 isolated clients cycling alloc, GPU_SUBMIT and free
 * (issue 34): 681 cycles/s with a limit of 64, 1,688 with 24, 2,083 with
 * 16, 2,208 with 12. The limit is learned lower where a driver holds
 * fewer. */
#define GL_CTX_ADMIT_DEFAULT_LIMIT 16u
#define GL_CTX_ADMIT_MAX_LIMIT 4096u
#define GL_CTX_ADMIT_DEFAULT_QUEUE 256u
#define GL_CTX_ADMIT_MAX_QUEUE 65536u
#define GL_CTX_ADMIT_DEFAULT_QUEUE_MS 1000u
#define GL_CTX_ADMIT_MAX_QUEUE_MS 600000u

/* A gpu value meaning "any GPU" (the request's GPULEASE_ANY_GPU). */
#define GL_CTX_ADMIT_ANY UINT32_MAX

/* Whether a lease may get a context on gpu now (GL_CTX_ADMIT_ANY: on some
 * GPU); fresh: it needs a never-used one (its own context limits). */
typedef bool (*gl_ctx_admit_room_fn)(void *user, uint32_t gpu, bool fresh);

/* A waiter's end, exactly once: admitted (room came: run the request now)
 * or not (its deadline passed, or the queue is freed): the caller answers
 * it. ctx is the caller's, given to gl_ctx_admit_wait. */
typedef void (*gl_ctx_admit_done_fn)(void *ctx, bool admitted);

/* Runs after each round of serving (gl_ctx_admit_poke): the caller may
 * use room nobody waits for (start warm workers). */
typedef void (*gl_ctx_admit_after_fn)(void *user);

/* A queue for gpu_count GPUs (1..GPULEASE_MAX_GPUS), each limited to
 * limit contexts (1..GL_CTX_ADMIT_MAX_LIMIT), holding at most queue_max
 * waiters in all (0: none; a tenant at most half of them, at least one),
 * each for queue_ms milliseconds at most. room and after (after may be
 * NULL) get user. loop: the daemon's (borrowed). NULL when out of memory. */
gl_ctx_admit *gl_ctx_admit_new(struct ev_loop *loop, uint32_t gpu_count, unsigned limit,
                               unsigned queue_max, unsigned queue_ms, gl_ctx_admit_room_fn room,
                               gl_ctx_admit_after_fn after, void *user);

/* Answers every waiter (done(ctx, false), oldest tenant first) and frees a.
 * NULL ignored. */
void gl_ctx_admit_free(gl_ctx_admit *a);

/* The configured limit and queue bounds change (a reload): a GPU's limit
 * becomes limit unless it was learned lower; waiters stay (a smaller
 * queue_max refuses only newcomers). */
void gl_ctx_admit_configure(gl_ctx_admit *a, unsigned limit, unsigned queue_max,
                            unsigned queue_ms);

/* GPU gpu's limit now (0 for a gpu out of range). */
unsigned gl_ctx_admit_limit(const gl_ctx_admit *a, uint32_t gpu);

/* Whether GPU gpu's limit was learned from a refusal (below the flag). */
bool gl_ctx_admit_learned(const gl_ctx_admit *a, uint32_t gpu);

/* The driver refused a context on gpu while held other contexts were
 * there: the limit becomes held (at least 1) when that is lower, logged as
 * a WARN with the figures. true when it was lowered. */
bool gl_ctx_admit_learn(gl_ctx_admit *a, uint32_t gpu, unsigned held);

/* Queues a request of tenant (NUL-terminated, "" anonymous; copied) for a
 * context on gpu (or GL_CTX_ADMIT_ANY); done(ctx, ...) ends it. 0, or -1
 * (done not called) when the queue is full, the tenant holds its share of
 * it, the deadline is 0, or out of memory: *why (may be NULL) then says
 * which in words (static text). */
int gl_ctx_admit_wait(gl_ctx_admit *a, const char *tenant, uint32_t gpu, bool fresh,
                      gl_ctx_admit_done_fn done, void *ctx, const char **why);

/* Waiters for gpu, those for any GPU included (gpu GL_CTX_ADMIT_ANY: all
 * waiters). */
unsigned gl_ctx_admit_waiting(const gl_ctx_admit *a, uint32_t gpu);

/* The queue's bounds: waiters in all, milliseconds each. */
unsigned gl_ctx_admit_queue_max(const gl_ctx_admit *a);
unsigned gl_ctx_admit_queue_ms(const gl_ctx_admit *a);

/* Waiters served and refused (their deadline, a full queue) since start. */
void gl_ctx_admit_totals(const gl_ctx_admit *a, uint64_t *served, uint64_t *timed_out,
                         uint64_t *refused_full);

/* Counts one request refused at once (no queue: full, or deadline 0), for
 * the totals. */
void gl_ctx_admit_count_refusal(gl_ctx_admit *a);

/* Room may have come back: on the loop's next turn, the waiters whose
 * room_fn says yes are served round robin across tenants (a tenant's own
 * in order), then after runs. Safe from any callback on the loop. */
void gl_ctx_admit_poke(gl_ctx_admit *a);

#endif /* GL_DAEMON_CTX_ADMIT_H */
