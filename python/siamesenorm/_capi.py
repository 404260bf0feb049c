"""Low-level ctypes layer: finds and loads libsiamesenorm, declares every C prototype of
include/siamesenorm.h, the frozen structs, the enum values, and maps sn_status to exceptions.

Library discovery order (the first candidate that loads is used):
  1. the environment variable SIAMESENORM_LIBRARY (a path to the shared library); when set and
     it fails, that is an error (no other copy is tried);
  2. only when the package runs from a source checkout (not from a site-packages or
     dist-packages directory, i.e. not pip-installed): the build tree, from this package's
     directory upwards, every ``build*/src/`` and ``build*/`` directory holding
     ``libsiamesenorm.so*`` (newest file first; dangling links, e.g. the ``libsiamesenorm.so.0.3``
     link of a build directory configured but never built, are skipped);
  3. the system loader by soname, ``libsiamesenorm.so.<MAJOR>``, or ``.so.0.<MINOR>`` while the
     major is 0 (the version of this package): the directories of LD_LIBRARY_PATH, then the ld.so cache (a system install under
     /usr or /usr/local, after ldconfig), with no environment variable;
  4. pkg-config: ``pkg-config --libs-only-L siamesenorm`` and ``--variable=libdir`` (an install
     that PKG_CONFIG_PATH points at, e.g. a private prefix);
  5. ctypes.util.find_library("siamesenorm").
If none loads, LibraryNotFoundError lists everything tried. The loaded library's version must
match this package's (see _check_version).
"""

import ctypes
import numbers
import threading
import ctypes.util
import glob
import os
import shutil
import subprocess

from . import errors
from ._version import __version__

# The version of the C API this binding was written against: the package version, which
# python/meson.build checks against include/siamesenorm.h at configure time.
EXPECTED_MAJOR, EXPECTED_MINOR, EXPECTED_PATCH = (int(v) for v in __version__.split("."))

# ---- enums and flags (values from the header) ------------------------------------------------
SN_OK = 0
SN_ERR_NULL, SN_ERR_SHAPE, SN_ERR_STRIDE, SN_ERR_EPS, SN_ERR_SCALE, SN_ERR_ALIAS = 1, 2, 3, 4, 5, 6
SN_ERR_PLACEMENT, SN_ERR_NORM, SN_ERR_GROUP, SN_ERR_FLAGS, SN_ERR_INDEX = 7, 8, 9, 10, 11
SN_ERR_CONFIG, SN_ERR_UNSUPPORTED, SN_ERR_NOMEM, SN_ERR_NONFINITE = 12, 13, 14, 15
SN_ERR_ALIGN = 16
SN_ERR_DTYPE = 17
SN_ERR_STREAMS = 18
SN_DTYPE_F32, SN_DTYPE_BF16 = 0, 1
SN_NONFINITE_NONE, SN_NONFINITE_PARAMS = -1, -2

SN_ACCUMULATE = 1
SN_ACCUMULATE_Y = 2

SN_NORM_LAYERNORM, SN_NORM_RMSNORM, SN_NORM_IDENTITY, SN_NORM_SCALE = 0, 1, 2, 3
SN_AFFINE_SCALE_SHIFT, SN_AFFINE_SCALE, SN_AFFINE_NONE = 0, 1, 2
SN_PLACEMENT_PRE_NORM, SN_PLACEMENT_POST_NORM, SN_PLACEMENT_SIAMESE = 0, 1, 2
SN_PLACEMENT_SIAMESE_PAPER, SN_PLACEMENT_SIAMESE_HYBRID_PRE, SN_PLACEMENT_DEEPNORM = 3, 4, 5
SN_PLACEMENT_PERI_LN, SN_PLACEMENT_MIX_LN, SN_PLACEMENT_HYBRIDNORM = 6, 7, 8
SN_PLACEMENT_HYBRIDNORM_STAR = 9
SN_PLACEMENT_SPAN_NORM = 10
SN_PLACEMENT_HYPER_CONN = 11
SN_PLACEMENT_COUNT = 12  # the header's macro: one more than the last placement
SN_HC_MAX_RATE = 8  # Hyper-Connections' largest expansion rate (sn_net.hc_rate)
SN_SCALE_DEFAULT, SN_SCALE_NONE, SN_SCALE_EXPLICIT = 0, 1, 2
SN_ISA_AUTO, SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512 = 0, 1, 2, 3
SN_MAX_THREADS = 256

