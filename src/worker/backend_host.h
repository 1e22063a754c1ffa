/*
 * backend_host.h - the test-double device (see backend_host.c): leasable
 * host memory that runs no kernels, selected by gpuleased only when
 * $GPULEASE_TEST_HOST_DEVICE is set, for tests on machines without a GPU.
 */
#ifndef GL_WORKER_BACKEND_HOST_H
#define GL_WORKER_BACKEND_HOST_H

#include <stdint.h>

#include "worker/backend.h"

#define GL_TEST_HOST_DEVICE_ENV "GPULEASE_TEST_HOST_DEVICE"

/* A backend with one device of capacity_bytes. NULL when out of memory. */
gl_backend *gl_backend_host_new(uint64_t capacity_bytes);

#endif
