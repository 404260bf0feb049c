"""Context and single-norm wrappers: sn_ctx_*, sn_norm_query, sn_norm_init_params,
sn_norm_forward, sn_norm_backward."""

import ctypes
import numbers

import numpy as np

from . import _capi
from . import errors
from . import _arrays as A
from ._capi import lib, check

KINDS = {"layernorm": _capi.SN_NORM_LAYERNORM, "rmsnorm": _capi.SN_NORM_RMSNORM,
         "identity": _capi.SN_NORM_IDENTITY, "scale": _capi.SN_NORM_SCALE}
AFFINES = {"scale_shift": _capi.SN_AFFINE_SCALE_SHIFT, "scale": _capi.SN_AFFINE_SCALE,
           "none": _capi.SN_AFFINE_NONE}


def _code(table, value, what):
    if isinstance(value, str):
        try:
            return table[value.lower()]
        except KeyError:
            raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(table)}") from None
    # raw enum values pass through (the C library validates them), integers only
    return _capi.check_int(value, ctypes.c_int, what)


def ctx_handle(ctx):
    """What a call passes as its sn_ctx: None (NULL: defaults), or the Context's guard, which
    the call resolves to the live sn_ctx pointer under the Context's lock (see
    _capi._CtxGuard: a Context closed meanwhile raises ContextClosedError, never frees under a
    call)."""
    if ctx is None:
        return None
    if not isinstance(ctx, Context):
        raise TypeError("ctx must be a siamesenorm.Context or None")
    if ctx.handle is None:
        raise errors.ContextClosedError(None, "this Context has been closed")
    return ctx._ref


class _CtxRef:
    """A Context's stand-in in call arguments: the guarded calls (_capi._guarded) take its
    guard's lock and pass the live sn_ctx address (a closed one raises before any C call)."""
    __slots__ = ("_sn_guard",)

    def __init__(self, guard):
        self._sn_guard = guard


ISAS = {"auto": _capi.SN_ISA_AUTO, "scalar": _capi.SN_ISA_SCALAR, "avx2": _capi.SN_ISA_AVX2,
        "avx512": _capi.SN_ISA_AVX512}


def find_nonfinite(x):
    """sn_find_nonfinite (sn_find_nonfinite_bf16 for a uint16 bf16 array): the first row of the
    (R, D) array x holding a NaN or an infinity, or -1."""
    R, D = A.rows_cols("x", x)
    dt = A.call_dtype("x", x)
    px, ldx = A.matrix("x", x, R, D, dtype=dt)
    row = ctypes.c_int64(0)
    check(A.fn(lib, "sn_find_nonfinite", dt)(R, D, px, ldx, ctypes.byref(row)),
          "sn_find_nonfinite")
    return int(row.value)


def isa_available(isa):
    """sn_isa_available: True if calls can run on kernel path isa ("auto", "scalar", "avx2",
    "avx512" or the SN_ISA_* value) in this build on this CPU."""
    return bool(_capi.optional("sn_isa_available")(_code(ISAS, isa, "kernel path")))


def isa_name(isa):
    """sn_isa_name: the library's lower-case name of a kernel path."""
    return _capi.optional("sn_isa_name")(_capi.check_int(isa, ctypes.c_int,
                                                         "kernel path")).decode()


def default_isa():
    """sn_ctx_isa(NULL): the name of the kernel path calls with ctx=None run on."""
    return isa_name(_capi.optional("sn_ctx_isa")(None))


