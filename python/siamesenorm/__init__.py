"""siamesenorm: Python binding of libsiamesenorm (SiameseNorm dual-stream normalisation).

Pure Python over ctypes; arrays are numpy float32, shape (R, D), C-contiguous or row-strided
views (unit column stride, row stride >= D). The shared library is found through
SIAMESENORM_LIBRARY, then (in a source checkout only) the build tree, then the system loader
(libsiamesenorm.so.MAJOR, .so.0.MINOR while 0.x), then pkg-config (see siamesenorm._capi). The package version
(__version__) is the C library's: a library of another MAJOR.MINOR raises
VersionMismatchError at import (the patch level may differ).

C API -> Python:
    sn_version_number / sn_version_string   version_number() / version_string()
    sn_status_string                        status_string(code)
    sn_ctx_create / sn_ctx_destroy          Context() / Context.close()
    sn_ctx_set_isa / sn_ctx_isa             Context.set_isa(name) / Context.isa
    sn_ctx_set_threads / sn_ctx_threads     Context.set_threads(n) / Context.threads
    sn_ctx_set_parallel_for                 Context.set_parallel_for(fn, n)
    sn_scratch_bytes / sn_ctx_set_scratch   Context.set_scratch(D)
    sn_ctx_set_check_finite                 Context.set_check_finite(on)
    sn_ctx_nonfinite_row                    Context.nonfinite_row
    sn_find_nonfinite                       find_nonfinite(x)
    sn_isa_available / sn_isa_name          isa_available(name) / isa_name(code)
    sn_norm_query / _init_params            Norm.query(D) / Norm.init_params(D)
    sn_norm_forward / _backward             Norm.forward(...) / Norm.backward(...)
    sn_fuse_init                            Fuse.uniform(kind, affine, eps)
    sn_fuse_query / _init_params            Fuse.query(D) / Fuse.init_params(D)
    sn_fuse_forward / _backward             Fuse.forward(...) / Fuse.backward(...)
    sn_merge_forward / _backward            Fuse.merge_forward(...) / Fuse.merge_backward(...)
    sn_apply_forward / _backward            apply_forward(...) / apply_backward(...)
    sn_split_forward / _backward            split_forward(...) / split_backward(...)
    the `_bf16` primitives                  the same, on uint16 arrays of bf16 bits
    sn_to_bf16 / sn_from_bf16               to_bf16(x) / from_bf16(b)
    sn_net_init / sn_net_check              Net(...) / Net.check()
    sn_net_scale / _sizes / _norm_at        Net.scale(i) / Net.sizes() / Net.norm_at(i, j)
    sn_net_init_gain                        Net.init_gain()
    sn_net_init_params                      Net.init_params()
    sn_net_conn_at                          Net.conn_at(i) / conn_views(i) / conn_grad_views(i)
    sn_net_split / _enter / _exit / _merge  Net.split / enter / exit / merge
    sn_net_*_backward                       Net.merge_backward / exit_backward /
                                            enter_backward / split_backward
Not wrapped: sn_net_infer_* (stateless inference; Net's training forward gives the same outputs
bit for bit, in buffers that grow with S), and sn_placement_from_name, sn_dtype_name,
sn_dtype_from_name (the package takes names itself: net.PLACEMENTS from sn_placement_name,
act_dtype "f32" / "bf16").
Errors raise SiameseNormError subclasses carrying .status and the library's message (see
siamesenorm.errors for the exceptions of Python's own: TypeError, OverflowError, ValueError).
The PyTorch adapter lives in siamesenorm.torch_adapter (imported on demand; needs torch), the
state-dict mapping to and from the official SiameseNorm code's names in siamesenorm.official.
"""

from . import _capi
from ._version import __version__
from ._capi import (SN_ACCUMULATE, SN_ACCUMULATE_Y, SN_NORM_LAYERNORM, SN_NORM_RMSNORM,
                    SN_NORM_IDENTITY, SN_NORM_SCALE,
                    SN_AFFINE_SCALE_SHIFT, SN_AFFINE_SCALE, SN_AFFINE_NONE,
                    SN_PLACEMENT_PRE_NORM, SN_PLACEMENT_POST_NORM, SN_PLACEMENT_SIAMESE,
                    SN_PLACEMENT_SIAMESE_PAPER, SN_PLACEMENT_SIAMESE_HYBRID_PRE,
                    SN_PLACEMENT_DEEPNORM, SN_PLACEMENT_PERI_LN, SN_PLACEMENT_MIX_LN,
                    SN_PLACEMENT_HYBRIDNORM, SN_PLACEMENT_HYBRIDNORM_STAR, SN_PLACEMENT_SPAN_NORM,
                    SN_PLACEMENT_HYPER_CONN, SN_HC_MAX_RATE,
                    SN_SCALE_DEFAULT, SN_SCALE_NONE, SN_SCALE_EXPLICIT, SN_ISA_AUTO, SN_ISA_SCALAR,
                    SN_ISA_AVX2, SN_ISA_AVX512, SN_MAX_THREADS, SN_NONFINITE_NONE,
                    SN_NONFINITE_PARAMS, status_string)
from .errors import *  # noqa: F401,F403  (the exception classes)
from .errors import __all__ as _errors_all
from .norm import Context, Norm, isa_available, isa_name, default_isa, find_nonfinite
from .streams import Fuse, apply_forward, apply_backward, split_forward, split_backward
from .net import Net
from .convert import to_bf16, from_bf16, bf16_round

#: The path of the loaded shared library.
library_path = _capi.lib.sn_path


def version_number():
    """sn_version_number: MAJOR * 10000 + MINOR * 100 + PATCH of the loaded library."""
    return int(_capi.lib.sn_version_number())


def version_string():
    """sn_version_string: the loaded library's version, e.g. "0.2.0"."""
    return _capi.lib.sn_version_string().decode()


__all__ = ["to_bf16", "from_bf16", "bf16_round", "Context", "find_nonfinite", "SN_NONFINITE_NONE", "SN_NONFINITE_PARAMS", "isa_available", "isa_name", "default_isa", "Norm", "Fuse", "Net", "apply_forward", "apply_backward",
           "split_forward", "split_backward", "version_number", "version_string",
           "status_string", "library_path", "SN_ACCUMULATE", "SN_ACCUMULATE_Y",
           "SN_NORM_LAYERNORM", "SN_NORM_RMSNORM", "SN_NORM_IDENTITY", "SN_NORM_SCALE",
           "SN_AFFINE_SCALE_SHIFT",
           "SN_AFFINE_SCALE", "SN_AFFINE_NONE", "SN_PLACEMENT_PRE_NORM", "SN_PLACEMENT_POST_NORM",
           "SN_PLACEMENT_SIAMESE", "SN_SCALE_DEFAULT", "SN_SCALE_NONE",
           "SN_SCALE_EXPLICIT", "SN_PLACEMENT_SIAMESE_PAPER", "SN_PLACEMENT_SIAMESE_HYBRID_PRE",
           "SN_PLACEMENT_DEEPNORM", "SN_PLACEMENT_PERI_LN", "SN_PLACEMENT_MIX_LN",
           "SN_PLACEMENT_HYBRIDNORM", "SN_PLACEMENT_HYBRIDNORM_STAR", "SN_PLACEMENT_SPAN_NORM",
           "SN_PLACEMENT_HYPER_CONN", "SN_HC_MAX_RATE", "SN_ISA_AUTO",
           "SN_ISA_SCALAR", "SN_ISA_AVX2", "SN_ISA_AVX512", "SN_MAX_THREADS"] + list(_errors_all)
