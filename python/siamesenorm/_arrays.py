"""Argument checks shared by the wrappers: every array is validated in Python before the C call
(the C library validates again and reports what Python cannot see, e.g. aliasing)."""

import numpy as np

from . import errors
from ._capi import error

_F32 = np.dtype(np.float32)


def _ensure_array(name, a):
    if not isinstance(a, np.ndarray):
        raise errors.DTypeError(None, f"{name} must be a numpy.ndarray of float32, got "
                                      f"{type(a).__name__}")
    if a.dtype != _F32:
        raise errors.DTypeError(None, f"{name} must have dtype float32, got {a.dtype}")
    if not a.flags.aligned:
        raise error(errors.StrideError, f"{name} is not aligned to 4 bytes")


def matrix(name, a, R, D, write=False):
    """Validate an R x D float32 matrix view; return (address, ld) for the C call.

    Accepted layouts: C-contiguous, or a row stride that is a multiple of 4 bytes and >= D
    floats with unit column stride (a view of columns/rows of a larger row-major buffer)."""
    if a is None:
        raise error(errors.NullError, f"{name} is required")
    _ensure_array(name, a)
    if a.ndim != 2:
        raise error(errors.ShapeError, f"{name} must be 2-D (R, D), got shape {a.shape}")
    if a.shape != (R, D):
        raise error(errors.ShapeError, f"{name} has shape {a.shape}, expected ({R}, {D})")
    s0, s1 = a.strides
    if D > 1 and s1 != 4:
        raise error(errors.StrideError, f"{name} must have unit column stride (strides "
                                        f"{a.strides}); pass np.ascontiguousarray({name})")
    if R > 1:
        if s0 <= 0 or s0 % 4 or s0 // 4 < D:
            raise error(errors.StrideError, f"{name} has row stride {s0} bytes; it must be a "
                                            f"positive multiple of 4 bytes and >= D = {D} "
                                            f"floats; pass np.ascontiguousarray({name})")
        ld = s0 // 4
    else:
        ld = D
    if write and not a.flags.writeable:
        raise errors.ReadOnlyError(None, f"{name} is written by the call but is read-only")
    return a.ctypes.data, ld


def vector(name, a, n, write=False, allow_none=False):
    """Validate a C-contiguous float32 array of exactly n elements (any shape); return its
    address (None for a None array when allow_none)."""
    if a is None:
        if allow_none:
            return None
        raise error(errors.NullError, f"{name} is required")
    _ensure_array(name, a)
    if not a.flags.c_contiguous:
        raise error(errors.StrideError, f"{name} must be C-contiguous")
    if a.size != n:
        raise error(errors.ShapeError, f"{name} has {a.size} elements, expected {n}")
    if write and not a.flags.writeable:
        raise errors.ReadOnlyError(None, f"{name} is written by the call but is read-only")
    return a.ctypes.data


def rows_cols(name, a):
    """(R, D) of a 2-D float32 array, validated for type and rank."""
    if a is None:
        raise error(errors.NullError, f"{name} is required")
    _ensure_array(name, a)
    if a.ndim != 2:
        raise error(errors.ShapeError, f"{name} must be 2-D (R, D), got shape {a.shape}")
    return a.shape


def out_matrix(name, a, R, D, zeros=False):
    """Return a or a freshly allocated (R, D) float32 array."""
    if a is None:
        return np.zeros((R, D), np.float32) if zeros else np.empty((R, D), np.float32)
    return a


def flags_value(accumulate=False, accumulate_y=False, flags=0):
    from ._capi import SN_ACCUMULATE, SN_ACCUMULATE_Y
    f = int(flags)
    if accumulate:
        f |= SN_ACCUMULATE
    if accumulate_y:
        f |= SN_ACCUMULATE_Y
    return f