class Context:
    """An execution context (sn_ctx_create / sn_ctx_destroy). Optional everywhere: every call
    takes ctx=None for defaults. One context serves one call at a time: calls on it from
    several threads wait for each other. Use as a context manager or call close(); it is also
    freed when garbage-collected.

    close() from another thread waits for the call in flight to finish, then frees the context;
    calls still waiting for it, and any later call, raise ContextClosedError (nothing reaches
    the library). close() from inside a call on this context (its parallel-for hook, on the
    calling thread) raises RuntimeError.

    Context(isa=None, threads=None) applies set_isa / set_threads after creation (the library
    also reads the SN_ISA and SN_THREADS environment variables at creation)."""

    def __init__(self, isa=None, threads=None):
        h = ctypes.c_void_p()
        self._hook = None
        self.handle = None
        check(lib.sn_ctx_create(ctypes.byref(h)), "sn_ctx_create")
        self._guard = _capi.register_ctx(h.value)  # calls on this context are serialised
        self._ref = _CtxRef(self._guard)
        self.handle = h.value
        if isa is not None:
            self.set_isa(isa)
        if threads is not None:
            self.set_threads(threads)

    def close(self):
        """Free the context, joining its worker threads (sn_ctx_destroy), once the call in
        flight (from another thread) has returned. Idempotent."""
        g = getattr(self, "_guard", None)
        if g is not None:
            g.close(lib.sn_ctx_destroy.raw)
        self.handle = None
        self._hook = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _h(self):
        if self.handle is None:
            raise errors.ContextClosedError(None, "this Context has been closed")
        return self._ref

    def set_isa(self, isa):
        """sn_ctx_set_isa: force the kernel path ("auto", "scalar", "avx2", "avx512");
        UnsupportedError when this build or CPU lacks it."""
        check(_capi.optional("sn_ctx_set_isa")(self._h(), _code(ISAS, isa, "kernel path")),
              "sn_ctx_set_isa")

    @property
    def isa(self):
        """sn_ctx_isa: the name of the resolved kernel path calls with this context run on."""
        return isa_name(_capi.optional("sn_ctx_isa")(self._h()))

    def set_check_finite(self, on=True):
        """sn_ctx_set_check_finite: in checked mode every call with this context first scans
        its input arrays and parameters and raises NonFiniteError (writing nothing) when one
        holds a NaN or an infinity; nonfinite_row then says where."""
        check(lib.sn_ctx_set_check_finite(self._h(), 1 if on else 0), "sn_ctx_set_check_finite")

    @property
    def nonfinite_row(self):
        """sn_ctx_nonfinite_row: the first row with a NaN/infinity found by the last checked
        call, -2 (SN_NONFINITE_PARAMS) for the parameters only, -1 (SN_NONFINITE_NONE) for none."""
        return int(lib.sn_ctx_nonfinite_row(self._h()))

    def set_scratch(self, D):
        """sn_scratch_bytes + sn_ctx_set_scratch: give the context the scratch its threads need
        for rows of D columns (a numpy buffer this object keeps alive). Returns its size.
        D must be an integer >= 1 (ShapeError otherwise, as the library's D <= 0; also when the
        size does not fit in a size_t: sn_scratch_bytes' SIZE_MAX); NoMemError when the buffer
        cannot be allocated. On any error the context keeps its previous scratch."""
        D = _capi.check_int(D, ctypes.c_int64, "D")
        if D < 1:
            raise _capi.error(errors.ShapeError, f"set_scratch: D = {D}, must be >= 1")
        n = int(lib.sn_scratch_bytes(self._h(), D))
        if n >= _capi._INT_RANGES[ctypes.c_size_t][1]:
            raise _capi.error(errors.ShapeError, f"set_scratch: the scratch for D = {D} does not "
                                                 "fit in a size_t (sn_scratch_bytes: SIZE_MAX)")
        buf = A.alloc(max(n, 1), np.uint8, f"set_scratch(D = {D})")
        check(lib.sn_ctx_set_scratch(self._h(), buf.ctypes.data_as(ctypes.c_void_p), n),
              "sn_ctx_set_scratch")
        self._scratch = buf  # the context now points into it: replace the old one only now
        return n

    def set_threads(self, n):
        """sn_ctx_set_threads: run calls over n threads of the built-in pool (0: all CPUs)."""
        check(_capi.optional("sn_ctx_set_threads")(self._h(),
                                                   _capi.check_int(n, ctypes.c_int, "threads")),
              "sn_ctx_set_threads")
        self._hook = None

    @property
    def threads(self):
        """sn_ctx_threads: the number of threads (or hook pieces) calls use."""
        return int(_capi.optional("sn_ctx_threads")(self._h()))

    def set_parallel_for(self, fn, n=1):
        """sn_ctx_set_parallel_for with a Python hook: fn(n_tasks, run) must call run(i)
        exactly once for each i in range(n_tasks) (on any threads) and return when all are
        done; n is the width of the caller's pool. fn None returns to single-threaded
        execution. run(i) raises IndexError for i outside range(n_tasks) (nothing reaches the
        library). If fn raises, the tasks it did not run are run serially (so the library
        call completes) and the exception is printed."""
        setter = _capi.optional("sn_ctx_set_parallel_for")
        n = _capi.check_int(n, ctypes.c_int, "n")
        if fn is None:
            check(setter(self._h(), _capi.sn_parallel_for_fn(), None, n),
                  "sn_ctx_set_parallel_for")
            self._hook = None
            return

        def hook(user, n_tasks, task, task_arg):
            done = [False] * n_tasks

            def run(i):
                # an index outside [0, n_tasks) never reaches C (nor wraps around in done[])
                if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                    raise TypeError(f"run() takes a task index, got {type(i).__name__}")
                if not 0 <= i < n_tasks:
                    raise IndexError(f"run({i}): task index outside [0, {n_tasks})")
                i = int(i)
                if not done[i]:
                    done[i] = True
                    task(task_arg, i)
            try:
                fn(n_tasks, run)
            except BaseException:  # the C caller cannot take an exception: finish the work
                import traceback
                traceback.print_exc()
            for i in range(n_tasks):
                run(i)

        cb = _capi.sn_parallel_for_fn(hook)
        check(setter(self._h(), cb, None, n), "sn_ctx_set_parallel_for")
        self._hook = cb  # the C context keeps the pointer: keep the callback alive


