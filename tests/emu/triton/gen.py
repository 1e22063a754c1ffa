#!/usr/bin/env python3
"""Compile Triton's tutorial kernels to PTX for sm_80 and sm_90a.

The PTX is committed beside this script (sm_80/, sm_90a/) so that CI runs
the kernels on the emulated device without Triton. Regenerate with

    python3 -m venv /tmp/tvenv && /tmp/tvenv/bin/pip install triton==3.9.0
    /tmp/tvenv/bin/python tests/emu/triton/gen.py

No GPU is needed: Triton compiles for a named target. Each kernel follows
the tutorial of the same name (01 vector add, 02 fused softmax, 03 matrix
multiplication, 05 layer norm) with one fixed configuration instead of the
autotuner. A kernel's launch shape (warps per block, shared memory) is
written to manifest.txt:
    NAME TARGET KERNEL NUM_WARPS SHARED_BYTES
"""
import os
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                   BLOCK: tl.constexpr, STAGES: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=STAGES):
        row_ptr = in_ptr + row * in_stride
        cols = tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(row_ptr + cols, mask=m, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_stride + cols, num / den, mask=m)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        tl.store(Y + cols, x_hat * w + b, mask=mask)


MM_SIG = {"a_ptr": None, "b_ptr": None, "c_ptr": None, "M": "i32", "N": "i32", "K": "i32",
          "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
          "stride_cm": "i32", "stride_cn": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
          "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "PRECISION": "constexpr"}


def mm(ty, out, prec, bk):
    sig = dict(MM_SIG, a_ptr="*" + ty, b_ptr="*" + ty, c_ptr="*" + out)
    return (matmul_kernel, sig, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": bk, "GROUP_M": 8,
                                 "PRECISION": prec}, 4, 3)


# name: (function, signature, constexprs, num_warps, num_stages)
KERNELS = {
    "vector_add": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}, 4, 3),
    "softmax": (softmax_kernel, {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                                 "out_stride": "i32", "n_rows": "i32", "n_cols": "i32",
                                 "BLOCK": "constexpr", "STAGES": "constexpr"},
                {"BLOCK": 256, "STAGES": 2}, 4, 2),
    "matmul_f32": mm("fp32", "fp32", "ieee", 32),
    "matmul_tf32": mm("fp32", "fp32", "tf32", 32),
    "matmul_f16": mm("fp16", "fp16", "tf32", 32),
    "layer_norm": (layer_norm_fwd, {"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32",
                                    "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32",
                                    "N": "i32", "eps": "fp32", "BLOCK": "constexpr"},
                   {"BLOCK": 256}, 4, 3),
}

TARGETS = {"sm_80": 80, "sm_90a": 90}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    manifest = []
    for tname, cc in TARGETS.items():
        os.makedirs(os.path.join(here, tname), exist_ok=True)
        for name, (fn, sig, consts, warps, stages) in KERNELS.items():
            src = ASTSource(fn=fn, signature=sig, constexprs=consts)
            k = triton.compile(src, target=GPUTarget("cuda", cc, 32),
                               options={"num_warps": warps, "num_stages": stages})
            with open(os.path.join(here, tname, name + ".ptx"), "w") as f:
                f.write(k.asm["ptx"])
            manifest.append(f"{name} {tname} {k.metadata.name} {k.metadata.num_warps} "
                            f"{k.metadata.shared}")
            print(manifest[-1], file=sys.stderr)
    with open(os.path.join(here, "manifest.txt"), "w") as f:
        f.write(f"# generated by gen.py with triton {triton.__version__}\n")
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
