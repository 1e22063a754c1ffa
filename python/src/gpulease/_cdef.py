"""The C declarations of libgpulease for cffi's ABI mode.

CDEF is include/gpulease/gpulease.h with its comments, its include guards
and the GPULEASE_API attribute taken out (cffi's parser reads no
preprocessor lines but integer ``#define``s, so GPULEASE_ANY_GPU, which is
UINT32_MAX, is ANY_GPU below). The struct layouts must be the C compiler's:
tests/test_cffi_layout.py compiles a program against the header and
compares every size and offset.
"""

ANY_GPU = 0xFFFFFFFF  # GPULEASE_ANY_GPU

CDEF = """
typedef enum gpulease_status {
  GPULEASE_OK = 0,
  GPULEASE_INVALID_ARGUMENT = 1,
  GPULEASE_UNAUTHORIZED = 2,
  GPULEASE_LOAD_FAILED = 3,
  GPULEASE_LAUNCH_FAILED = 4,
  GPULEASE_NOT_FOUND = 5,
  GPULEASE_READ_FAILED = 6,
  GPULEASE_LEASE_EXPIRED = 7,
  GPULEASE_CAPACITY_EXCEEDED = 8,
  GPULEASE_UNSUPPORTED = 9,
  GPULEASE_NO_DEVICE = 10,
  GPULEASE_MALFORMED = 11,
  GPULEASE_TOO_LARGE = 12,
  GPULEASE_BUSY = 13,
  GPULEASE_WRITE_FAILED = 14,
  GPULEASE_INTERNAL = 15,
  GPULEASE_INVALID_HANDLE = 16,
  GPULEASE_MISSING_SEQ = 17,
  GPULEASE_QUOTA_EXCEEDED = 18,
  GPULEASE_DISCONNECTED = 100,
  GPULEASE_TLS_FAILED = 101,
  GPULEASE_PROTOCOL_ERROR = 102,
  GPULEASE_NO_MEMORY = 103,
  GPULEASE_TIMEOUT = 104,
} gpulease_status;
const char *gpulease_status_name(int status);
#define GPULEASE_VERSION_MAJOR 0
#define GPULEASE_VERSION_MINOR 2
#define GPULEASE_VERSION_PATCH 0
const char *gpulease_version(uint32_t *major, uint32_t *minor, uint32_t *patch);
typedef struct gpulease_error {
  gpulease_status status;
  char message[1024];
} gpulease_error;
typedef struct gpulease_client gpulease_client;
#define GPULEASE_CONNECT_OPTIONS_VERSION 4
typedef struct gpulease_connect_options {
  uint32_t struct_version;
  const char *addr;
  const char *ca_file;
  const char *pin_sha256;
  int insecure;
  uint32_t timeout_ms;
  int no_local;
  unsigned stripes;
  uint64_t stripe_min_bytes;
  const char *cert_file;
  const char *key_file;
  const char *bearer_token;
} gpulease_connect_options;
void gpulease_connect_options_default(gpulease_connect_options *opts);
gpulease_status gpulease_client_connect(const gpulease_connect_options *opts,
                                                     gpulease_client **out,
                                                     gpulease_error *err);
void gpulease_client_close(gpulease_client *client);
#define GPULEASE_KOUT_TRUNCATED 1
#define GPULEASE_KOUT_DISCARDED 2
typedef void (*gpulease_kernel_output_fn)(void *user, uint64_t lease_id, const char *text,
                                          size_t len, uint64_t dropped, uint32_t flags);
void gpulease_client_set_kernel_output(gpulease_client *client,
                                       gpulease_kernel_output_fn fn, void *user);
#define GPULEASE_MAX_GPUS 64
#define GPULEASE_GPU_EMULATED 0x1
#define GPULEASE_GPU_MIG 0x2
#define GPULEASE_GPU_FENCED 0x4
#define GPULEASE_GPU_ARCH_SPECIFIC 0x8
typedef struct gpulease_gpu_info {
  uint32_t index;
  char uuid[96];
  char name[96];
  uint32_t cc_major;
  uint32_t cc_minor;
  uint32_t sm_count;
  uint64_t total_vram_bytes;
  uint64_t free_vram_bytes;
  uint64_t leased_vram_bytes;
  uint32_t active_leases;
  uint32_t flags;
  uint64_t context_overhead_bytes;
  uint8_t ptx_isa_driver_major, ptx_isa_driver_minor;
  uint8_t ptx_isa_nvjitlink_major, ptx_isa_nvjitlink_minor;
} gpulease_gpu_info;
#define GPULEASE_TENANT_ADMIN 0x1
#define GPULEASE_TENANT_LISTED 0x2
typedef struct gpulease_tenant_info {
  char name[256];
  uint32_t flags;
  uint64_t quota_vram_bytes;
  uint32_t quota_leases;
  uint32_t quota_sessions;
  uint32_t quota_max_ttl_s;
  uint64_t quota_gpu_seconds_per_hour;
  uint64_t used_vram_bytes;
  uint32_t used_leases;
  uint32_t used_sessions;
  uint64_t used_gpu_seconds;
} gpulease_tenant_info;
#define GPULEASE_INVENTORY_VERSION 1
typedef struct gpulease_inventory {
  uint32_t struct_version;
  char driver_version[64];
  uint32_t max_ttl_s;
  uint32_t gpu_count;
  gpulease_gpu_info gpus[GPULEASE_MAX_GPUS];
  gpulease_tenant_info tenant;
} gpulease_inventory;
void gpulease_inventory_init(gpulease_inventory *inv);
gpulease_status gpulease_inventory_get(gpulease_client *client,
                                                    gpulease_inventory *out,
                                                    gpulease_error *err);
#define GPULEASE_WARM_POOL_INFO_VERSION 1
#define GPULEASE_ADMISSION_INFO_VERSION 1
#define GPULEASE_ADMISSION_LEARNED 0x1
typedef struct gpulease_gpu_admission {
  uint32_t max_isolated_contexts;
  uint32_t isolated_contexts;
  uint32_t leased;
  uint32_t warm;
  uint32_t spare;
  uint32_t tearing_down;
  uint32_t queued;
  uint32_t flags;
} gpulease_gpu_admission;
typedef struct gpulease_admission_info {
  uint32_t struct_version;
  uint32_t isolated_queue_max;
  uint32_t isolated_queue_ms;
  uint32_t gpu_count;
  gpulease_gpu_admission gpus[GPULEASE_MAX_GPUS];
} gpulease_admission_info;
void gpulease_admission_info_init(gpulease_admission_info *info);
gpulease_status gpulease_admission_get(gpulease_client *client,
                                                    gpulease_admission_info *out,
                                                    gpulease_error *err);
typedef struct gpulease_warm_pool_info {
  uint32_t struct_version;
  uint32_t gpu_count;
  struct {
    uint32_t index;
    uint32_t target;
    uint32_t ready;
    uint32_t starting;
  } gpus[GPULEASE_MAX_GPUS];
} gpulease_warm_pool_info;
void gpulease_warm_pool_info_init(gpulease_warm_pool_info *info);
gpulease_status gpulease_warm_pool_get(gpulease_client *client,
                                                    gpulease_warm_pool_info *out,
                                                    gpulease_error *err);
#define GPULEASE_SECRET_BYTES 40
enum {
  GPULEASE_RIGHT_QUERY = 0x01,
  GPULEASE_RIGHT_RENEW = 0x02,
  GPULEASE_RIGHT_FREE = 0x04,
  GPULEASE_RIGHT_SUBMIT = 0x08,
  GPULEASE_RIGHT_SESSION = 0x10,
  GPULEASE_RIGHT_READ = 0x20,
  GPULEASE_RIGHT_WRITE = 0x40,
  GPULEASE_RIGHT_DELEGATE = 0x80,
  GPULEASE_RIGHTS_ALL = 0xFF,
};
void gpulease_rights_format(uint32_t rights, char *buf, size_t len);
gpulease_status gpulease_rights_parse(const char *text, uint32_t *rights);
typedef enum gpulease_lease_class {
  GPULEASE_CLASS_ISOLATED = 0,
  GPULEASE_CLASS_SHARED = 1,
  GPULEASE_CLASS_DEVICE = 2,
  GPULEASE_CLASS_PARTITION = 3,
} gpulease_lease_class;
const char *gpulease_lease_class_name(int lease_class);
gpulease_status gpulease_lease_class_parse(const char *name,
                                                        gpulease_lease_class *out);
typedef struct gpulease_lease {
  uint64_t id;
  uint8_t secret[GPULEASE_SECRET_BYTES];
  uint32_t gpu_index;
  uint64_t vram_bytes;
  uint32_t ttl_s;
  uint64_t remaining_ms;
  uint64_t submits;
  gpulease_lease_class lease_class;
} gpulease_lease;
#define GPULEASE_LEASE_OPTS_VERSION 1
typedef struct gpulease_lease_opts {
  uint32_t struct_version;
  gpulease_lease_class lease_class;
  uint32_t printf_fifo_bytes;
  uint64_t malloc_heap_bytes;
} gpulease_lease_opts;
void gpulease_lease_opts_default(gpulease_lease_opts *opts);
gpulease_status gpulease_lease_alloc(gpulease_client *client, uint32_t gpu_index,
                                                  uint64_t vram_bytes, uint32_t ttl_s,
                                                  gpulease_lease *out, gpulease_error *err);
gpulease_status gpulease_lease_alloc_opts(gpulease_client *client,
                                                       uint32_t gpu_index, uint64_t vram_bytes,
                                                       uint32_t ttl_s,
                                                       const gpulease_lease_opts *opts,
                                                       gpulease_lease *out, gpulease_error *err);
gpulease_status gpulease_lease_renew(gpulease_client *client, gpulease_lease *lease,
                                                  uint32_t ttl_s, gpulease_error *err);
gpulease_status gpulease_lease_query(gpulease_client *client, gpulease_lease *lease,
                                                  gpulease_error *err);
gpulease_status gpulease_lease_free(gpulease_client *client,
                                                 const gpulease_lease *lease,
                                                 gpulease_error *err);
gpulease_status gpulease_lease_rotate(gpulease_client *client, gpulease_lease *lease,
                                                   uint32_t ttl_s, gpulease_error *err);
gpulease_status gpulease_lease_delegate(gpulease_client *client,
                                                     const gpulease_lease *lease,
                                                     uint32_t rights, uint32_t ttl_s,
                                                     const char *audience,
                                                     uint8_t out_secret[GPULEASE_SECRET_BYTES],
                                                     gpulease_error *err);
gpulease_status gpulease_lease_revoke(gpulease_client *client, uint64_t lease_id,
                                                   const char *reason, gpulease_error *err);
gpulease_status gpulease_admin_unfence(gpulease_client *client, uint32_t gpu_index,
                                                    gpulease_error *err);
void gpulease_secret_describe(const uint8_t secret[GPULEASE_SECRET_BYTES],
                                           uint32_t *generation, uint32_t *rights,
                                           uint64_t *not_after_s, int *delegated_to_other);
void gpulease_secret_to_hex(const uint8_t secret[GPULEASE_SECRET_BYTES],
                                         char hex[2 * GPULEASE_SECRET_BYTES + 1]);
gpulease_status gpulease_secret_from_hex(const char *hex,
                                                      uint8_t secret[GPULEASE_SECRET_BYTES]);
typedef enum gpulease_image_format {
  GPULEASE_IMAGE_AUTO = 0,
  GPULEASE_IMAGE_PTX = 1,
  GPULEASE_IMAGE_CUBIN = 2,
  GPULEASE_IMAGE_FATBIN = 3,
} gpulease_image_format;
typedef enum gpulease_param_kind {
  GPULEASE_PARAM_POINTER = 1,
  GPULEASE_PARAM_SCALAR = 2,
} gpulease_param_kind;
#define GPULEASE_MAX_SCALAR_BYTES 128
#define GPULEASE_MAX_PARAMS 256
typedef struct gpulease_param {
  gpulease_param_kind kind;
  uint32_t size;
  uint64_t offset;
  uint8_t value[GPULEASE_MAX_SCALAR_BYTES];
} gpulease_param;
gpulease_param gpulease_param_pointer(uint64_t offset);
gpulease_param gpulease_param_scalar(const void *value, uint32_t size);
#define GPULEASE_SUBMIT_DESC_VERSION 2
typedef struct gpulease_submit_desc {
  uint32_t struct_version;
  const void *image;
  size_t image_size;
  gpulease_image_format format;
  const char *kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  const void *input;
  size_t input_size;
  uint64_t input_offset;
  uint64_t output_offset;
  uint64_t output_size;
  const gpulease_param *params;
  size_t param_count;
  int use_params;
  uint32_t launch_flags;
  uint32_t cluster[3];
} gpulease_submit_desc;
void gpulease_submit_desc_default(gpulease_submit_desc *desc);
#define GPULEASE_SUBMIT_RESULT_VERSION 1
typedef struct gpulease_submit_result {
  uint32_t struct_version;
  void *output;
  size_t output_size;
  uint64_t gpu_time_ns;
} gpulease_submit_result;
void gpulease_submit_result_init(gpulease_submit_result *result);
gpulease_status gpulease_submit(gpulease_client *client, const gpulease_lease *lease,
                                             const gpulease_submit_desc *desc,
                                             gpulease_submit_result *result,
                                             gpulease_error *err);
void gpulease_submit_result_release(gpulease_submit_result *result);
typedef struct gpulease_session gpulease_session;
typedef uint64_t gpulease_buffer;
typedef uint64_t gpulease_module;
typedef uint64_t gpulease_function;
gpulease_status gpulease_session_open(gpulease_client *client,
                                                   const gpulease_lease *lease,
                                                   gpulease_session **out, gpulease_error *err);
gpulease_status gpulease_session_close(gpulease_session *session,
                                                    gpulease_error *err);
uint64_t gpulease_session_id(const gpulease_session *session);
#define GPULEASE_OP_FAILURE_VERSION 1
typedef struct gpulease_op_failure {
  uint32_t struct_version;
  gpulease_status status;
  uint16_t op;
  char op_name[32];
  uint64_t seq;
} gpulease_op_failure;
void gpulease_op_failure_init(gpulease_op_failure *failure);
gpulease_status gpulease_session_sync(gpulease_session *session,
                                                   gpulease_op_failure *failure,
                                                   gpulease_error *err);
gpulease_status gpulease_session_acknowledge(gpulease_session *session,
                                                          uint64_t failed_seq,
                                                          gpulease_error *err);
gpulease_status gpulease_session_flush(gpulease_session *session,
                                                    gpulease_error *err);
gpulease_status gpulease_session_set_batch(gpulease_session *session,
                                                        unsigned max_ops, gpulease_error *err);
typedef void (*gpulease_progress_fn)(uint64_t done_bytes, uint64_t total_bytes, void *user);
gpulease_status gpulease_session_kernel_output(gpulease_session *session, gpulease_error *err);
void gpulease_session_set_progress(gpulease_session *session,
                                                gpulease_progress_fn fn, void *user);
gpulease_status gpulease_host_alloc(gpulease_client *client, size_t size_bytes,
                                                 void **ptr, gpulease_error *err);
gpulease_status gpulease_host_free(gpulease_client *client, void *ptr,
                                                gpulease_error *err);
gpulease_status gpulease_mem_alloc(gpulease_session *session, uint64_t size_bytes,
                                                gpulease_buffer *out, gpulease_error *err);
gpulease_status gpulease_mem_alloc_region(gpulease_session *session,
                                                       uint64_t size_bytes, gpulease_buffer *out,
                                                       uint64_t *region_offset,
                                                       gpulease_error *err);
gpulease_status gpulease_mem_alloc_address(gpulease_session *session,
                                                        uint64_t size_bytes, gpulease_buffer *out,
                                                        uint64_t *region_offset,
                                                        uint64_t *device_address,
                                                        gpulease_error *err);
gpulease_status gpulease_mem_free(gpulease_session *session, gpulease_buffer buffer,
                                               gpulease_error *err);
gpulease_status gpulease_mem_write(gpulease_session *session, gpulease_buffer buffer,
                                                uint64_t offset, const void *src,
                                                uint64_t size_bytes, gpulease_error *err);
gpulease_status gpulease_mem_read(gpulease_session *session, gpulease_buffer buffer,
                                               uint64_t offset, void *dst, uint64_t size_bytes,
                                               gpulease_error *err);
gpulease_status gpulease_mem_copy(gpulease_session *session, gpulease_buffer dst,
                                               uint64_t dst_offset, gpulease_buffer src,
                                               uint64_t src_offset, uint64_t size_bytes,
                                               gpulease_error *err);
gpulease_status gpulease_mem_set(gpulease_session *session, gpulease_buffer buffer,
                                              uint64_t offset, uint32_t element_size,
                                              uint32_t value, uint64_t count, gpulease_error *err);
typedef enum gpulease_module_source {
  GPULEASE_MODULE_LOADED = 0,
  GPULEASE_MODULE_IN_CONTEXT = 1,
  GPULEASE_MODULE_DISK_CACHE = 2,
} gpulease_module_source;
gpulease_status gpulease_module_load(gpulease_session *session, const void *image,
                                                  size_t image_size,
                                                  gpulease_image_format format,
                                                  gpulease_module *out,
                                                  gpulease_module_source *source,
                                                  gpulease_error *err);
gpulease_status gpulease_module_unload(gpulease_session *session,
                                                    gpulease_module module,
                                                    gpulease_error *err);
#define GPULEASE_FUNC_INFO_VERSION 1
typedef struct gpulease_func_info {
  uint32_t struct_version;
  uint32_t num_regs;
  uint32_t max_threads_per_block;
  uint32_t static_shared_bytes;
  uint32_t local_bytes;
  uint32_t const_bytes;
  uint32_t ptx_version;
  uint32_t binary_version;
  int32_t param_count;
  uint16_t param_sizes[GPULEASE_MAX_PARAMS];
} gpulease_func_info;
void gpulease_func_info_init(gpulease_func_info *info);
gpulease_status gpulease_function_get(gpulease_session *session,
                                                   gpulease_module module, const char *name,
                                                   gpulease_function *out,
                                                   gpulease_func_info *info,
                                                   gpulease_error *err);
typedef enum gpulease_arg_kind {
  GPULEASE_ARG_BUFFER = 1,
  GPULEASE_ARG_SCALAR = 2,
} gpulease_arg_kind;
typedef struct gpulease_arg {
  gpulease_arg_kind kind;
  gpulease_buffer buffer;
  uint64_t offset;
  uint32_t size;
  uint8_t value[GPULEASE_MAX_SCALAR_BYTES];
} gpulease_arg;
gpulease_arg gpulease_arg_buffer(gpulease_buffer buffer, uint64_t offset);
gpulease_arg gpulease_arg_scalar(const void *value, uint32_t size);
gpulease_status gpulease_launch(gpulease_session *session, gpulease_function fn,
                                             const uint32_t grid[3], const uint32_t block[3],
                                             uint32_t shared_mem_bytes, const gpulease_arg *args,
                                             size_t arg_count, gpulease_error *err);
gpulease_status gpulease_launch_sync(gpulease_session *session,
                                                  gpulease_function fn, const uint32_t grid[3],
                                                  const uint32_t block[3],
                                                  uint32_t shared_mem_bytes,
                                                  const gpulease_arg *args, size_t arg_count,
                                                  gpulease_op_failure *failure,
                                                  gpulease_error *err);
#define GPULEASE_LAUNCH_COOPERATIVE 0x01
#define GPULEASE_LAUNCH_ATTRS_VERSION 1
typedef struct gpulease_launch_attrs {
  uint32_t struct_version;
  uint32_t flags;
  uint32_t cluster[3];
} gpulease_launch_attrs;
void gpulease_launch_attrs_default(gpulease_launch_attrs *attrs);
gpulease_status gpulease_launch_ex(gpulease_session *session, gpulease_function fn,
                                                const uint32_t grid[3], const uint32_t block[3],
                                                uint32_t shared_mem_bytes,
                                                const gpulease_launch_attrs *attrs,
                                                const gpulease_arg *args, size_t arg_count,
                                                gpulease_error *err);
typedef struct gpulease_burst_launch {
  gpulease_function function;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  const gpulease_arg *args;
  size_t arg_count;
} gpulease_burst_launch;
#define GPULEASE_MAX_BURST 4096
gpulease_status gpulease_burst(gpulease_session *session,
                                            const gpulease_burst_launch *launches, size_t count,
                                            gpulease_error *err);
#define GPULEASE_MAX_EVENTS 256
gpulease_status gpulease_event_record(gpulease_session *session, unsigned event,
                                                   gpulease_error *err);
gpulease_status gpulease_event_elapsed(gpulease_session *session, unsigned start,
                                                    unsigned end, uint64_t *elapsed_ns,
                                                    gpulease_error *err);
typedef uint64_t gpulease_graph;
gpulease_status gpulease_graph_begin(gpulease_session *session, gpulease_error *err);
gpulease_status gpulease_graph_begin_while(gpulease_session *session,
                                                        gpulease_buffer flag, uint64_t offset,
                                                        gpulease_error *err);
gpulease_status gpulease_graph_end(gpulease_session *session, gpulease_graph *out,
                                                uint32_t *kernel_nodes, gpulease_error *err);
gpulease_status gpulease_graph_launch(gpulease_session *session, gpulease_graph graph,
                                                   gpulease_error *err);
gpulease_status gpulease_graph_set_args(gpulease_session *session,
                                                     gpulease_graph graph, uint32_t node,
                                                     const gpulease_arg *args, size_t arg_count,
                                                     gpulease_error *err);
gpulease_status gpulease_graph_destroy(gpulease_session *session,
                                                    gpulease_graph graph, gpulease_error *err);
typedef enum gpulease_call_arg_kind {
  GPULEASE_CALL_IN = 1,
  GPULEASE_CALL_OUT = 2,
  GPULEASE_CALL_INOUT = 3,
  GPULEASE_CALL_SCALAR = 4,
} gpulease_call_arg_kind;
typedef struct gpulease_call_arg {
  gpulease_call_arg_kind kind;
  const void *data;
  void *out;
  uint64_t size;
} gpulease_call_arg;
#define GPULEASE_CALL_DESC_VERSION 1
typedef struct gpulease_call_desc {
  uint32_t struct_version;
  const void *image;
  size_t image_size;
  gpulease_image_format format;
  const char *kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  const gpulease_call_arg *args;
  size_t arg_count;
  uint32_t fresh_ttl_s;
  uint32_t fresh_gpu_index;
  uint32_t max_attempts;
  uint32_t backoff_ms;
} gpulease_call_desc;
void gpulease_call_desc_default(gpulease_call_desc *desc);
gpulease_status gpulease_call(gpulease_client *client, const gpulease_lease *lease,
                                           const gpulease_call_desc *desc,
                                           uint64_t *gpu_time_ns, gpulease_error *err);
gpulease_status gpulease_client_reconnect(gpulease_client *client,
                                                       gpulease_error *err);
typedef struct gpulease_renewer gpulease_renewer;
typedef void (*gpulease_lease_lost_fn)(const gpulease_lease *lease, gpulease_status status,
                                       const char *message, void *user);
gpulease_status gpulease_renewer_start(const gpulease_connect_options *opts,
                                                    const gpulease_lease *lease, uint32_t ttl_s,
                                                    gpulease_lease_lost_fn lost_fn, void *user,
                                                    gpulease_renewer **out,
                                                    gpulease_error *err);
gpulease_status gpulease_renewer_status(gpulease_renewer *renewer,
                                                     gpulease_error *err);
void gpulease_renewer_stop(gpulease_renewer *renewer);
typedef struct gpulease_pool gpulease_pool;
#define GPULEASE_POOL_OPTIONS_VERSION 1
typedef struct gpulease_pool_options {
  uint32_t struct_version;
  const char *nodes;
  const char *nodes_file;
  const char *srv_name;
  const char *dns_server;
  uint32_t srv_refresh_s;
  const gpulease_connect_options *connect;
  uint32_t max_leases_per_node;
  uint32_t max_leases;
  gpulease_lease_class lease_class;
  uint32_t lease_ttl_s;
  uint32_t down_backoff_ms;
} gpulease_pool_options;
void gpulease_pool_options_default(gpulease_pool_options *opts);
gpulease_status gpulease_pool_open(const gpulease_pool_options *opts,
                                                gpulease_pool **out, gpulease_error *err);
void gpulease_pool_close(gpulease_pool *pool);
gpulease_status gpulease_pool_refresh(gpulease_pool *pool, gpulease_error *err);
typedef struct gpulease_pool_node {
  char addr[272];
  int up;
  gpulease_status status;
  char message[256];
  gpulease_inventory inventory;
} gpulease_pool_node;
gpulease_status gpulease_pool_inventory(gpulease_pool *pool,
                                                     gpulease_pool_node **nodes, size_t *count,
                                                     gpulease_error *err);
void gpulease_pool_nodes_release(gpulease_pool_node *nodes, size_t count);
typedef enum gpulease_map_arg_kind {
  GPULEASE_MAP_IN = 1,
  GPULEASE_MAP_OUT = 2,
  GPULEASE_MAP_BYTES = 3,
  GPULEASE_MAP_INDEX = 4,
  GPULEASE_MAP_SCALAR = 5,
} gpulease_map_arg_kind;
typedef struct gpulease_map_arg {
  gpulease_map_arg_kind kind;
  uint32_t size;
  uint8_t value[GPULEASE_MAX_SCALAR_BYTES];
} gpulease_map_arg;
typedef void (*gpulease_map_progress_fn)(uint64_t done_chunks, uint64_t total_chunks, void *user);
#define GPULEASE_MAP_DESC_VERSION 1
typedef struct gpulease_map_desc {
  uint32_t struct_version;
  const void *image;
  size_t image_size;
  gpulease_image_format format;
  const char *kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  const gpulease_map_arg *args;
  size_t arg_count;
  const void *input;
  uint64_t input_bytes;
  uint64_t chunk_bytes;
  void *output;
  uint64_t output_bytes_per_chunk;
  uint32_t max_attempts;
  uint32_t deadline_ms;
  gpulease_map_progress_fn progress;
  void *progress_user;
} gpulease_map_desc;
void gpulease_map_desc_default(gpulease_map_desc *desc);
typedef struct gpulease_map_node_stats {
  char addr[272];
  uint64_t chunks;
  uint64_t retries;
  uint64_t failures;
  uint64_t leases;
  uint64_t bytes_in;
  uint64_t bytes_out;
  double seconds;
} gpulease_map_node_stats;
#define GPULEASE_MAP_STATS_VERSION 1
typedef struct gpulease_map_stats {
  uint32_t struct_version;
  uint64_t chunks;
  uint64_t done;
  uint64_t retries;
  uint64_t backups;
  double seconds;
  double chunk_p50_ms;
  double chunk_p99_ms;
  size_t node_count;
  gpulease_map_node_stats *nodes;
} gpulease_map_stats;
void gpulease_map_stats_init(gpulease_map_stats *stats);
gpulease_status gpulease_pool_map(gpulease_pool *pool, const gpulease_map_desc *desc,
                                               gpulease_map_stats *stats, gpulease_error *err);
void gpulease_map_stats_release(gpulease_map_stats *stats);
"""
