"""Dual-stream primitives: sn_fuse_* / sn_merge_* (class Fuse), sn_apply_forward/backward,
sn_split_forward/backward (module functions)."""

import ctypes

import numpy as np

from . import _capi
from . import _arrays as A
from ._capi import lib, check
from .norm import Norm, KINDS, AFFINES, _code, ctx_handle, _ParamBlock


class Fuse(_ParamBlock):
    """Three norms combining the two streams (struct sn_fuse): u = N_x(x), s = u + N_y(y),
    h = N_out(s). As a sub-layer fuse: x = N_post, y = N_pre, out = N_in. As the merge:
    x = N_a, y = N_b, out = N_f. Parameters are one block [N_x | N_y | N_out].

    Fuse(x=Norm(...), y=Norm(...), out=Norm(...)), or Fuse.uniform(kind, affine, eps) for three
    equal norms (sn_fuse_init)."""

    _c = "fuse"

    def __init__(self, x=None, y=None, out=None):
        self.x = x if x is not None else Norm()
        self.y = y if y is not None else Norm()
        self.out = out if out is not None else Norm()

    @classmethod
    def uniform(cls, kind="layernorm", affine=None, eps=1e-5):
        """sn_fuse_init: the three norms all {kind, affine, 0, eps}. affine None picks
        scale_shift for LayerNorm and scale for RMSNorm, as Norm does."""
        k = _code(KINDS, kind, "norm kind")
        if affine is None:
            affine = "scale" if k == _capi.SN_NORM_RMSNORM else "scale_shift"
        s = _capi.sn_fuse()
        check(lib.sn_fuse_init(ctypes.byref(s), k, _code(AFFINES, affine, "affine mode"),
                               float(eps)), "sn_fuse_init")
        return cls.from_struct(s)

    @classmethod
    def from_struct(cls, s):
        """A Fuse with the values of a ctypes sn_fuse."""
        return cls(Norm.from_struct(s.x), Norm.from_struct(s.y), Norm.from_struct(s.out))

    def to_struct(self):
        """The ctypes sn_fuse of this fuse."""
        return _capi.sn_fuse(self.x.to_struct(), self.y.to_struct(), self.out.to_struct())

    def __repr__(self):
        return f"Fuse(x={self.x!r}, y={self.y!r}, out={self.out!r})"

    def forward(self, x, y, params, u=None, h=None, stats=None, want_u=True, ctx=None):
        """sn_fuse_forward: u = N_x(x), h = N_out(u + N_y(y)); returns (u, h).

        u, h: (R, D) outputs (allocated when None); want_u=False passes NULL for u and returns
        (None, h). stats: (R, stats_per_row) written for training, None for inference.
        No buffer may alias another."""
        R, D = A.rows_cols("x", x)
        dt = A.call_dtype("x", x)
        n_params, spr = self.query(D)
        px, ldx = A.matrix("x", x, R, D, dtype=dt)
        py, ldy = A.matrix("y", y, R, D, dtype=dt)
        pp = A.vector("params", params, n_params, allow_none=(n_params == 0))
        if want_u:
            u = A.out_matrix("u", u, R, D, dtype=dt)
            pu, ldu = A.matrix("u", u, R, D, write=True, dtype=dt)
        else:
            u, pu, ldu = None, None, D
        h = A.out_matrix("h", h, R, D, dtype=dt)
        ph, ldh = A.matrix("h", h, R, D, write=True, dtype=dt)
        ps = A.vector("stats", stats, R * spr, write=True, allow_none=True)
        check(A.fn(lib, "sn_fuse_forward", dt)(ctx_handle(ctx), ctypes.byref(self.to_struct()), R, D, px, ldx,
                                  py, ldy, pp, pu, ldu, ph, ldh, ps), "sn_fuse_forward")
        return u, h

    def backward(self, dh, x, y, params, stats, du=None, dx=None, dy=None, dparams=None,
                 accumulate_x=False, accumulate_y=False, flags=0, ctx=None):
        """sn_fuse_backward; returns (dx, dy).

        ds = N_out backward of dh; dx = N_x backward of (du + ds) (written, += with
        accumulate_x); dy = N_y backward of ds (written, += with accumulate_y); dparams += the
        three norms' parameter gradients when given. du None means zero; dx may be du itself
        (not with accumulate_x)."""
        R, D = A.rows_cols("x", x)
        dt = A.call_dtype("x", x)
        n_params, spr = self.query(D)
        pdh, lddh = A.matrix("dh", dh, R, D, dtype=dt)
        if du is None:
            pdu, lddu = None, D
        else:
            pdu, lddu = A.matrix("du", du, R, D, dtype=dt)
        px, ldx = A.matrix("x", x, R, D, dtype=dt)
        py, ldy = A.matrix("y", y, R, D, dtype=dt)
        pp = A.vector("params", params, n_params, allow_none=(n_params == 0))
        ps = A.vector("stats", stats, R * spr, allow_none=(spr == 0))
        dx = A.out_matrix("dx", dx, R, D, zeros=True, dtype=dt)
        pdx, lddx = A.matrix("dx", dx, R, D, write=True, dtype=dt)
        dy = A.out_matrix("dy", dy, R, D, zeros=True, dtype=dt)
        pdy, lddy = A.matrix("dy", dy, R, D, write=True, dtype=dt)
        pdp = A.vector("dparams", dparams, n_params, write=True, allow_none=True)
        check(A.fn(lib, "sn_fuse_backward", dt)(ctx_handle(ctx), ctypes.byref(self.to_struct()), R, D, pdh,
                                   lddh, pdu, lddu, px, ldx, py, ldy, pp, ps, pdx, lddx, pdy,
                                   lddy, pdp, A.flags_value(accumulate_x, accumulate_y, flags)),
              "sn_fuse_backward")
        return dx, dy

    def merge_forward(self, x, y, params, out=None, stats=None, ctx=None):
        """sn_merge_forward: out = N_out(N_x(x) + N_y(y)); returns out."""
        R, D = A.rows_cols("x", x)
        dt = A.call_dtype("x", x)
        n_params, spr = self.query(D)
        px, ldx = A.matrix("x", x, R, D, dtype=dt)
        py, ldy = A.matrix("y", y, R, D, dtype=dt)
        pp = A.vector("params", params, n_params, allow_none=(n_params == 0))
        out = A.out_matrix("out", out, R, D, dtype=dt)
        po, ldo = A.matrix("out", out, R, D, write=True, dtype=dt)
        ps = A.vector("stats", stats, R * spr, write=True, allow_none=True)
        check(A.fn(lib, "sn_merge_forward", dt)(ctx_handle(ctx), ctypes.byref(self.to_struct()), R, D, px,
                                   ldx, py, ldy, pp, po, ldo, ps), "sn_merge_forward")
        return out

    def merge_backward(self, dout, x, y, params, stats, dx=None, dy=None, dparams=None,
                       accumulate_x=False, accumulate_y=False, flags=0, ctx=None):
        """sn_merge_backward (sn_fuse_backward with du = NULL); returns (dx, dy)."""
        R, D = A.rows_cols("x", x)
        dt = A.call_dtype("x", x)
        n_params, spr = self.query(D)
        pdo, lddo = A.matrix("dout", dout, R, D, dtype=dt)
        px, ldx = A.matrix("x", x, R, D, dtype=dt)
        py, ldy = A.matrix("y", y, R, D, dtype=dt)
        pp = A.vector("params", params, n_params, allow_none=(n_params == 0))
        ps = A.vector("stats", stats, R * spr, allow_none=(spr == 0))
        dx = A.out_matrix("dx", dx, R, D, zeros=True, dtype=dt)
        pdx, lddx = A.matrix("dx", dx, R, D, write=True, dtype=dt)
        dy = A.out_matrix("dy", dy, R, D, zeros=True, dtype=dt)
        pdy, lddy = A.matrix("dy", dy, R, D, write=True, dtype=dt)
        pdp = A.vector("dparams", dparams, n_params, write=True, allow_none=True)
        check(A.fn(lib, "sn_merge_backward", dt)(ctx_handle(ctx), ctypes.byref(self.to_struct()), R, D, pdo,
                                    lddo, px, ldx, py, ldy, pp, ps, pdx, lddx, pdy, lddy, pdp,
                                    A.flags_value(accumulate_x, accumulate_y, flags)),
              "sn_merge_backward")
        return dx, dy


