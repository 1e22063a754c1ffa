/*
 * cuda_graph.c - the CUDA backend's graphs and WHILE loops: a recipe of
 * ops captured, instantiated, launched, given new arguments, destroyed.
 *
 * Graphs (GRAPH_BEGIN .. GRAPH_DESTROY): graph_build captures the recipe's
 * ops on a stream created for the build (cuStreamBeginCapture, thread-local
 * mode, so other sessions' threads are not disturbed), issued with the
 * driver calls the *_async ops use; the launch attributes are checked
 * before the capture begins. The kernel nodes are then found in capture
 * order (cuGraphGetNodes gives nodes in the order they were added; those
 * of type CU_GRAPH_NODE_TYPE_KERNEL are kept, and must be as many as the
 * recipe's kernels, with the ops' dimensions, or the build fails INTERNAL
 * rather than number them wrong), and the graph is instantiated
 * (cuGraphInstantiateWithFlags). graph_set_args gives node i new argument
 * values (cuGraphExecKernelNodeSetParams, with the node's function,
 * dimensions and shared memory as built); graph_launch is cuGraphLaunch on
 * the session's stream. A WHILE loop (CUDA 12.4+ driver: the conditional
 * node entry points are optional in the table) is a graph of one
 * conditional node (cuGraphConditionalHandleCreate, 1 assigned at each
 * launch; cuGraphAddNode) whose body graph is filled by capture
 * (cuStreamBeginCaptureToGraph) with the ops and then gl_while_cond, which
 * sets the condition from the u32 flag (cudaGraphSetConditional). That
 * kernel needs libcudadevrt, so it is device-linked when gpulease is built:
 * the build's while_cond_cubins.c holds a cubin for each architecture
 * (nvcc's, or the checked-in src/backend/while_cond/sm_XX.cubin where
 * there is no nvcc: src/backend/CMakeLists.txt), and the one for the
 * device's compute capability is loaded into the context at the first loop
 * (cond_mu), unloaded by reset and destroy.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_internal.h"
#include "backend/while_cond.h"

/* Unloads the WHILE loops' condition kernel, if it was loaded. The
 * context is current and no graph uses it any more. */
void gl_cuda__cond_unload(cuda_backend *c) {
  pthread_mutex_lock(&c->cond_mu);
  if (c->cond_mod) c->cu.cuModuleUnload(c->cond_mod);
  c->cond_mod = NULL;
  c->cond_fn = NULL;
  pthread_mutex_unlock(&c->cond_mu);
}

/* ---- graphs: a recipe captured, instantiated, replayed ---------------------------- */

/* What graph_build's handle points at. */
typedef struct cuda_graph {
  CUgraph graph;    /* what was instantiated (a loop's: the graph of the WHILE node) */
  CUgraphExec exec;
  size_t nkernels;  /* the recipe's GL_GRAPH_KERNEL ops */
  CUgraphNode *nodes; /* nkernels: kernel node i is the i-th kernel op (in a loop's body) */
  CUDA_KERNEL_NODE_PARAMS *params; /* nkernels: node i's function, dimensions, shared memory */
} cuda_graph;

/* Frees a graph's host memory, and its exec and graph when `device` (not
 * after the context is lost). A loop's body graph goes with its node. */
static void graph_free(cuda_backend *c, cuda_graph *g, bool device) {
  if (!g) return;
  if (device) {
    if (g->exec) c->cu.cuGraphExecDestroy(g->exec);
    if (g->graph) c->cu.cuGraphDestroy(g->graph);
  }
  free(g->nodes);
  free(g->params);
  free(g);
}

/* The failure r of a step of graph_build (`what` names it and the op): the
 * recipe's fault (INVALID_ARGUMENT), an op that cannot be captured
 * (UNSUPPORTED), else gl_cuda__stream_fail's verdict with `status`. */
static gpulease_status graph_fail(cuda_backend *c, CUresult r, const char *what,
                                  gpulease_status status, char *err, size_t errlen) {
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    gl_cuda__cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
    gl_cuda__cu_msg(c, r, what, err, errlen);
    return GPULEASE_UNSUPPORTED;
  }
  return gl_cuda__stream_fail(c, r, what, status, err, errlen);
}

/* Puts "op I of the graph: " before the message in err. */
static void graph_op_prefix(size_t i, char *err, size_t errlen) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", err);
  snprintf(err, errlen, "op %zu of the graph: %s", i, msg);
}

/* The cubin of the WHILE condition kernel for compute capability
 * major.minor: the exact one, else the newest of the same major with a
 * lower minor (a cubin runs on the later minors of its major). NULL: none. */
