"""Argument checks shared by the wrappers: every array is validated in Python before the C call
(the C library validates again and reports what Python cannot see, e.g. aliasing)."""

import numpy as np

from . import errors
from ._capi import error

_F32 = np.dtype(np.float32)
# bf16 matrices are numpy uint16 arrays holding the bf16 bits (numpy has no bfloat16);
# to_bf16 / from_bf16 convert
BF16 = np.dtype(np.uint16)


def _ensure_array(name, a, dtype=_F32):
    if not isinstance(a, np.ndarray):
        raise errors.DTypeError(None, f"{name} must be a numpy.ndarray of {_dname(dtype)}, "
                                      f"got {type(a).__name__}")
    if a.dtype != dtype:
        raise errors.DTypeError(None, f"{name} must have dtype {_dname(dtype)}, got {a.dtype}")
    if not a.flags.aligned:  # SN_ERR_ALIGN, what the library returns for it
        raise error(errors.AlignError, f"{name} is not aligned to {dtype.itemsize} bytes "
                                       f"(address {a.ctypes.data:#x}, strides {a.strides}); "
                                       f"pass np.ascontiguousarray({name})")


def _layout_error(detail):
    """StrideError (status SN_ERR_STRIDE) for a layout the C API cannot express (a column
    stride other than one element, a non-contiguous vector): the library's text for the status
    ("... row stride: smaller than D") would misdescribe it, so only the detail is said."""
    return errors.StrideError(None, f"unsupported array layout: {detail}")


def _dname(dtype):
    return "uint16 (bf16 bits)" if dtype == BF16 else "float32"


def call_dtype(name, a):
    """The element type of a call whose first matrix is a: float32, or uint16 holding bf16;
    every other matrix of the call must have the same (checked by matrix())."""
    if isinstance(a, np.ndarray) and a.dtype == BF16:
        return BF16
    _ensure_array(name, a)
    return _F32


def matrix(name, a, R, D, write=False, dtype=_F32):
    """Validate an R x D matrix view of dtype (float32, or uint16 bf16 bits); return (address,
    ld) for the C call, ld in elements.

    Accepted layouts: C-contiguous, or a row stride that is a multiple of the element size and
    >= D elements with unit column stride (a view of columns/rows of a larger buffer)."""
    if a is None:
        raise error(errors.NullError, f"{name} is required")
    _ensure_array(name, a, dtype)
    es = dtype.itemsize
    if a.ndim != 2:
        raise error(errors.ShapeError, f"{name} must be 2-D (R, D), got shape {a.shape}")
    if a.shape != (R, D):
        raise error(errors.ShapeError, f"{name} has shape {a.shape}, expected ({R}, {D})")
    if R < 1 or D < 1:  # the library's SN_ERR_SHAPE for R <= 0 or D <= 0
        raise error(errors.ShapeError, f"{name} has shape {a.shape}: R (rows) and D (columns) "
                                       "must be >= 1")
    s0, s1 = a.strides
    if D > 1 and s1 != es:
        raise _layout_error(f"{name} must have unit column stride ({es} bytes), got strides "
                            f"{a.strides}; pass np.ascontiguousarray({name})")
    if R > 1:
        if s0 % es:  # numpy flags such an array unaligned first: AlignError above
            raise _layout_error(f"{name} has row stride {s0} bytes, not a multiple of {es}; "
                                f"pass np.ascontiguousarray({name})")
        if s0 // es < D:  # what the library's SN_ERR_STRIDE says: a row stride smaller than D
            raise error(errors.StrideError, f"{name} has row stride {s0} bytes = {s0 // es} "
                                            f"elements, D = {D} (rows must not overlap, nor "
                                            f"run backwards); pass np.ascontiguousarray({name})")
        ld = s0 // es
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
        raise _layout_error(f"{name} must be C-contiguous (strides {a.strides}); pass "
                            f"np.ascontiguousarray({name})")
    if a.size != n:
        raise error(errors.ShapeError, f"{name} has {a.size} elements, expected {n}")
    if write and not a.flags.writeable:
        raise errors.ReadOnlyError(None, f"{name} is written by the call but is read-only")
    return a.ctypes.data


def rows_cols(name, a, dtype=None):
    """(R, D) of a 2-D array of dtype (None: float32 or bf16, as call_dtype), validated for
    type and rank."""
    if a is None:
        raise error(errors.NullError, f"{name} is required")
    _ensure_array(name, a, call_dtype(name, a) if dtype is None else dtype)
    if a.ndim != 2:
        raise error(errors.ShapeError, f"{name} must be 2-D (R, D), got shape {a.shape}")
    return a.shape


def alloc(n, dtype, what, zeros=False):
    """A new 1-D array of n elements; NoMemError (status SN_ERR_NOMEM, a MemoryError) when numpy
    cannot allocate it (numpy's own MemoryError, or its ValueError for a size beyond its
    limits), before anything reaches C."""
    try:
        return np.zeros(n, dtype) if zeros else np.empty(n, dtype)
    except (MemoryError, ValueError) as exc:
        raise error(errors.NoMemError, f"{what}: {n} elements of {np.dtype(dtype)} could not "
                                       f"be allocated ({exc})") from None


def out_matrix(name, a, R, D, zeros=False, dtype=_F32):
    """Return a or a freshly allocated (R, D) array of dtype."""
    if a is None:
        return np.zeros((R, D), dtype) if zeros else np.empty((R, D), dtype)
    return a


def fn(lib, name, dtype):
    """The C function of a call for its element type: name, or name_bf16."""
    return getattr(lib, name + "_bf16" if dtype == BF16 else name)


def flags_value(accumulate=False, accumulate_y=False, flags=0):
    import ctypes
    from ._capi import SN_ACCUMULATE, SN_ACCUMULATE_Y, check_int
    f = check_int(flags, ctypes.c_uint32, "flags")
    if accumulate:
        f |= SN_ACCUMULATE
    if accumulate_y:
        f |= SN_ACCUMULATE_Y
    return f