class _ParamBlock:
    """query / init_params / empty_stats of a norm or a fuse: the same calls on a struct
    (to_struct) under the C names sn_<_c>_query and sn_<_c>_init_params."""

    _c = None  # "norm" or "fuse"

    def query(self, D):
        """sn_<norm|fuse>_query: (n_params, stats_per_row) for rows of D columns."""
        n, s = ctypes.c_int64(), ctypes.c_int64()
        name = f"sn_{self._c}_query"
        D = _capi.check_int(D, ctypes.c_int64, "D")
        check(getattr(lib, name)(ctypes.byref(self.to_struct()), D, ctypes.byref(n),
                                 ctypes.byref(s)), name)
        return n.value, s.value

    def init_params(self, D, params=None):
        """sn_<norm|fuse>_init_params: gammas 1, betas 0 into params (allocated when None)."""
        n, _ = self.query(D)
        D = _capi.check_int(D, ctypes.c_int64, "D")
        if params is None:
            params = np.empty(n, np.float32)
        p = A.vector("params", params, n, write=True, allow_none=(n == 0))
        name = f"sn_{self._c}_init_params"
        check(getattr(lib, name)(ctypes.byref(self.to_struct()), D, p), name)
        return params

    def empty_stats(self, R, D):
        """A (R, stats_per_row) float32 array for a training forward."""
        return np.empty((R, self.query(D)[1]), np.float32)