static const gl_while_cond_cubin *cond_cubin(int major, int minor) {
  const gl_while_cond_cubin *best = NULL;
  for (size_t i = 0; i < gl_while_cond_cubin_count; i++) {
    const gl_while_cond_cubin *k = &gl_while_cond_cubins[i];
    if (k->major != major || k->minor > minor) continue;
    if (!best || k->minor > best->minor) best = k;
  }
  return best;
}

/* The WHILE condition kernel, loaded into the context the first time
 * (cond_mu: several sessions may build at once). UNSUPPORTED when no cubin
 * fits the device or the driver cannot load the one that does. */
static gpulease_status cond_kernel(cuda_backend *c, CUfunction *fn, char *err, size_t errlen) {
  gpulease_status st = GPULEASE_OK;
  pthread_mutex_lock(&c->cond_mu);
  if (!c->cond_fn) {
    const gl_while_cond_cubin *k = cond_cubin(c->cc_major, c->cc_minor);
    if (!k) {
      snprintf(err, errlen,
               "graph WHILE loops: the loop's condition kernel has no build for compute "
               "capability %d.%d (src/backend/while_cond/, scripts/gen_while_cond.sh)",
               c->cc_major, c->cc_minor);
      st = GPULEASE_UNSUPPORTED;
    } else {
      CUmodule mod = NULL;
      CUfunction f = NULL;
      const char *call = "cuModuleLoadDataEx";
      CUresult r = c->cu.cuModuleLoadDataEx(&mod, k->bytes, 0, NULL, NULL);
      bool loaded = r == CUDA_SUCCESS;
      if (loaded) {
        call = "cuModuleGetFunction";
        r = c->cu.cuModuleGetFunction(&f, mod, GL_WHILE_COND_KERNEL);
      }
      if (r == CUDA_SUCCESS) {
        c->cond_mod = mod;
        c->cond_fn = f;
      } else {
        if (loaded) c->cu.cuModuleUnload(mod);
        char what[160];
        snprintf(what, sizeof what,
                 "graph WHILE loops: %s of the loop's condition kernel (sm_%d%d cubin)", call,
                 k->major, k->minor);
        st = gl_cuda__stream_fail(c, r, what, GPULEASE_UNSUPPORTED, err, errlen);
      }
    }
  }
  *fn = c->cond_fn;
  pthread_mutex_unlock(&c->cond_mu);
  return st;
}

/* Queues op i of a recipe on the capturing stream s, with the driver calls
 * the *_async ops use. */
static gpulease_status graph_issue(cuda_backend *c, CUstream s, const gl_graph_op *op, size_t i,
                                   char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  char what[GL_WIRE_MAX_KERNEL_NAME + 320];
  int n = snprintf(what, sizeof what, "op %zu of the graph: ", i);
  if (n < 0 || (size_t)n >= sizeof what) n = 0;
  char *rest = what + n;
  size_t restlen = sizeof what - (size_t)n;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (op->kind == GL_GRAPH_KERNEL) {
    const gl_launch *l = &op->launch;
    CUfunction f = (CUfunction)op->fn;
    if (has_attrs(l))
      r = gl_cuda__launch_ex(c, f, l, s);
    else
      r = cu->cuLaunchKernel(f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                             l->block[2], l->shared_mem_bytes, s, l->args, NULL);
    if (r == CUDA_SUCCESS) return GPULEASE_OK;
    gl_cuda__launch_what(l, rest, restlen);
    if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      return graph_fail(c, r, what, GPULEASE_UNSUPPORTED, err, errlen);
    return gl_cuda__launch_refused(c, r, f, l, what, err, errlen);
  }
  if (op->kind == GL_GRAPH_MEMSET) {
    CUdeviceptr dst = c->region + op->offset;
    size_t count = (size_t)op->count;
    if (op->element_size == 1)
      r = cu->cuMemsetD8Async(dst, (unsigned char)op->value, count, s);
    else if (op->element_size == 2)
      r = cu->cuMemsetD16Async(dst, (unsigned short)op->value, count, s);
    else if (op->element_size == 4)
      r = cu->cuMemsetD32Async(dst, op->value, count, s);
    if (r == CUDA_SUCCESS) return GPULEASE_OK;
    snprintf(rest, restlen, "cuMemsetD%uAsync(%" PRIu64 " elements at offset %" PRIu64 ")",
             op->element_size * 8, op->count, op->offset);
    return graph_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
  }
  /* GL_GRAPH_COPY (graph_build checked the kinds) */
  r = cu->cuMemcpyDtoDAsync(c->region + op->offset, c->region + op->src_offset,
                            (size_t)op->count, s);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  snprintf(rest, restlen,
           "cuMemcpyDtoDAsync(%" PRIu64 " bytes from offset %" PRIu64 " to offset %" PRIu64 ")",
           op->count, op->src_offset, op->offset);
  return graph_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
}

