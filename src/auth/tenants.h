/*
 * tenants.h - the tenants file (`gpuleased --tenants FILE`): who the
 * tenants are, their bearer tokens and their quotas.
 *
 * The file is INI, read with libinih:
 *
 *   # comments start a line with '#' or ';'; ' ;' also ends a value
 *   [tenant alice]
 *   token = 3b1f...        ; 32..128 printable ASCII bytes, no spaces; may repeat
 *   vram = 16GiB           ; bytes: 123, 4K/M/G/T or KiB.. (1024-based), KB/MB/GB/TB (1000-based)
 *   leases = 8             ; live leases at once
 *   sessions = 32          ; live sessions at once
 *   max_ttl = 3600         ; longest TTL of one lease: seconds, or 90s, 15m, 2h
 *   gpu_seconds_per_hour = 7200
 *   admin = false          ; true/false, yes/no, on/off, 1/0
 *
 *   [defaults]             ; the quotas of unlisted identities (the anonymous
 *   vram = 8GiB            ; tenant), and of a listed tenant for each key it
 *                          ; does not set (under --auth mtls only listed
 *                          ; tenants are served: daemon/client_auth.h)
 *
 *   [deny]                 ; client certificates refused under --auth mtls
 *   fingerprint = 5e:0f... ; SHA-256 of the certificate (DER): 64 hex digits
 *   serial = 1f3a...       ; serial number, 1..40 hex digits; may repeat
 *
 * In [deny] both keys may repeat, any case, with or without ':' between
 * bytes; a serial's leading zeros do not count. [deny] may appear more
 * than once.
 *
 * Every quota key is optional and also takes the value `unlimited`. A quota
 * that neither the tenant's section nor [defaults] sets is unlimited:
 * UINT64_MAX (vram, gpu_seconds_per_hour) or UINT32_MAX (leases, sessions,
 * max_ttl) in gl_quota_limits. [defaults] takes only quota keys (no token,
 * no admin). Keys are lower case and case-sensitive.
 *
 * A tenant's name is the section name after "tenant ": 1..255 bytes of
 * printable ASCII (0x20..0x7e), not starting or ending with a space and
 * without ']' - e.g. an mTLS subject or a SPIFFE ID
 * (`spiffe://example.org/ns/ml/sa/alice`). Spaces around it in the
 * section header are ignored. Leading whitespace of every line is ignored
 * and there are no continuation lines; a key line is at most 190 bytes
 * after its leading whitespace.
 *
 * Tokens are never stored: only their SHA-256 digests, and a token is
 * found by comparing its digest with every stored one in constant time.
 * The parsed set is immutable, so concurrent lookups need no lock.
 */
#ifndef GL_AUTH_TENANTS_H
#define GL_AUTH_TENANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest tenant name, in bytes (without the NUL). */
#define GL_TENANT_NAME_MAX 255
/* Bearer tokens: length in bytes. */
#define GL_TENANT_TOKEN_MIN 32
#define GL_TENANT_TOKEN_MAX 128
/* The most [tenant] sections a file may have. */
#define GL_TENANTS_MAX 65536
/* The largest tenants file gl_tenants_load() reads, in bytes. */
#define GL_TENANTS_FILE_MAX (16u << 20)

/* A tenant's quotas. UINT64_MAX / UINT32_MAX: unlimited. */
typedef struct gl_quota_limits {
  uint64_t vram_bytes;           /* VRAM of its live leases together, bytes */
  uint32_t leases;               /* live leases at once */
  uint32_t sessions;             /* live sessions at once */
  uint32_t max_ttl_s;            /* longest TTL of one lease, seconds */
  uint64_t gpu_seconds_per_hour; /* lease-seconds reserved per sliding hour */
} gl_quota_limits;

typedef struct gl_tenant {
  char name[GL_TENANT_NAME_MAX + 1]; /* NUL-terminated */
  gl_quota_limits limits;            /* [defaults] already applied */
  bool admin;  /* may revoke any tenant's lease and unfence GPUs */
  bool listed; /* has a [tenant] section; false: [defaults] of an unlisted name */
} gl_tenant;

typedef struct gl_tenants gl_tenants;

/* All unlimited. */
void gl_quota_limits_unlimited(gl_quota_limits *out);

/* Reads and parses the tenants file at path (at most GL_TENANTS_FILE_MAX
 * bytes, no NUL bytes). Returns the set (free with gl_tenants_free), or NULL
 * with a NUL-terminated message in err (errlen bytes; err may be NULL when
 * errlen is 0): "PATH: strerror" when it cannot be read, "PATH:LINE: what
 * is wrong" for the first wrong line (unknown key or section, bad value,
 * duplicate tenant, key or token, token too short...), or "out of memory".
 * The buffer the file was read into is wiped before it is freed. */
gl_tenants *gl_tenants_load(const char *path, char *err, size_t errlen);

/* Parses the NUL-terminated text of a tenants file; name_for_errors (may be
 * NULL: "tenants") starts every error message as PATH does above. Same
 * results as gl_tenants_load(). The caller owns text (and wipes it if it
 * holds secrets). */
gl_tenants *gl_tenants_parse(const char *text, const char *name_for_errors, char *err,
                             size_t errlen);

/* Frees the set (NULL is fine). Pointers it returned become invalid. */
void gl_tenants_free(gl_tenants *t);

/* The tenant that bearer token `token` (len bytes, need not be
 * NUL-terminated; NULL with len 0 is fine) names, or NULL. Its SHA-256
 * digest is compared with every stored digest (sodium_memcmp, no early
 * exit), so the time taken depends on len and the number of tokens, never
 * on the bytes of the token or of the stored ones. The pointer lives as long
 * as the set. */
const gl_tenant *gl_tenants_by_token(const gl_tenants *t, const char *token, size_t len);

/* The record of identity `name` (a token's tenant or an mTLS subject): its
 * [tenant] section (pointer into the set), or else a copy into *scratch of
 * the [defaults] limits with name set, admin and listed false. NULL when
 * name is NULL, empty, longer than GL_TENANT_NAME_MAX or not printable
 * ASCII (such a name can never be listed; refuse it), and for an unlisted
 * name when scratch is NULL. The result lives as long as the set or
 * *scratch, whichever it points into. */
const gl_tenant *gl_tenants_lookup(const gl_tenants *t, const char *name, gl_tenant *scratch);

/* Whether `name` is a valid tenant name (see the top of this file). */
bool gl_tenant_name_valid(const char *name);

/* The number of [tenant] sections. */
size_t gl_tenants_count(const gl_tenants *t);

/* The i-th [tenant] section in file order, i < gl_tenants_count(); NULL
 * otherwise. */
const gl_tenant *gl_tenants_at(const gl_tenants *t, size_t i);

/* The [defaults] limits (all unlimited when the file has none). */
const gl_quota_limits *gl_tenants_defaults(const gl_tenants *t);

/* The two lists of [deny]. */
typedef enum gl_deny_kind {
  GL_DENY_FINGERPRINT = 0, /* 64 lower-case hex digits */
  GL_DENY_SERIAL = 1,      /* lower-case hex digits, no leading zeros ("0" for 0) */
} gl_deny_kind;

/* The number of [deny] entries of kind k (0 for NULL t). */
size_t gl_tenants_deny_count(const gl_tenants *t, gl_deny_kind k);

/* The i-th [deny] entry of kind k in file order, normalised as
 * gl_deny_kind says (a pointer into the set, living as long as it); NULL
 * when i is out of range. */
const char *gl_tenants_deny_at(const gl_tenants *t, gl_deny_kind k, size_t i);

#endif /* GL_AUTH_TENANTS_H */