# typedef void (*sn_task_fn)(void *task_arg, int64_t i);
sn_task_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
# typedef void (*sn_parallel_for_fn)(void *user, int64_t n_tasks, sn_task_fn, void *task_arg);
sn_parallel_for_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, sn_task_fn,
                                      ctypes.c_void_p)


# ---- frozen structs --------------------------------------------------------------------------
class sn_norm(ctypes.Structure):
    """struct sn_norm (16 bytes): kind, affine, group, eps."""
    _fields_ = [("kind", ctypes.c_int32), ("affine", ctypes.c_int32),
                ("group", ctypes.c_int32), ("eps", ctypes.c_float)]


class sn_fuse(ctypes.Structure):
    """struct sn_fuse (48 bytes): the norms x, y, out."""
    _fields_ = [("x", sn_norm), ("y", sn_norm), ("out", sn_norm)]


class sn_net(ctypes.Structure):
    """struct sn_net: a network's norm placement (see the header)."""
    _fields_ = [("placement", ctypes.c_int32), ("n_sublayers", ctypes.c_int32),
                ("d", ctypes.c_int64), ("norm", sn_norm), ("input_norm", sn_norm),
                ("scale_rule", ctypes.c_int32), ("flags", ctypes.c_uint32),
                ("scales", ctypes.POINTER(ctypes.c_float)),
                ("mix_fraction", ctypes.c_float), ("act_dtype", ctypes.c_uint32),
                ("hc_rate", ctypes.c_int32), ("hc_dynamic", ctypes.c_uint32),
                ("reserved", ctypes.c_uint64 * 6)]


class sn_net_pass(ctypes.Structure):
    """struct sn_net_pass: one pass's buffers (raw addresses; NULL = None)."""
    _fields_ = [("rows", ctypes.c_int64), ("params", ctypes.c_void_p), ("acts", ctypes.c_void_p),
                ("grads", ctypes.c_void_p), ("work", ctypes.c_void_p)]


class sn_net_infer(ctypes.Structure):
    """struct sn_net_infer: an inference pass's buffers."""
    _fields_ = [("rows", ctypes.c_int64), ("params", ctypes.c_void_p),
                ("state", ctypes.c_void_p)]


assert ctypes.sizeof(sn_norm) == 16 and ctypes.sizeof(sn_fuse) == 48
assert ctypes.sizeof(sn_net) == 64 + 8 * 8
assert ctypes.sizeof(sn_net_pass) == 40 and ctypes.sizeof(sn_net_infer) == 24

# ---- prototypes ------------------------------------------------------------------------------
_st = ctypes.c_int          # sn_status (enum: int-sized)
_i64 = ctypes.c_int64
_i32 = ctypes.c_int32
_u32 = ctypes.c_uint32
_f = ctypes.c_float
_fp = ctypes.c_void_p       # float * / const float *: raw addresses from numpy
_vp = ctypes.c_void_p       # sn_ctx *
_i64p = ctypes.POINTER(ctypes.c_int64)
_np = ctypes.POINTER(sn_norm)
_fsp = ctypes.POINTER(sn_fuse)
_netp = ctypes.POINTER(sn_net)
_passp = ctypes.POINTER(sn_net_pass)
_infp = ctypes.POINTER(sn_net_infer)

