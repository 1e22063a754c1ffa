"""The Python-compiled kernels of these tests, as functions that import
their compiler only when called (so the module imports without them)."""

TRITON_BLOCK = 256
TRITON_WARPS = 4
TRITON_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def axpy_numba():
    """out[i] = a * x[i] + out[i] for i < n, as a numba.cuda kernel."""
    from numba import cuda

    def axpy(out, x, a, n):
        i = cuda.grid(1)
        if i < n:
            out[i] = a * x[i] + out[i]

    return axpy


def AXPY_SIGNATURE():
    from numba import float32, int32

    return (float32[:], float32[:], float32, int32)


def add_kernel_triton():
    """out[i] = x[i] + y[i] for i < n, as a Triton kernel (BLOCK elements a
    program)."""
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(out_ptr + offs, x + y, mask=m)

    return add_kernel
