"""The placement layer (sn_net_*): class Net owns the parameter, gradient, activation and
workspace buffers (numpy, sized by sn_net_sizes) and runs the training loop one call at a time:

    net = Net("siamese", n_sublayers=2 * L, d=D, kind="layernorm")
    net.split(e)
    for i in range(net.n_sublayers):
        h = net.enter(i);  z = block[i](h);  net.exit(i, z)
    out = net.merge()
    net.zero_grad(); net.merge_backward(dout)
    for i in reversed(range(net.n_sublayers)):
        dz = net.exit_backward(i);  dh = block_backward[i](dz);  net.enter_backward(i, dh)
    de = net.split_backward()
"""

import copy
import ctypes
import numbers

import numpy as np

from . import _capi, errors
from . import _arrays as A
from ._capi import lib, check
from .norm import Norm, KINDS, _code, ctx_handle

# The library's one spelling of each placement (sn_placement_name), name -> enum value.
PLACEMENTS = {lib.sn_placement_name(k).decode(): k for k in range(_capi.SN_PLACEMENT_COUNT)}
# a name for every placement of the header (SN_PLACEMENT_COUNT), checked when the module loads
if sorted(PLACEMENTS.values()) != list(range(_capi.SN_PLACEMENT_COUNT)):
    raise ImportError("siamesenorm.net.PLACEMENTS does not cover SN_PLACEMENT_COUNT placements")
# The norm roles and operands (sn_norm_role_name, sn_norm_operand_name), name -> enum value.
ROLES = {lib.sn_norm_role_name(k).decode(): k for k in range(_capi.SN_ROLE_COUNT)}
OPERANDS = {lib.sn_norm_operand_name(k).decode(): k for k in range(_capi.SN_OPERAND_COUNT)}


def _hc_settings(code, hc_rate, hc_dynamic):
    """Hyper-Connections' settings checked before anything reaches C: (hc_rate, hc_dynamic) as
    the ints the struct takes, None where the library's default stays."""
    if code != _capi.SN_PLACEMENT_HYPER_CONN:
        if hc_rate is not None or hc_dynamic is not None:
            raise _capi.error(errors.ConfigError, "hc_rate and hc_dynamic are settings of the "
                              "hyper_connections placement only")
        return None, None
    if hc_rate is not None:
        hc_rate = _capi.check_int(hc_rate, None, "hc_rate")
        if not 1 <= hc_rate <= _capi.SN_HC_MAX_RATE:
            raise _capi.error(errors.StreamsError, f"hc_rate = {hc_rate}, expected 1 .. "
                                                   f"{_capi.SN_HC_MAX_RATE}")
    if hc_dynamic is not None:
        if not isinstance(hc_dynamic, (bool, numbers.Integral)) or int(hc_dynamic) not in (0, 1):
            raise TypeError(f"hc_dynamic must be True / False (or 1 / 0), got {hc_dynamic!r}")
        hc_dynamic = int(hc_dynamic)
    return hc_rate, hc_dynamic


def _index(i, what="i"):
    """A sub-layer / stage / norm index: an integer (numpy integers too; not a bool or a float,
    which are refused rather than truncated) in the range of the C int32_t."""
    return _capi.check_int(i, ctypes.c_int32, what)


def _rebuild(config, state):
    """Net(**config) with the state of Net._state() (see Net.__reduce__)."""
    net = Net(**config)
    net._set_state(state)
    return net


