"""Regenerates the compiler-made PTX this folder's tests run on every
machine (CI has neither numba-cuda nor Triton, nor a GPU):

    pip install numba-cuda triton      # with a CUDA toolkit for numba's NVVM
    python python/tests/compilers/generate.py

numba_axpy.ptx: numba.cuda.compile_ptx of axpy below for compute
capability 7.5 (numba passes each 1-D array as 7 parameters: meminfo,
parent, nitems, itemsize, data, shape, stride). triton_add.ptx:
triton.compile of add_kernel below for sm_80 (BLOCK 256, 4 warps: 128
threads a block; two trailing scratch pointers that may be null).
"""
import pathlib

from kernels import AXPY_SIGNATURE, TRITON_BLOCK, TRITON_SIGNATURE, axpy_numba, add_kernel_triton

HERE = pathlib.Path(__file__).resolve().parent


def main() -> None:
    from numba import cuda  # numba-cuda

    ptx, _ = cuda.compile_ptx(axpy_numba(), AXPY_SIGNATURE(), cc=(7, 5))
    (HERE / "numba_axpy.ptx").write_text(ptx)

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=add_kernel_triton(), signature=TRITON_SIGNATURE,
                    constexprs={"BLOCK": TRITON_BLOCK})
    k = triton.compile(src, target=GPUTarget("cuda", 80, 32))
    (HERE / "triton_add.ptx").write_text(k.asm["ptx"])


if __name__ == "__main__":
    main()