def apply_forward(z, u, y, c, xo=None, yo=None, ctx=None):
    """sn_apply_forward: xo = u + z / c, yo = y + z; returns (xo, yo). xo may be u and yo may
    be y (in-place); outputs are allocated when None."""
    R, D = A.rows_cols("z", z)
    dt = A.call_dtype("z", z)
    pz, ldz = A.matrix("z", z, R, D, dtype=dt)
    pu, ldu = A.matrix("u", u, R, D, dtype=dt)
    py, ldy = A.matrix("y", y, R, D, dtype=dt)
    xo = A.out_matrix("xo", xo, R, D, dtype=dt)
    pxo, ldxo = A.matrix("xo", xo, R, D, write=True, dtype=dt)
    yo = A.out_matrix("yo", yo, R, D, dtype=dt)
    pyo, ldyo = A.matrix("yo", yo, R, D, write=True, dtype=dt)
    check(A.fn(lib, "sn_apply_forward", dt)(ctx_handle(ctx), R, D, float(c), pz, ldz, pu, ldu, py, ldy, pxo,
                               ldxo, pyo, ldyo), "sn_apply_forward")
    return xo, yo


def apply_backward(dxo, dyo, c, dz=None, accumulate=False, flags=0, ctx=None):
    """sn_apply_backward: dz = dxo / c + dyo (written, += with accumulate); returns dz. The
    gradients of u and y are dxo and dyo themselves."""
    R, D = A.rows_cols("dxo", dxo)
    dt = A.call_dtype("dxo", dxo)
    pdxo, lddxo = A.matrix("dxo", dxo, R, D, dtype=dt)
    pdyo, lddyo = A.matrix("dyo", dyo, R, D, dtype=dt)
    dz = A.out_matrix("dz", dz, R, D, zeros=True, dtype=dt)
    pdz, lddz = A.matrix("dz", dz, R, D, write=True, dtype=dt)
    check(A.fn(lib, "sn_apply_backward", dt)(ctx_handle(ctx), R, D, float(c), pdxo, lddxo, pdyo, lddyo, pdz,
                                lddz, A.flags_value(accumulate, flags=flags)),
          "sn_apply_backward")
    return dz