class Net:
    """A network's norm placement (struct sn_net) plus its buffers.

    Args:
        placement: "pre_norm", "post_norm", "siamese", "siamese_paper", "siamese_hybrid_pre",
            "deepnorm", "peri_ln", "mix_ln", "hybridnorm", "hybridnorm_star", "span_norm",
            "hyper_connections" (or the SN_PLACEMENT_* value; see the header for each
            formulation).
        n_sublayers: S (2 per transformer layer).
        d: the model width D.
        kind, eps: every norm's kind and eps (sn_net_init).
        norm: a Norm replacing the network's norm description after sn_net_init (e.g. another
            affine mode).
        input_norm: a Norm for N_in of SiameseNorm sub-layers (Norm("identity") removes it).
        scales: None or "default" (c_i = sqrt(2 (floor(i/2) + 1)); DeepNorm alpha =
            (2L)^(1/4); SpanNorm c = sqrt(L)), "none" (1), or a sequence of S floats
            (explicit c_i / alpha_i).
        mix_fraction: Mix-LN only: the fraction of Post-Norm layers (None: the library's 0.25).
        act_dtype: "f32" or "bf16": the streams' type (sn_net.act_dtype). With "bf16" every
            matrix the pass calls take or return is a uint16 array of bf16 bits (to_bf16).
        ctx: a Context used by every call, or None.
        hc_rate: Hyper-Connections only: the expansion rate n, the number of residual streams,
            an int in 1 .. SN_HC_MAX_RATE (None: the library's 4, the paper's main setting).
        hc_dynamic: Hyper-Connections only: True for dynamic HC (per-row connection weights),
            False for static HC (None: the library's dynamic). conn_views(i) gives a sub-layer's
            connection weights.

    Attributes: params / grads (n_params float32, grads accumulated by the backward calls:
    zero_grad() before a step), acts / work (allocated for R rows by split()), R.

    Integer arguments (n_sublayers, d, hc_rate, the stage, sub-layer and norm indices of the
    methods, flags) must be integers (int or numpy integer): a bool, a float or a str raises
    TypeError, a value outside the C type OverflowError; nothing is truncated. A d or R whose
    buffers numpy cannot allocate raises NoMemError (a MemoryError) before any pass call.

    Copying and pickling: copy.deepcopy(net), pickle and torch.save give a Net of the same
    description (struct sn_net) with copies of params, grads and the pending pass (R, acts,
    work: a pass started before the copy can be continued, forward or backward, in either
    object). A Context is not state but a process-local resource: a deep copy shares the
    original's ctx, an unpickled Net has ctx None.
    """

    def __init__(self, placement, n_sublayers, d, kind="layernorm", eps=1e-5, norm=None,
                 input_norm=None, scales=None, mix_fraction=None, act_dtype="f32", ctx=None,
                 hc_rate=None, hc_dynamic=None):
        s = _capi.sn_net()
        if act_dtype not in ("f32", "bf16"):
            raise errors.DTypeError(None, f"act_dtype must be 'f32' or 'bf16', got {act_dtype!r}")
        code = _code(PLACEMENTS, placement, "placement")
        n_sublayers = _capi.check_int(n_sublayers, ctypes.c_int32, "n_sublayers")
        d = _capi.check_int(d, ctypes.c_int64, "d")
        hc_rate, hc_dynamic = _hc_settings(code, hc_rate, hc_dynamic)
        self.dtype = A.BF16 if act_dtype == "bf16" else np.dtype(np.float32)
        # a norm override replaces kind and eps: initialise with its own, so that an eps (or
        # kind) the override makes irrelevant cannot fail sn_net_init
        init_kind = norm.kind if norm is not None else _code(KINDS, kind, "norm kind")
        init_eps = norm.eps if norm is not None else float(eps)
        status = lib.sn_net_init(ctypes.byref(s), code, n_sublayers, d, init_kind, init_eps)
        if hc_rate is not None:
            s.hc_rate = hc_rate
        if hc_dynamic is not None:
            s.hc_dynamic = hc_dynamic
        if norm is not None:
            s.norm = norm.to_struct()
        if input_norm is not None:
            s.input_norm = input_norm.to_struct()
        elif norm is not None:
            s.input_norm = norm.to_struct()
        self._scales = None
        if scales is None or (isinstance(scales, str) and scales == "default"):
            s.scale_rule = _capi.SN_SCALE_DEFAULT
        elif isinstance(scales, str) and scales == "none":
            s.scale_rule = _capi.SN_SCALE_NONE
        elif isinstance(scales, str):
            raise ValueError(f"unknown scales {scales!r}: 'default', 'none' or a sequence")
        else:
            arr = np.ascontiguousarray(np.asarray(scales, dtype=np.float32).reshape(-1))
            if arr.size != n_sublayers:
                raise _capi.error(errors.ScaleError, f"scales has {arr.size} values, expected "
                                                     f"n_sublayers = {n_sublayers}")
            self._scales = arr  # the C struct points into it: keep it alive with the Net
            s.scale_rule = _capi.SN_SCALE_EXPLICIT
            s.scales = arr.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        if mix_fraction is not None:
            s.mix_fraction = float(mix_fraction)
        if act_dtype == "bf16":
            s.act_dtype = _capi.SN_DTYPE_BF16
        self._s = s
        check(status, "sn_net_init")
        self.check()
        self.ctx = ctx
        self.n_params, self.acts_per_row, self.work_per_row = self.sizes()
        self.params = self.init_params()
        self.grads = A.alloc(self.n_params, np.float32, "Net grads", zeros=True)
        self.R = None
        self.acts = None
        self.work = None

    # ---- copying and pickling ----
    def _config(self):
        """The constructor arguments that rebuild this Net's description (struct sn_net)
        exactly: the norms, scales and mix_fraction as the struct holds them."""
        s = self._s
        if s.scale_rule == _capi.SN_SCALE_EXPLICIT:
            scales = [float(c) for c in self._scales]  # float32 values: exact round trip
        else:
            scales = "none" if s.scale_rule == _capi.SN_SCALE_NONE else None
        cfg = dict(placement=s.placement, n_sublayers=s.n_sublayers, d=s.d,
                   norm=Norm.from_struct(s.norm), input_norm=Norm.from_struct(s.input_norm),
                   scales=scales, mix_fraction=s.mix_fraction,
                   act_dtype="bf16" if s.act_dtype == _capi.SN_DTYPE_BF16 else "f32")
        if s.placement == _capi.SN_PLACEMENT_HYPER_CONN:
            cfg.update(hc_rate=s.hc_rate, hc_dynamic=bool(s.hc_dynamic))
        return cfg

    def _state(self):
        """What a Net owns besides its description: the parameters, their gradients and the
        pending pass (R, acts, work; None before split)."""
        return dict(params=self.params, grads=self.grads, R=self.R, acts=self.acts,
                    work=self.work)

    def _set_state(self, state):
        def vec(name, n):
            a = np.array(state[name], dtype=np.float32, copy=True).reshape(-1)
            if a.size != n:
                raise _capi.error(errors.ShapeError, f"Net state: {name} has {a.size} values, "
                                                     f"expected {n}")
            return a
        self.params = vec("params", self.n_params)
        self.grads = vec("grads", self.n_params)
        R = state["R"]
        if R is None:
            self.R = self.acts = self.work = None
        else:
            R = _capi.check_int(R, ctypes.c_int64, "Net state: R")
            self.acts = vec("acts", R * self.acts_per_row)
            self.work = vec("work", R * self.work_per_row)
            self.R = R

    def __reduce__(self):
        # the ctypes struct holds a pointer (scales) and cannot be pickled: rebuild from the
        # constructor arguments, then restore the arrays (ctx is not pickled)
        return (_rebuild, (self._config(), self._state()))

    def __deepcopy__(self, memo):
        new = _rebuild(copy.deepcopy(self._config(), memo), self._state())  # arrays copied
        new.ctx = self.ctx  # shared: an execution resource, not state
        memo[id(self)] = new
        return new

    # ---- description ----
    @property
    def struct(self):
        """A copy of the ctypes sn_net: the binding's buffers are sized from the description,
        so it cannot be changed after construction (changing the copy changes nothing)."""
        return _capi.sn_net.from_buffer_copy(self._s)

    @property
    def placement(self):
        return self._s.placement

    @property
    def n_sublayers(self):
        return self._s.n_sublayers

    @property
    def d(self):
        return self._s.d

    @property
    def norm(self):
        return Norm.from_struct(self._s.norm)

    @property
    def hc_rate(self):
        """Hyper-Connections' expansion rate n (0 for the other placements)."""
        return self._s.hc_rate

    @property
    def hc_dynamic(self):
        """True for dynamic Hyper-Connections."""
        return bool(self._s.hc_dynamic)

    @property
    def input_norm(self):
        return Norm.from_struct(self._s.input_norm)

    def check(self):
        """sn_net_check: raise if the description is invalid."""
        check(lib.sn_net_check(ctypes.byref(self._s)), "sn_net_check")

    def scale(self, i):
        """sn_net_scale: the residual scale c_i of sub-layer i."""
        c = ctypes.c_float()
        check(lib.sn_net_scale(ctypes.byref(self._s), _index(i), ctypes.byref(c)),
              "sn_net_scale")
        return c.value

    def init_gain(self):
        """sn_net_init_gain: the init gain for the blocks' value/output/FFN weights (DeepNorm's
        beta = (8L)^(-1/4); 1 for other placements)."""
        g = ctypes.c_float()
        check(lib.sn_net_init_gain(ctypes.byref(self._s), ctypes.byref(g)), "sn_net_init_gain")
        return g.value

    def sizes(self):
        """sn_net_sizes: (n_params, acts_per_row, work_per_row) in floats."""
        n, a, w = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        check(lib.sn_net_sizes(ctypes.byref(self._s), ctypes.byref(n), ctypes.byref(a),
                               ctypes.byref(w)), "sn_net_sizes")
        return n.value, a.value, w.value

    def norm_at(self, i, j):
        """sn_net_norm_at: (Norm, offset of its gamma) of norm j of stage i (stage S is the
        merge, stage -1 the split). Raises IndexOutOfRange when stage i has no norm j."""
        nm, off = _capi.sn_norm(), ctypes.c_int64()
        check(lib.sn_net_norm_at(ctypes.byref(self._s), _index(i), _index(j, "j"),
                                 ctypes.byref(nm), ctypes.byref(off)), "sn_net_norm_at")
        return Norm.from_struct(nm), off.value

    def norm_role(self, i, j):
        """sn_net_norm_role: (role, operand) names of norm j of stage i, e.g. ("input", "x") for
        a Pre-Norm sub-layer's norm (docs/api.md, "Norm roles"). Raises IndexOutOfRange when
        stage i has no norm j."""
        role, operand = ctypes.c_int(), ctypes.c_int()
        check(lib.sn_net_norm_role(ctypes.byref(self._s), _index(i), _index(j, "j"),
                                   ctypes.byref(role), ctypes.byref(operand)), "sn_net_norm_role")
        return (lib.sn_norm_role_name(role.value).decode(),
                lib.sn_norm_operand_name(operand.value).decode())

    def find_norm(self, i, role):
        """sn_net_find_norm: the index j of stage i's norm of the given role (a name of
        ROLES). Raises IndexOutOfRange when stage i has none, ValueError for an unknown role."""
        if role not in ROLES:
            raise ValueError(f"unknown norm role {role!r}; expected one of {sorted(ROLES)}")
        j = ctypes.c_int32()
        check(lib.sn_net_find_norm(ctypes.byref(self._s), _index(i), ROLES[role], ctypes.byref(j)),
              "sn_net_find_norm")
        return j.value

    def stage_norms(self, i):
        """All (Norm, offset) of stage i, counted with norm_at until IndexOutOfRange."""
        out, j = [], 0
        while True:
            try:
                out.append(self.norm_at(i, j))
            except errors.IndexOutOfRange:
                return out
            j += 1

    def conn_at(self, i):
        """sn_net_conn_at: (offset, count) in floats of Hyper-Connections' connection weights of
        sub-layer i in params (and grads). Raises IndexOutOfRange for another placement."""
        off, count = ctypes.c_int64(), ctypes.c_int64()
        check(lib.sn_net_conn_at(ctypes.byref(self._s), _index(i), ctypes.byref(off),
                                 ctypes.byref(count)), "sn_net_conn_at")
        return off.value, count.value

    def _conn_views(self, buf, i):
        off, count = self.conn_at(i)
        n, D = self.hc_rate, self.d
        shapes = [("alpha", (n, n + 1)), ("beta", (n,))]
        if self.hc_dynamic:
            shapes += [("Wa", (n + 1, D)), ("Wb", (D,)), ("s_a", (1,)), ("s_b", (1,))]
        out = {}
        for name, shape in shapes:
            size = int(np.prod(shape))
            out[name] = buf[off:off + size].reshape(shape)
            off += size
        assert off == self.conn_at(i)[0] + count, (i, count)
        return out

    def conn_views(self, i):
        """Hyper-Connections' connection weights of sub-layer i as numpy views into params
        (docs/SPEC.md, "Hyper-Connections"; n = hc_rate): alpha (n, n + 1), row k = stream k,
        alpha[k, 0] = A_m[k], alpha[k, 1 + j] = A_r[k][j]; beta (n,) = B; dynamic HC also Wa
        (n + 1, D) (the paper's dynamic_alpha_fn transposed), Wb (D,), s_a (1,), s_b (1,)."""
        return self._conn_views(self.params, i)

    def conn_grad_views(self, i):
        """The gradients of conn_views(i), as views into grads (same names and shapes)."""
        return self._conn_views(self.grads, i)

    def init_params(self, params=None):
        """sn_net_init_params: every gamma 1, every beta 0 (into a new array when None)."""
        if params is None:
            params = A.alloc(self.n_params, np.float32, "Net params")
        p = A.vector("params", params, self.n_params, write=True, allow_none=self.n_params == 0)
        check(lib.sn_net_init_params(ctypes.byref(self._s), p), "sn_net_init_params")
        return params

    def _views(self, buf, i, j):
        nm, off = self.norm_at(i, j)
        W = nm.group if nm.group > 0 else self.d
        n, _ = nm.query(self.d)
        gamma = buf[off:off + W] if n >= W else None
        beta = buf[off + W:off + 2 * W] if n >= 2 * W else None
        return gamma, beta

    def param_views(self, i, j):
        """(gamma, beta) numpy views into params for norm j of stage i (None when absent)."""
        return self._views(self.params, i, j)

    def grad_views(self, i, j):
        """(dgamma, dbeta) numpy views into grads for norm j of stage i."""
        return self._views(self.grads, i, j)

    def zero_grad(self):
        """Zero the accumulated parameter gradients."""
        self.grads[...] = 0.0

    # ---- forward ----
    def _buffers(self):
        p = A.vector("params", self.params, self.n_params, allow_none=self.n_params == 0)
        a = A.vector("acts", self.acts, self.R * self.acts_per_row, write=True)
        return ctypes.byref(_capi.sn_net_pass(self.R, p, a, None, None))

    def _need_pass(self):
        if self.R is None:
            raise RuntimeError("call split(e) first: it starts a pass and sizes acts/work")

    def split(self, e):
        """sn_net_split: x_0 (and y_0) = e, with e of shape (R, D); (re)allocates acts and work
        for R rows. The Net changes only when the call succeeds: a rejected split (a bad e, a
        NonFiniteError in checked mode, ...) leaves R, acts and work, the pending pass, as they
        were."""
        R, D = A.rows_cols("e", e)
        pe, lde = A.matrix("e", e, R, self.d, dtype=self.dtype)
        if self.R == R:
            acts, work = self.acts, self.work
        else:  # new buffers, kept only if the split succeeds
            acts = A.alloc(R * self.acts_per_row, np.float32, f"Net acts for R = {R}", zeros=True)
            work = A.alloc(R * self.work_per_row, np.float32, f"Net work for R = {R}", zeros=True)
        p = A.vector("params", self.params, self.n_params, allow_none=self.n_params == 0)
        a = A.vector("acts", acts, R * self.acts_per_row, write=True)
        bufs = ctypes.byref(_capi.sn_net_pass(R, p, a, None, None))
        check(A.fn(lib, "sn_net_split", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s),
                                                    bufs, pe, lde), "sn_net_split")
        self.R, self.acts, self.work = R, acts, work

    def enter(self, i, h=None):
        """sn_net_enter: the block input of sub-layer i into h (allocated when None); returns h."""
        self._need_pass()
        h = A.out_matrix("h", h, self.R, self.d, dtype=self.dtype)
        ph, ldh = A.matrix("h", h, self.R, self.d, write=True, dtype=self.dtype)
        check(A.fn(lib, "sn_net_enter", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s), self._buffers(),
                               _index(i), ph, ldh), "sn_net_enter")
        return h

    def exit(self, i, z):
        """sn_net_exit: fold the block output z (R, D) of sub-layer i into the streams."""
        self._need_pass()
        pz, ldz = A.matrix("z", z, self.R, self.d, dtype=self.dtype)
        check(A.fn(lib, "sn_net_exit", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s),
                                                   self._buffers(), _index(i), pz, ldz),
              "sn_net_exit")

    def merge(self, out=None):
        """sn_net_merge: the network output (R, D) (allocated when None); returns it."""
        self._need_pass()
        out = A.out_matrix("out", out, self.R, self.d, dtype=self.dtype)
        po, ldo = A.matrix("out", out, self.R, self.d, write=True, dtype=self.dtype)
        check(A.fn(lib, "sn_net_merge", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s), self._buffers(), po,
                               ldo), "sn_net_merge")
        return out

    # ---- backward ----
    def _bwd_buffers(self):
        p = A.vector("params", self.params, self.n_params, allow_none=self.n_params == 0)
        a = A.vector("acts", self.acts, self.R * self.acts_per_row)
        g = A.vector("grads", self.grads, self.n_params, write=True,
                     allow_none=self.n_params == 0)
        w = A.vector("work", self.work, self.R * self.work_per_row, write=True)
        return ctypes.byref(_capi.sn_net_pass(self.R, p, a, g, w))

    def merge_backward(self, dout):
        """sn_net_merge_backward: start the backward pass from dout (R, D); accumulates the
        merge's parameter gradients into grads."""
        self._need_pass()
        pdo, lddo = A.matrix("dout", dout, self.R, self.d, dtype=self.dtype)
        check(A.fn(lib, "sn_net_merge_backward", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s),
                                        self._bwd_buffers(), pdo, lddo), "sn_net_merge_backward")

    def exit_backward(self, i, dz=None, accumulate=False, flags=0):
        """sn_net_exit_backward: the gradient of sub-layer i's block output into dz (written,
        += with accumulate; allocated when None); returns dz."""
        self._need_pass()
        dz = A.out_matrix("dz", dz, self.R, self.d, zeros=True, dtype=self.dtype)
        pdz, lddz = A.matrix("dz", dz, self.R, self.d, write=True, dtype=self.dtype)
        check(A.fn(lib, "sn_net_exit_backward", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s),
                                       self._bwd_buffers(), _index(i), pdz, lddz,
                                       A.flags_value(accumulate, flags=flags)),
              "sn_net_exit_backward")
        return dz

    def enter_backward(self, i, dh):
        """sn_net_enter_backward: take the block-input gradient dh (R, D) of sub-layer i back
        into the stream gradients; accumulates sub-layer i's norm gradients."""
        self._need_pass()
        pdh, lddh = A.matrix("dh", dh, self.R, self.d, dtype=self.dtype)
        check(A.fn(lib, "sn_net_enter_backward", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s),
                                        self._bwd_buffers(), _index(i), pdh, lddh),
              "sn_net_enter_backward")

    def split_backward(self, de=None, accumulate=False, flags=0):
        """sn_net_split_backward: the gradient of the network input e into de (written, += with
        accumulate; allocated when None); returns de."""
        self._need_pass()
        de = A.out_matrix("de", de, self.R, self.d, zeros=True, dtype=self.dtype)
        pde, ldde = A.matrix("de", de, self.R, self.d, write=True, dtype=self.dtype)
        p = A.vector("params", self.params, self.n_params, allow_none=self.n_params == 0)
        a = A.vector("acts", self.acts, self.R * self.acts_per_row)
        g = A.vector("grads", self.grads, self.n_params, write=True,
                     allow_none=self.n_params == 0)
        w = A.vector("work", self.work, self.R * self.work_per_row)
        bufs = ctypes.byref(_capi.sn_net_pass(self.R, p, a, g, w))
        check(A.fn(lib, "sn_net_split_backward", self.dtype)(ctx_handle(self.ctx), ctypes.byref(self._s), bufs, pde,
                                        ldde, A.flags_value(accumulate, flags=flags)),
              "sn_net_split_backward")
        return de
