"""Exceptions raised by the siamesenorm binding.

Every error is a :class:`SiameseNormError`. Errors reported by the C library carry its status
code (``.status``) and the library's own description (``.library_message``, from
``sn_status_string``). Checks the binding makes in Python before calling (dtype, shape, strides)
raise the same classes with the status the C library would have used, so one ``except`` clause
covers both; the few conditions the C API cannot express (a numpy dtype, a read-only array) have
``status`` None. A StrideError for a layout the C API has no word for (a column stride other
than one element, a non-contiguous vector) keeps status 3 but has ``library_message`` None: the
library's text for 3 speaks of a row stride smaller than D, which would misdescribe it.

Every array argument's error is a SiameseNormError (numpy arrays and, in the torch adapter,
tensors: another dtype or device is a DTypeError). Scalar arguments of the wrong Python type
raise the built-in TypeError (an integer argument given a bool, a float or a str; ctx not a
Context), an integer outside its C type OverflowError, an unknown name (placement, norm kind)
ValueError: Python's own conventions, before anything reaches C.
"""

__all__ = [
    "SiameseNormError", "NullError", "ShapeError", "StrideError", "EpsError", "ScaleError",
    "AliasError", "PlacementError", "NormError", "GroupError", "FlagsError", "IndexOutOfRange",
    "ConfigError", "UnsupportedError", "NoMemError", "NonFiniteError", "AlignError", "DTypeError",
    "StreamsError", "ReadOnlyError",
    "ContextClosedError", "LibraryNotFoundError", "VersionMismatchError", "error_for_status",
]


class SiameseNormError(Exception):
    """Base class of every error of the binding.

    Attributes:
        status: the sn_status code (int), or None for binding-only conditions.
        library_message: the C library's text for ``status`` (sn_status_string), or None.
        detail: what the binding adds (which argument, which call), or None.
    """

    status = None

    def __init__(self, library_message=None, detail=None, status=None):
        if status is not None:
            self.status = status
        self.library_message = library_message
        self.detail = detail
        parts = [p for p in (library_message, detail) if p]
        super().__init__(": ".join(parts) if parts else self.__class__.__name__)


class NullError(SiameseNormError, ValueError):
    """SN_ERR_NULL: a required buffer is missing."""
    status = 1


class ShapeError(SiameseNormError, ValueError):
    """SN_ERR_SHAPE: R, D or the number of sub-layers is invalid, or an array has the wrong shape."""
    status = 2


class StrideError(SiameseNormError, ValueError):
    """SN_ERR_STRIDE: a row stride is smaller than D, or an array's layout is not supported
    (then library_message is None and the message says what is wrong)."""
    status = 3


class EpsError(SiameseNormError, ValueError):
    """SN_ERR_EPS: eps is <= 0, NaN or infinite."""
    status = 4


class ScaleError(SiameseNormError, ValueError):
    """SN_ERR_SCALE: a residual scale c is <= 0, NaN or infinite."""
    status = 5


class AliasError(SiameseNormError, ValueError):
    """SN_ERR_ALIAS: a written buffer overlaps another buffer in a forbidden way."""
    status = 6


class PlacementError(SiameseNormError, ValueError):
    """SN_ERR_PLACEMENT: unknown placement."""
    status = 7


class NormError(SiameseNormError, ValueError):
    """SN_ERR_NORM: unknown norm kind or affine mode, or one not allowed here."""
    status = 8


class GroupError(SiameseNormError, ValueError):
    """SN_ERR_GROUP: group size negative or not dividing D (or nonzero where not allowed)."""
    status = 9


class FlagsError(SiameseNormError, ValueError):
    """SN_ERR_FLAGS: unknown bits in a flags argument."""
    status = 10


class IndexOutOfRange(SiameseNormError, IndexError):
    """SN_ERR_INDEX: sub-layer (or norm) index out of range."""
    status = 11


class ConfigError(SiameseNormError, ValueError):
    """SN_ERR_CONFIG: inconsistent configuration."""
    status = 12


class UnsupportedError(SiameseNormError, NotImplementedError):
    """SN_ERR_UNSUPPORTED: valid request not available in this build or CPU."""
    status = 13


class NoMemError(SiameseNormError, MemoryError):
    """SN_ERR_NOMEM: the library could not allocate, or the binding could not allocate a
    buffer it sizes itself (a Net's params and acts, a Context's scratch)."""
    status = 14


class NonFiniteError(SiameseNormError, FloatingPointError):
    """SN_ERR_NONFINITE: checked mode found a NaN or an infinity in an input; the context's
    nonfinite_row says where."""
    status = 15


class AlignError(SiameseNormError, ValueError):
    """SN_ERR_ALIGN: a buffer is not aligned to its element size (float32 4 bytes, bf16 2)."""
    status = 16


class DTypeError(SiameseNormError, TypeError):
    """SN_ERR_DTYPE, and what the binding raises before any C call: an array that is neither
    float32 nor uint16 (bf16 bits), matrices of one call with different dtypes, or a Net pass
    call whose dtype is not the net's act_dtype."""
    status = 17


class StreamsError(SiameseNormError, ValueError):
    """SN_ERR_STREAMS: Hyper-Connections' expansion rate (hc_rate) is outside
    1 .. SN_HC_MAX_RATE."""
    status = 18


class ReadOnlyError(SiameseNormError, ValueError):
    """An output array is not writeable. status is None."""


class ContextClosedError(SiameseNormError, ValueError):
    """A call on a Context that is closed: after close(), or while it waited for the Context
    (which serves one call at a time) another thread closed it. Nothing reached the library.
    status is None."""


class LibraryNotFoundError(SiameseNormError, OSError):
    """The shared library libsiamesenorm could not be found or loaded. status is None."""


class VersionMismatchError(SiameseNormError, ImportError):
    """The library's version does not serve this package: another major version, or (while
    the major version is 0) another minor version. status is None."""


_BY_STATUS = {cls.status: cls for cls in (
    NullError, ShapeError, StrideError, EpsError, ScaleError, AliasError, PlacementError,
    NormError, GroupError, FlagsError, IndexOutOfRange, ConfigError, UnsupportedError,
    NoMemError, NonFiniteError, AlignError, DTypeError, StreamsError)}


def error_for_status(status, library_message, detail=None):
    """Build the exception for a nonzero sn_status (unknown codes give SiameseNormError)."""
    cls = _BY_STATUS.get(int(status))
    if cls is None:
        return SiameseNormError(library_message, detail, status=int(status))
    return cls(library_message, detail)