/* Finds the kernel nodes of captured graph gr in the order they were added
 * (cuGraphGetNodes's order): the recipe's nk kernels, then, in a loop's
 * body (`loop`), the condition kernel. out[k] receives the k-th kernel op's
 * node. INTERNAL when the count or a node's dimensions differ from the
 * recipe's: the nodes cannot be numbered as the ops are. */
static gpulease_status graph_kernel_nodes(cuda_backend *c, CUgraph gr, const gl_graph_op *ops,
                                          size_t n, size_t nk, bool loop, CUgraphNode *out,
                                          char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  size_t count = 0;
  CUresult r = cu->cuGraphGetNodes(gr, NULL, &count);
  if (r != CUDA_SUCCESS) return graph_fail(c, r, "cuGraphGetNodes", GPULEASE_INTERNAL, err, errlen);
  CUgraphNode *all = calloc(count ? count : 1, sizeof *all);
  if (!all) {
    snprintf(err, errlen, "out of memory for the %zu nodes of a graph", count);
    return GPULEASE_INTERNAL;
  }
  r = cu->cuGraphGetNodes(gr, all, &count);
  if (r != CUDA_SUCCESS) {
    free(all);
    return graph_fail(c, r, "cuGraphGetNodes", GPULEASE_INTERNAL, err, errlen);
  }
  size_t k = 0;
  for (size_t j = 0; j < count; j++) {
    CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
    r = cu->cuGraphNodeGetType(all[j], &t);
    if (r != CUDA_SUCCESS) {
      free(all);
      return graph_fail(c, r, "cuGraphNodeGetType", GPULEASE_INTERNAL, err, errlen);
    }
    if (t != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    if (k < nk) out[k] = all[j];
    k++;
  }
  free(all);
  size_t want = nk + (loop ? 1 : 0);
  if (k != want) {
    snprintf(err, errlen,
             "the graph's capture holds %zu kernel nodes (of %zu nodes) where the recipe has %zu "
             "kernel ops%s: its kernel nodes cannot be numbered",
             k, count, nk, loop ? " and the WHILE loop its condition kernel" : "");
    return GPULEASE_INTERNAL;
  }
  /* The order, as far as dimensions tell. */
  k = 0;
  for (size_t i = 0; i < n; i++) {
    if (ops[i].kind != GL_GRAPH_KERNEL) continue;
    const gl_launch *l = &ops[i].launch;
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    r = cu->cuGraphKernelNodeGetParams(out[k], &p);
    if (r != CUDA_SUCCESS)
      return graph_fail(c, r, "cuGraphKernelNodeGetParams", GPULEASE_INTERNAL, err, errlen);
    if (p.gridDimX != l->grid[0] || p.gridDimY != l->grid[1] || p.gridDimZ != l->grid[2] ||
        p.blockDimX != l->block[0] || p.blockDimY != l->block[1] ||
        p.blockDimZ != l->block[2] || p.sharedMemBytes != l->shared_mem_bytes) {
      snprintf(err, errlen,
               "kernel node %zu of the graph's capture has grid %ux%ux%u, block %ux%ux%u, %u "
               "bytes of shared memory, but op %zu ('%s') grid %ux%ux%u, block %ux%ux%u, %u: "
               "the capture's order is not the recipe's",
               k, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
               p.sharedMemBytes, i, l->kernel_name, l->grid[0], l->grid[1], l->grid[2],
               l->block[0], l->block[1], l->block[2], l->shared_mem_bytes);
      return GPULEASE_INTERNAL;
    }
    k++;
  }
  return GPULEASE_OK;
}

/* A loop's graph: one WHILE conditional node, its condition set to 1 at
 * each launch; *body receives the node's body graph (the node owns it) and
 * *h the condition's handle. g->graph holds the graph from its creation. */
static gpulease_status graph_loop_node(cuda_backend *c, cuda_graph *g, CUgraph *body,
                                       CUgraphConditionalHandle *h, char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  CUresult r = cu->cuGraphCreate(&g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->graph = NULL;
    return graph_fail(c, r, "cuGraphCreate (a WHILE loop)", GPULEASE_INTERNAL, err, errlen);
  }
  r = cu->cuGraphConditionalHandleCreate(h, g->graph, c->ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  if (r != CUDA_SUCCESS)
    return graph_fail(c, r, "cuGraphConditionalHandleCreate (a WHILE loop)", GPULEASE_INTERNAL,
                      err, errlen);
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = *h;
  np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  np.conditional.size = 1;
  np.conditional.ctx = c->ctx;
  CUgraphNode node = NULL;
  r = cu->cuGraphAddNode(&node, g->graph, NULL, NULL, 0, &np);
  if (r != CUDA_SUCCESS)
    return graph_fail(c, r, "cuGraphAddNode (the WHILE loop's conditional node)",
                      GPULEASE_INTERNAL, err, errlen);
  if (!np.conditional.phGraph_out || !np.conditional.phGraph_out[0]) {
    snprintf(err, errlen, "cuGraphAddNode gave the WHILE loop's conditional node no body graph");
    return GPULEASE_INTERNAL;
  }
  *body = np.conditional.phGraph_out[0];
  return GPULEASE_OK;
}

gpulease_status gl_cuda__graph_build(gl_backend *b, const gl_graph_op *ops, size_t n,
                                     uint64_t while_flag, void **graph, char *err,
                                     size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  bool loop = while_flag != GL_GRAPH_NO_LOOP;
  if (n == 0) {
    snprintf(err, errlen, "a graph of 0 ops");
    return GPULEASE_INVALID_ARGUMENT;
  }
  size_t nk = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_graph_op *op = &ops[i];
    if (op->kind == GL_GRAPH_KERNEL) {
      nk++;
    } else if (op->kind == GL_GRAPH_MEMSET) {
      if (op->element_size != 1 && op->element_size != 2 && op->element_size != 4) {
        snprintf(err, errlen, "op %zu of the graph: memset element size %u: must be 1, 2 or 4", i,
                 op->element_size);
        return GPULEASE_INVALID_ARGUMENT;
      }
    } else if (op->kind != GL_GRAPH_COPY) {
      snprintf(err, errlen, "op %zu of the graph: unknown kind %d", i, (int)op->kind);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  if (loop) {
    if (!cu->cuGraphAddNode || !cu->cuGraphConditionalHandleCreate ||
        !cu->cuStreamBeginCaptureToGraph || cu->driver_version < 12040) {
      snprintf(err, errlen,
               "graph WHILE loops need a CUDA 12.4+ driver (conditional nodes); this driver is "
               "CUDA %d.%d",
               cu->driver_version / 1000, cu->driver_version % 1000 / 10);
      return GPULEASE_UNSUPPORTED;
    }
    if (while_flag % 4 != 0) {
      snprintf(err, errlen, "the WHILE loop's flag at offset %" PRIu64 " is not 4-byte aligned",
               while_flag);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "graph_build: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  CUfunction cond_fn = NULL;
  if (loop) {
    gpulease_status st = cond_kernel(c, &cond_fn, err, errlen);
    if (st != GPULEASE_OK) return st;
  }
  cuda_graph *g = calloc(1, sizeof *g);
  if (g) {
    g->nodes = calloc(nk ? nk : 1, sizeof *g->nodes);
    g->params = calloc(nk ? nk : 1, sizeof *g->params);
  }
  if (!g || !g->nodes || !g->params) {
    graph_free(c, g, false);
    snprintf(err, errlen, "out of memory for a graph of %zu ops", n);
    return GPULEASE_INTERNAL;
  }
  g->nkernels = nk;
  for (size_t i = 0, k = 0; i < n; i++)
    if (ops[i].kind == GL_GRAPH_KERNEL) {
      g->params[k] = gl_cuda__node_params(ops[i].fn, &ops[i].launch);
      g->params[k++].kernelParams = NULL; /* set_args's own */
    }

  gpulease_status st = GPULEASE_OK;
  CUstream s = NULL;
  CUgraph body = NULL; /* a loop's: what the capture fills */
  CUgraph captured = NULL;
  CUgraphConditionalHandle h = 0;
  bool capturing = false;
  r = cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    s = NULL;
    st = graph_fail(c, r, "cuStreamCreate (the graph's capture stream)", GPULEASE_INTERNAL, err,
                    errlen);
    goto fail;
  }
  /* The launch attributes' checks (queries, not stream work) before the
   * capture begins. */
  for (size_t i = 0; i < n; i++)
    if (ops[i].kind == GL_GRAPH_KERNEL && has_attrs(&ops[i].launch)) {
      st = gl_cuda__attrs_check(c, (CUfunction)ops[i].fn, &ops[i].launch, s, err, errlen);
      if (st != GPULEASE_OK) {
        graph_op_prefix(i, err, errlen);
        goto fail;
      }
    }
  if (loop) {
    st = graph_loop_node(c, g, &body, &h, err, errlen);
    if (st != GPULEASE_OK) goto fail;
    r = cu->cuStreamBeginCaptureToGraph(s, body, NULL, NULL, 0,
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  } else {
    r = cu->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  }
  if (r != CUDA_SUCCESS) {
    st = graph_fail(c, r, loop ? "cuStreamBeginCaptureToGraph (the WHILE loop's body)"
                               : "cuStreamBeginCapture",
                    GPULEASE_INTERNAL, err, errlen);
    goto fail;
  }
  capturing = true;
  for (size_t i = 0; i < n; i++) {
    st = graph_issue(c, s, &ops[i], i, err, errlen);
    if (st != GPULEASE_OK) goto fail;
  }
  if (loop) {
    /* the body's last node: the condition from the flag */
    CUdeviceptr flag = c->region + while_flag;
    void *args[2] = {&h, &flag};
    r = cu->cuLaunchKernel(cond_fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
    if (r != CUDA_SUCCESS) {
      st = graph_fail(c, r, "cuLaunchKernel (the WHILE loop's condition kernel)",
                      GPULEASE_INTERNAL, err, errlen);
      goto fail;
    }
  }
  capturing = false;
  r = cu->cuStreamEndCapture(s, &captured);
  if (r != CUDA_SUCCESS) {
    if (captured && !loop) cu->cuGraphDestroy(captured);
    st = graph_fail(c, r, "cuStreamEndCapture", GPULEASE_INTERNAL, err, errlen);
    goto fail;
  }
  if (!loop) g->graph = captured; /* a loop's body is the node's, filled in place */
  st = graph_kernel_nodes(c, loop ? body : g->graph, ops, n, nk, loop, g->nodes, err, errlen);
  if (st != GPULEASE_OK) goto fail;
  r = cu->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->exec = NULL;
    char what[128];
    snprintf(what, sizeof what, "cuGraphInstantiateWithFlags (a graph of %zu ops%s)", n,
             loop ? " in a WHILE loop" : "");
    st = graph_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
    goto fail;
  }
  cu->cuStreamDestroy(s);
  *graph = g;
  return GPULEASE_OK;

fail:
  /* After a fault the worker exits: only host memory to give back. */
  if (!is_lost(c)) {
    if (capturing) {
      CUgraph partial = NULL;
      cu->cuStreamEndCapture(s, &partial); /* an invalidated capture gives none */
      if (partial && !loop) cu->cuGraphDestroy(partial);
    }
    if (s) cu->cuStreamDestroy(s);
  }
  graph_free(c, g, !is_lost(c));
  return st;
}

gpulease_status gl_cuda__graph_launch(gl_backend *b, void *stream, void *graph, char *err,
                                      size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_graph *g = graph;
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuGraphLaunch(g->exec, cstream(stream));
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[128];
  snprintf(what, sizeof what, "cuGraphLaunch (a graph of %zu kernel nodes)", g->nkernels);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    gl_cuda__cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return gl_cuda__stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}

gpulease_status gl_cuda__graph_set_args(gl_backend *b, void *graph, uint32_t node,
                                        const gl_launch *l, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_graph *g = graph;
  if (node >= g->nkernels) {
    snprintf(err, errlen, "kernel node %u: the graph has %zu kernel node%s", node, g->nkernels,
             g->nkernels == 1 ? "" : "s");
    return GPULEASE_INVALID_ARGUMENT;
  }
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuGraphExecKernelNodeSetParams: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  CUDA_KERNEL_NODE_PARAMS p = g->params[node];
  p.kernelParams = l->args;
  r = c->cu.cuGraphExecKernelNodeSetParams(g->exec, g->nodes[node], &p);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[GL_WIRE_MAX_KERNEL_NAME + 320];
  int n = snprintf(what, sizeof what, "kernel node %u of the graph: ", node);
  if (n < 0 || (size_t)n >= sizeof what) n = 0;
  gl_cuda__launch_desc(l, "cuGraphExecKernelNodeSetParams", what + n, sizeof what - (size_t)n);
  return gl_cuda__launch_refused(c, r, p.func, l, what, err, errlen);
}

void gl_cuda__graph_destroy(gl_backend *b, void *graph) {
  cuda_backend *c = as_cuda(b);
  if (!graph) return;
  /* After a fault the worker exits: nothing to give back but host memory. */
  graph_free(c, graph, !is_lost(c) && gl_cuda__make_current(c) == CUDA_SUCCESS);
}