class Norm(_ParamBlock):
    """One normalisation (struct sn_norm): LayerNorm, RMSNorm, identity or scale.

    Args:
        kind: "layernorm", "rmsnorm", "identity", "scale" (N(v) = gamma * v + beta, no
            normalisation; e.g. hybrid_pre's learned c1), or the SN_NORM_* value.
        affine: "scale_shift" (gamma and beta), "scale" (gamma only), "none" (no parameters),
            or the SN_AFFINE_* value. Default: scale_shift for LayerNorm, scale for RMSNorm.
        group: 0 normalises whole rows; G > 0 normalises runs of G columns separately.
        eps: added to the variance (mean square); > 0 and finite, checked by the library
            (ignored for identity and scale).
    """

    _c = "norm"

    def __init__(self, kind="layernorm", affine=None, group=0, eps=1e-5):
        self.kind = _code(KINDS, kind, "norm kind")
        if affine is None:
            affine = "scale" if self.kind == _capi.SN_NORM_RMSNORM else "scale_shift"
        self.affine = _code(AFFINES, affine, "affine mode")
        self.group = _capi.check_int(group, ctypes.c_int32, "Norm group")
        self.eps = float(eps)
        for name in ("kind", "affine", "group"):  # int32 fields of struct sn_norm
            _capi.check_int(getattr(self, name), ctypes.c_int32, f"Norm {name}")

    @classmethod
    def from_struct(cls, s):
        """A Norm with the values of a ctypes sn_norm."""
        return cls(s.kind, s.affine, s.group, s.eps)

    def to_struct(self):
        """The ctypes sn_norm of this norm."""
        for name in ("kind", "affine", "group"):  # the attributes may have been reassigned
            _capi.check_int(getattr(self, name), ctypes.c_int32, f"Norm {name}")
        return _capi.sn_norm(self.kind, self.affine, self.group, self.eps)

    def __repr__(self):
        kinds = {v: k for k, v in KINDS.items()}
        affs = {v: k for k, v in AFFINES.items()}
        return (f"Norm({kinds.get(self.kind, self.kind)!r}, affine="
                f"{affs.get(self.affine, self.affine)!r}, group={self.group}, eps={self.eps:g})")

    def __eq__(self, other):
        return (isinstance(other, Norm) and (self.kind, self.affine, self.group) ==
                (other.kind, other.affine, other.group)
                and np.float32(self.eps) == np.float32(other.eps))

    def forward(self, x, params=None, out=None, stats=None, ctx=None):
        """sn_norm_forward: out = N(x) row by row; returns out.

        x: (R, D) float32. params: the norm's parameter block (None when it has none).
        out: (R, D) written (allocated when None; may be x itself for in-place).
        stats: (R, stats_per_row) written for training (see empty_stats); None: inference."""
        R, D = A.rows_cols("x", x)
        dt = A.call_dtype("x", x)
        n_params, spr = self.query(D)
        px, ldx = A.matrix("x", x, R, D, dtype=dt)
        pp = A.vector("params", params, n_params, allow_none=(n_params == 0))
        out = A.out_matrix("out", out, R, D, dtype=dt)
        po, ldo = A.matrix("out", out, R, D, write=True, dtype=dt)
        ps = A.vector("stats", stats, R * spr, write=True, allow_none=True)
        check(A.fn(lib, "sn_norm_forward", dt)(ctx_handle(ctx), ctypes.byref(self.to_struct()), R, D, px, ldx,
                                  pp, po, ldo, ps), "sn_norm_forward")
        return out

    def backward(self, dout, x, params, stats, dx=None, dparams=None, accumulate=False,
                 flags=0, ctx=None):
        """sn_norm_backward: returns dx (written, or += with accumulate=True);
        dparams (same layout as params) is accumulated when given. dx may be dout itself
        (in-place, not with accumulate)."""
        R, D = A.rows_cols("x", x)
        dt = A.call_dtype("x", x)
        n_params, spr = self.query(D)
        pdo, lddo = A.matrix("dout", dout, R, D, dtype=dt)
        px, ldx = A.matrix("x", x, R, D, dtype=dt)
        pp = A.vector("params", params, n_params, allow_none=(n_params == 0))
        ps = A.vector("stats", stats, R * spr, allow_none=(spr == 0))
        dx = A.out_matrix("dx", dx, R, D, zeros=True, dtype=dt)
        pdx, lddx = A.matrix("dx", dx, R, D, write=True, dtype=dt)
        pdp = A.vector("dparams", dparams, n_params, write=True, allow_none=True)
        check(A.fn(lib, "sn_norm_backward", dt)(ctx_handle(ctx), ctypes.byref(self.to_struct()), R, D, pdo,
                                   lddo, px, ldx, pp, ps, pdx, lddx, pdp,
                                   A.flags_value(accumulate, flags=flags)), "sn_norm_backward")
        return dx