PROTOTYPES = {
    "sn_version_number": (ctypes.c_uint, []),
    "sn_version_string": (ctypes.c_char_p, []),
    "sn_status_string": (ctypes.c_char_p, [_st]),
    "sn_ctx_create": (_st, [ctypes.POINTER(ctypes.c_void_p)]),
    "sn_ctx_destroy": (None, [_vp]),
    "sn_norm_query": (_st, [_np, _i64, _i64p, _i64p]),
    "sn_norm_init_params": (_st, [_np, _i64, _fp]),
    "sn_norm_forward": (_st, [_vp, _np, _i64, _i64, _fp, _i64, _fp, _fp, _i64, _fp]),
    "sn_norm_backward": (_st, [_vp, _np, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _fp, _fp,
                               _i64, _fp, _u32]),
    "sn_fuse_init": (_st, [_fsp, ctypes.c_int, ctypes.c_int, _f]),
    "sn_fuse_query": (_st, [_fsp, _i64, _i64p, _i64p]),
    "sn_fuse_init_params": (_st, [_fsp, _i64, _fp]),
    "sn_fuse_forward": (_st, [_vp, _fsp, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _fp, _i64,
                              _fp, _i64, _fp]),
    "sn_fuse_backward": (_st, [_vp, _fsp, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _i64, _fp,
                               _i64, _fp, _fp, _fp, _i64, _fp, _i64, _fp, _u32]),
    "sn_merge_forward": (_st, [_vp, _fsp, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _fp, _i64,
                               _fp]),
    "sn_merge_backward": (_st, [_vp, _fsp, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _i64, _fp,
                                _fp, _fp, _i64, _fp, _i64, _fp, _u32]),
    "sn_apply_forward": (_st, [_vp, _i64, _i64, _f, _fp, _i64, _fp, _i64, _fp, _i64, _fp,
                               _i64, _fp, _i64]),
    "sn_apply_backward": (_st, [_vp, _i64, _i64, _f, _fp, _i64, _fp, _i64, _fp, _i64, _u32]),
    "sn_split_forward": (_st, [_vp, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _i64]),
    "sn_split_backward": (_st, [_vp, _i64, _i64, _fp, _i64, _fp, _i64, _fp, _i64, _u32]),
    "sn_net_init": (_st, [_netp, ctypes.c_int, _i32, _i64, ctypes.c_int, _f]),
    "sn_net_check": (_st, [_netp]),
    "sn_net_scale": (_st, [_netp, _i32, ctypes.POINTER(ctypes.c_float)]),
    "sn_net_init_gain": (_st, [_netp, ctypes.POINTER(ctypes.c_float)]),
    "sn_net_sizes": (_st, [_netp, _i64p, _i64p, _i64p]),
    "sn_net_norm_at": (_st, [_netp, _i32, _i32, _np, _i64p]),
    "sn_net_conn_at": (_st, [_netp, _i32, _i64p, _i64p]),
    "sn_net_init_params": (_st, [_netp, _fp]),
    "sn_net_split": (_st, [_vp, _netp, _passp, _fp, _i64]),
    "sn_net_enter": (_st, [_vp, _netp, _passp, _i32, _fp, _i64]),
    "sn_net_exit": (_st, [_vp, _netp, _passp, _i32, _fp, _i64]),
    "sn_net_merge": (_st, [_vp, _netp, _passp, _fp, _i64]),
    "sn_net_merge_backward": (_st, [_vp, _netp, _passp, _fp, _i64]),
    "sn_net_exit_backward": (_st, [_vp, _netp, _passp, _i32, _fp, _i64, _u32]),
    "sn_net_enter_backward": (_st, [_vp, _netp, _passp, _i32, _fp, _i64]),
    "sn_net_split_backward": (_st, [_vp, _netp, _passp, _fp, _i64, _u32]),
    "sn_net_infer_sizes": (_st, [_netp, _i64p]),
    "sn_net_infer_split": (_st, [_vp, _netp, _infp, _fp, _i64]),
    "sn_net_infer_enter": (_st, [_vp, _netp, _infp, _i32, _fp, _i64]),
    "sn_net_infer_exit": (_st, [_vp, _netp, _infp, _i32, _fp, _i64]),
    "sn_net_infer_merge": (_st, [_vp, _netp, _infp, _fp, _i64]),
    "sn_placement_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sn_placement_from_name": (_st, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
}


# Execution-context controls (kernel path, threads).
PROTOTYPES.update({
    "sn_isa_available": (ctypes.c_int, [ctypes.c_int]),
    "sn_isa_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sn_ctx_set_isa": (_st, [_vp, ctypes.c_int]),
    "sn_ctx_isa": (ctypes.c_int, [_vp]),
    "sn_ctx_set_threads": (_st, [_vp, ctypes.c_int]),
    "sn_ctx_set_parallel_for": (_st, [_vp, sn_parallel_for_fn, ctypes.c_void_p, ctypes.c_int]),
    "sn_ctx_threads": (ctypes.c_int, [_vp]),
    "sn_scratch_bytes": (ctypes.c_size_t, [_vp, _i64]),
    "sn_ctx_set_scratch": (_st, [_vp, ctypes.c_void_p, ctypes.c_size_t]),
})

# Checked mode (NaN / infinity in the inputs).
PROTOTYPES.update({
    "sn_ctx_set_check_finite": (_st, [_vp, ctypes.c_int]),
    "sn_ctx_nonfinite_row": (ctypes.c_int64, [_vp]),
    "sn_find_nonfinite": (_st, [_i64, _i64, _fp, _i64, _i64p]),
})

# Norm roles (what each norm of a net is for) and the element-type names.
SN_ROLE_COUNT = 10  # the header's macros
SN_OPERAND_COUNT = 9
PROTOTYPES.update({
    "sn_net_norm_role": (_st, [_netp, _i32, _i32, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(ctypes.c_int)]),
    "sn_net_find_norm": (_st, [_netp, _i32, ctypes.c_int, ctypes.POINTER(ctypes.c_int32)]),
    "sn_norm_role_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sn_norm_operand_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sn_dtype_from_name": (_st, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
})


def _installed(here):
    """True when the package directory sits in an installed location (site-packages or
    dist-packages), where build trees of a source checkout are not searched."""
    return os.path.basename(os.path.dirname(here)) in ("site-packages", "dist-packages")


def _mtime(path):
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def _build_tree_candidates(here):
    """Shared libraries of build*/ directories from `here` upwards (newest first per level).
    Dangling links and anything that is not a regular file (after links) are skipped: meson
    leaves a dangling libsiamesenorm.so.0.MINOR link in a build directory configured but not built."""
    seen = set()
    d = here
    while True:
        found = []
        for pattern in ("build*/src/libsiamesenorm.so*", "build*/libsiamesenorm.so*"):
            found.extend(p for p in glob.glob(os.path.join(d, pattern)) if os.path.isfile(p))
        found.sort(key=_mtime, reverse=True)
        for p in found:
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                yield p
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent


def _pkg_config_candidates(soname):
    """soname in the library directories pkg-config reports for siamesenorm (none when
    pkg-config or the package is missing)."""
    exe = shutil.which("pkg-config")
    if exe is None:
        return
    dirs = []
    for args in (["--libs-only-L"], ["--variable=libdir"]):
        try:
            r = subprocess.run([exe, *args, "siamesenorm"], capture_output=True, text=True,
                               timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return
        if r.returncode != 0:
            return
        for word in r.stdout.split():
            d = word[2:] if word.startswith("-L") else word
            if d and d not in dirs:
                dirs.append(d)
    for d in dirs:
        p = os.path.join(d, soname)
        if os.path.isfile(p):
            yield p


def _candidates():
    """Yield (description, path-or-name) in discovery order."""
    env = os.environ.get("SIAMESENORM_LIBRARY")
    if env:
        yield "SIAMESENORM_LIBRARY", env
    here = os.path.dirname(os.path.abspath(__file__))
    if not _installed(here):
        for p in _build_tree_candidates(here):
            yield "build tree", p
    # the shared object's version: the major, or 0.MINOR while the major is 0 (meson.build)
    so_version = EXPECTED_MAJOR if EXPECTED_MAJOR else f"0.{EXPECTED_MINOR}"
    soname = f"libsiamesenorm.so.{so_version}"
    yield "system loader", soname
    for p in _pkg_config_candidates(soname):
        yield "pkg-config", p
    name = ctypes.util.find_library("siamesenorm")
    if name:
        yield "system loader (find_library)", name


# Integer ranges of the C parameter types: ctypes would wrap a larger Python int silently
# (2**32 passed as int32 becomes 0), so every integer argument is checked first.
_INT_RANGES = {
    ctypes.c_int64: (-2**63, 2**63 - 1), ctypes.c_int32: (-2**31, 2**31 - 1),
    ctypes.c_uint32: (0, 2**32 - 1), ctypes.c_uint64: (0, 2**64 - 1),
    ctypes.c_size_t: (0, 2**(8 * ctypes.sizeof(ctypes.c_size_t)) - 1),
}

# bf16 twins: the same arguments (matrices as raw addresses of uint16 bf16 bits)
for _name in ("sn_norm_forward", "sn_norm_backward", "sn_fuse_forward", "sn_fuse_backward",
              "sn_merge_forward", "sn_merge_backward", "sn_apply_forward", "sn_apply_backward",
              "sn_split_forward", "sn_split_backward", "sn_find_nonfinite"):
    PROTOTYPES[_name + "_bf16"] = PROTOTYPES[_name]
for _name in ("sn_net_split", "sn_net_enter", "sn_net_exit", "sn_net_merge",
              "sn_net_merge_backward", "sn_net_exit_backward", "sn_net_enter_backward",
              "sn_net_split_backward", "sn_net_infer_split", "sn_net_infer_enter",
              "sn_net_infer_exit", "sn_net_infer_merge"):
    PROTOTYPES[_name + "_bf16"] = PROTOTYPES[_name]
PROTOTYPES["sn_to_bf16"] = (_st, [_vp, _i64, _i64, _fp, _i64, _fp, _i64])
PROTOTYPES["sn_from_bf16"] = (_st, [_vp, _i64, _i64, _fp, _i64, _fp, _i64])
PROTOTYPES["sn_bf16_from_f32"] = (ctypes.c_uint16, [_f])
PROTOTYPES["sn_bf16_to_f32"] = (_f, [ctypes.c_uint16])


def check_int(value, ctype, what):
    """value as a Python int within the range of ctype; OverflowError (before any C call) when
    it is outside, TypeError when it is not an integer. The one check of every integer argument
    of the binding (indices, counts, sizes, enum values, flags): an int or a numpy integer;
    a bool, a float (even 2.0), a str or a numpy bool is refused, never converted. ctype None
    checks the type only (the caller checks a narrower range itself)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}")
    v = int(value)
    if ctype is None:
        return v
    lo, hi = _INT_RANGES[ctype]
    if not lo <= v <= hi:
        raise OverflowError(f"{what} = {v} is outside the range of the C type "
                            f"{ctype.__name__} [{lo}, {hi}]")
    return v


class _CtxGuard:
    """One Context's lock: the C library forbids sharing a context between concurrent calls,
    so calls on one context from several Python threads wait for each other; a call on a
    context from inside that context's own call (e.g. from its parallel-for hook on the same
    thread) raises instead of deadlocking or corrupting its state.

    The guard also owns the context's lifetime: handle is the sn_ctx address until close(),
    None after. close() takes the lock, so it waits for the call in flight; a call that was
    waiting for the lock, or comes later, finds handle None and raises ContextClosedError
    without reaching C. The address itself is read only under the lock: a freed sn_ctx is never
    passed to the library."""

    def __init__(self, handle):
        self.lock = threading.Lock()
        self.owner = None
        self.handle = handle

    def enter(self, what):
        """Acquire for a call on this thread; returns the live handle. Raises RuntimeError on
        a nested call from this thread, ContextClosedError once closed."""
        me = threading.get_ident()
        if self.owner == me:
            raise RuntimeError(f"{what}: this Context is already in a call on this thread "
                               "(a context serves one call at a time)")
        self.lock.acquire()
        if self.handle is None:
            self.lock.release()
            raise errors.ContextClosedError(None, f"{what}: this Context has been closed")
        self.owner = me
        return self.handle

    def leave(self):
        self.owner = None
        self.lock.release()

    def close(self, destroy):
        """Waits for the call in flight, then destroy(handle) once; idempotent. From inside
        this context's own call on this thread: RuntimeError (it would wait for itself)."""
        if self.owner == threading.get_ident():
            raise RuntimeError("close(): called from inside a call on this Context")
        with self.lock:
            h, self.handle = self.handle, None
            if h is not None:
                destroy(h)
                _ctx_guards.pop(h, None)


_ctx_guards = {}  # sn_ctx address -> _CtxGuard of a live Context (register / its close)


def register_ctx(handle):
    """The guard of a new context (kept by its Context; see _CtxGuard)."""
    g = _CtxGuard(handle)
    _ctx_guards[handle] = g
    return g


def unregister_ctx(handle):
    _ctx_guards.pop(handle, None)


def _guarded(fname, fn, argtypes):
    ints = [(k, t) for k, t in enumerate(argtypes) if t in _INT_RANGES]
    takes_ctx = bool(argtypes) and argtypes[0] is ctypes.c_void_p

    def call(*args):
        if len(args) == len(argtypes):
            for k, t in ints:
                if args[k] is not None:
                    check_int(args[k], t, f"{fname} argument {k + 1}")
        first = args[0] if takes_ctx and args else None
        # a Context's guard (what ctx_handle passes), or the guard of a raw registered address
        g = getattr(first, "_sn_guard", None)
        if g is None and isinstance(first, int):
            g = _ctx_guards.get(first)
        if g is None:
            return fn(*args)
        h = g.enter(fname)
        try:
            return fn(h, *args[1:])
        finally:
            g.leave()
    call.__name__ = fname
    call.raw = fn
    return call


def load_library():
    """Find, load and version-check libsiamesenorm; returns the configured ctypes.CDLL.
    The version is checked before any other function of the library is bound or called. A
    candidate of another version is skipped (and named in the error if nothing else loads),
    except SIAMESENORM_LIBRARY, which must be right."""
    tried, mismatch = [], None
    for how, path in _candidates():
        explicit = how == "SIAMESENORM_LIBRARY"
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            tried.append(f"  {how}: {path} ({exc})")
            if explicit:
                # An explicit request that fails is an error, not a reason to pick another copy.
                break
            continue
        if not (hasattr(lib, "sn_version_number") and hasattr(lib, "sn_version_string")):
            tried.append(f"  {how}: {path} (loaded, but has no sn_version_number: not "
                         "libsiamesenorm)")
            if explicit:
                break
            continue
        for fname in ("sn_version_number", "sn_version_string"):
            getattr(lib, fname).restype, getattr(lib, fname).argtypes = PROTOTYPES[fname]
        try:
            _check_version(lib, path)
        except errors.VersionMismatchError as exc:
            if explicit:
                raise
            mismatch = mismatch or exc
            tried.append(f"  {how}: {path} (loaded, but it is libsiamesenorm "
                         f"{lib.sn_version_string().decode()}; this package is {__version__})")
            continue
        missing = [n for n in PROTOTYPES if not hasattr(lib, n)]
        if missing:
            tried.append(f"  {how}: {path} (loaded, but lacks {', '.join(missing[:4])}...)")
            if explicit:
                break
            continue
        for fname, (restype, argtypes) in PROTOTYPES.items():
            fn = getattr(lib, fname)
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(lib, fname, _guarded(fname, fn, argtypes))
        lib.sn_path = _resolved_path(lib, path)
        return lib
    text = ("libsiamesenorm could not be loaded; tried, in order:\n" + "\n".join(tried)
            + f"\nInstall libsiamesenorm {EXPECTED_MAJOR}.{EXPECTED_MINOR} (meson install; a "
              "private prefix needs LD_LIBRARY_PATH or PKG_CONFIG_PATH to point into it), build "
              "it in a source checkout (meson setup build && meson compile -C build), or set "
              "SIAMESENORM_LIBRARY to the path of libsiamesenorm.so.")
    if mismatch is not None:
        raise errors.VersionMismatchError(None, text)
    raise errors.LibraryNotFoundError(None, text)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _resolved_path(lib, path):
    """The file a library loaded by name (e.g. the soname) came from, through dladdr; path
    itself when that is unavailable."""
    if os.sep in path:
        return path
    try:
        dladdr = ctypes.CDLL(None).dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        dladdr.restype = ctypes.c_int
        info = _DlInfo()
        addr = ctypes.cast(lib.sn_version_number.raw, ctypes.c_void_p)
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.fsdecode(info.dli_fname)
    except (AttributeError, OSError, TypeError, ValueError):
        pass
    return path


def version_compatible(number, major=None, minor=None):
    """Whether a library of version number (MAJOR * 10000 + MINOR * 100 + PATCH) serves this
    package (version major.minor.*): the same major version, and, while the major version is 0
    (when a minor version may change the ABI, see the header's ABI policy), the same minor
    version; from 1.0 on, a minor version at least the package's. The patch level may differ."""
    major = EXPECTED_MAJOR if major is None else major
    minor = EXPECTED_MINOR if minor is None else minor
    lib_major, lib_minor = number // 10000, (number // 100) % 100
    if lib_major != major:
        return False
    return lib_minor == minor if major == 0 else lib_minor >= minor


def _check_version(lib, path):
    number = int(lib.sn_version_number())
    string = lib.sn_version_string().decode()
    if not version_compatible(number):
        need = (f"{EXPECTED_MAJOR}.{EXPECTED_MINOR}.x" if EXPECTED_MAJOR == 0 else
                f"{EXPECTED_MAJOR}.y.x with y >= {EXPECTED_MINOR}")
        raise errors.VersionMismatchError(
            None, f"{path} is libsiamesenorm {string} ({number}), but this siamesenorm package "
                  f"is {__version__} and needs libsiamesenorm {need} (while the major version "
                  "is 0, a minor version may change the C ABI). Install the matching library or "
                  "package version, or point SIAMESENORM_LIBRARY at a matching build.")


lib = load_library()


def status_string(status):
    """The library's description of a status code (sn_status_string)."""
    return lib.sn_status_string(check_int(status, ctypes.c_int, "status")).decode()


def check(status, what):
    """Raise the matching SiameseNormError when a C call returned a nonzero status."""
    if status != SN_OK:
        raise errors.error_for_status(status, status_string(status), f"{what} failed")


def error(cls, detail):
    """A Python-side validation error carrying the library's text for cls.status."""
    msg = status_string(cls.status) if cls.status is not None else None
    return cls(msg, detail)


def optional(name):
    """The bound function `name`, or UnsupportedError when the library lacks it (for calls
    a future version of the binding may bind optionally)."""
    fn = getattr(lib, name, None)
    if fn is None:
        raise errors.UnsupportedError(status_string(SN_ERR_UNSUPPORTED),
                                      f"{lib.sn_path} does not export {name}")
    return fn