def split_forward(e, x=None, y=None, ctx=None):
    """sn_split_forward: x = e, y = e (copies); returns (x, y). x may be e itself."""
    R, D = A.rows_cols("e", e)
    dt = A.call_dtype("e", e)
    pe, lde = A.matrix("e", e, R, D, dtype=dt)
    x = A.out_matrix("x", x, R, D, dtype=dt)
    px, ldx = A.matrix("x", x, R, D, write=True, dtype=dt)
    y = A.out_matrix("y", y, R, D, dtype=dt)
    py, ldy = A.matrix("y", y, R, D, write=True, dtype=dt)
    check(A.fn(lib, "sn_split_forward", dt)(ctx_handle(ctx), R, D, pe, lde, px, ldx, py, ldy),
          "sn_split_forward")
    return x, y


def split_backward(dx, dy, de=None, accumulate=False, flags=0, ctx=None):
    """sn_split_backward: de = dx + dy (written, += with accumulate); returns de."""
    R, D = A.rows_cols("dx", dx)
    dt = A.call_dtype("dx", dx)
    pdx, lddx = A.matrix("dx", dx, R, D, dtype=dt)
    pdy, lddy = A.matrix("dy", dy, R, D, dtype=dt)
    de = A.out_matrix("de", de, R, D, zeros=True, dtype=dt)
    pde, ldde = A.matrix("de", de, R, D, write=True, dtype=dt)
    check(A.fn(lib, "sn_split_backward", dt)(ctx_handle(ctx), R, D, pdx, lddx, pdy, lddy, pde, ldde,
                                A.flags_value(accumulate, flags=flags)), "sn_split_backward")
    return de
