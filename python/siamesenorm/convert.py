"""bf16 storage in numpy: uint16 arrays holding the bf16 bits (numpy has no bfloat16).

Every primitive takes either float32 matrices (the fp32 call) or uint16 ones (its `_bf16` twin,
which writes uint16 outputs); all matrices of one call must share the dtype. Parameters, their
gradients and statistics stay float32. to_bf16 rounds to nearest even (NaN stays NaN), exactly
as the library stores bf16; from_bf16 widens exactly. With torch, tensor.view(torch.int16) of a
bfloat16 tensor has the same bits (the torch adapter takes torch.bfloat16 tensors directly)."""

import ctypes

import numpy as np

from . import _arrays as A
from ._capi import check, lib
from .norm import ctx_handle


def to_bf16(x, out=None, ctx=None):
    """sn_to_bf16: the (R, D) float32 array x rounded to bf16, as a uint16 array (out, or a new
    one)."""
    R, D = A.rows_cols("x", x, np.dtype(np.float32))
    px, ldx = A.matrix("x", x, R, D)
    out = A.out_matrix("out", out, R, D, dtype=A.BF16)
    po, ldo = A.matrix("out", out, R, D, write=True, dtype=A.BF16)
    check(lib.sn_to_bf16(ctx_handle(ctx), R, D, px, ldx, po, ldo), "sn_to_bf16")
    return out


def from_bf16(b, out=None, ctx=None):
    """sn_from_bf16: the (R, D) uint16 array b of bf16 bits widened to float32 (exact)."""
    R, D = A.rows_cols("b", b, A.BF16)
    pb, ldb = A.matrix("b", b, R, D, dtype=A.BF16)
    out = A.out_matrix("out", out, R, D)
    po, ldo = A.matrix("out", out, R, D, write=True)
    check(lib.sn_from_bf16(ctx_handle(ctx), R, D, pb, ldb, po, ldo), "sn_from_bf16")
    return out


def bf16_round(v):
    """One value: the bf16 bits (an int) of float v, rounded as the library rounds."""
    return int(lib.sn_bf16_from_f32(ctypes.c_float(float(v))))


__all__ = ["to_bf16", "from_bf16", "bf16_round"]
