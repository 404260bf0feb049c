"""PyTorch adapter: autograd Functions running the SiameseNorm primitives through the C kernels
on CPU float32 tensors, and nn.Modules wrapping them. Import it explicitly (it needs torch):

    from siamesenorm.torch_adapter import SiameseNorm
    model = SiameseNorm([block0, block1, ...], d=D, kind="layernorm")
    out = model(e)          # e: (..., D) float32 CPU; the blocks map (R, D) -> (R, D)

The Functions are once-differentiable (no double backward). Parameters of one fuse/merge are
one flat nn.Parameter in the library's layout [N_x | N_y | N_out], each gamma then beta.
"""

import math

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from .norm import Norm
from .streams import Fuse, apply_forward, apply_backward, split_forward, split_backward
from .net import Net

__all__ = ["FuseFunction", "MergeFunction", "ApplyFunction", "SplitFunction",
           "SiameseSublayer", "SiameseMerge", "SiameseNorm", "default_scale"]


def _np(t, name):
    """A float32 numpy view of a 2-D CPU tensor (copied to contiguous when needed)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor")
    if t.dtype != torch.float32 or t.device.type != "cpu":
        raise TypeError(f"{name} must be a float32 CPU tensor (libsiamesenorm is fp32), got "
                        f"{t.dtype} on {t.device}")
    return t.detach().contiguous().numpy()


def _params_np(p):
    return None if p is None or p.numel() == 0 else _np(p, "params").reshape(-1)


def _zeros_like_np(a):
    return np.zeros_like(a)


class FuseFunction(torch.autograd.Function):
    """(u, h) = FuseFunction.apply(x, y, params, fuse): u = N_x(x), h = N_out(u + N_y(y))
    through sn_fuse_forward / sn_fuse_backward. x, y: (R, D); params: the fuse's flat block."""

    @staticmethod
    def forward(ctx, x, y, params, fuse):
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        R, D = xn.shape
        stats = fuse.empty_stats(R, D)
        u, h = fuse.forward(xn, yn, pn, stats=stats)
        ctx.fuse, ctx.stats = fuse, stats
        ctx.save_for_backward(x, y, params)
        return torch.from_numpy(u), torch.from_numpy(h)

    @staticmethod
    @once_differentiable
    def backward(ctx, du, dh):
        x, y, params = ctx.saved_tensors
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        dhn = _np(dh, "dh") if dh is not None else _zeros_like_np(xn)
        dun = _np(du, "du") if du is not None else None
        dparams = np.zeros(params.numel(), np.float32)
        dx, dy = ctx.fuse.backward(dhn, xn, yn, pn, ctx.stats, du=dun,
                                   dparams=dparams if dparams.size else None)
        return (torch.from_numpy(dx), torch.from_numpy(dy),
                torch.from_numpy(dparams).view_as(params), None)


class MergeFunction(torch.autograd.Function):
    """out = MergeFunction.apply(x, y, params, fuse): N_out(N_x(x) + N_y(y)) through
    sn_merge_forward / sn_merge_backward."""

    @staticmethod
    def forward(ctx, x, y, params, fuse):
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        R, D = xn.shape
        stats = fuse.empty_stats(R, D)
        out = fuse.merge_forward(xn, yn, pn, stats=stats)
        ctx.fuse, ctx.stats = fuse, stats
        ctx.save_for_backward(x, y, params)
        return torch.from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, dout):
        x, y, params = ctx.saved_tensors
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        dparams = np.zeros(params.numel(), np.float32)
        dx, dy = ctx.fuse.merge_backward(_np(dout, "dout"), xn, yn, pn, ctx.stats,
                                         dparams=dparams if dparams.size else None)
        return (torch.from_numpy(dx), torch.from_numpy(dy),
                torch.from_numpy(dparams).view_as(params), None)


class ApplyFunction(torch.autograd.Function):
    """(xo, yo) = ApplyFunction.apply(z, u, y, c): xo = u + z / c, yo = y + z through
    sn_apply_forward / sn_apply_backward (c is a constant float > 0)."""

    @staticmethod
    def forward(ctx, z, u, y, c):
        xo, yo = apply_forward(_np(z, "z"), _np(u, "u"), _np(y, "y"), float(c))
        ctx.c = float(c)
        return torch.from_numpy(xo), torch.from_numpy(yo)

    @staticmethod
    @once_differentiable
    def backward(ctx, dxo, dyo):
        if dxo is None and dyo is None:
            return None, None, None, None
        ref = dxo if dxo is not None else dyo
        dxon = _np(dxo, "dxo") if dxo is not None else np.zeros(tuple(ref.shape), np.float32)
        dyon = _np(dyo, "dyo") if dyo is not None else np.zeros(tuple(ref.shape), np.float32)
        dz = apply_backward(dxon, dyon, ctx.c)
        # The gradients of u and y are dxo and dyo themselves (like torch's own add).
        return torch.from_numpy(dz), dxo, dyo, None


class SplitFunction(torch.autograd.Function):
    """(x, y) = SplitFunction.apply(e): two copies of e through sn_split_forward; the backward
    is de = dx + dy (sn_split_backward)."""

    @staticmethod
    def forward(ctx, e):
        x, y = split_forward(_np(e, "e"))
        return torch.from_numpy(x), torch.from_numpy(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dx, dy):
        ref = dx if dx is not None else dy
        if ref is None:
            return None
        dxn = _np(dx, "dx") if dx is not None else np.zeros(tuple(ref.shape), np.float32)
        dyn = _np(dy, "dy") if dy is not None else np.zeros(tuple(ref.shape), np.float32)
        return torch.from_numpy(split_backward(dxn, dyn))


def default_scale(i):
    """The library's default residual scale of sub-layer i: sqrt(2 * (floor(i / 2) + 1))."""
    return math.sqrt(2.0 * (i // 2 + 1))


def _norm_slices(fuse, d):
    """[(gamma slice, beta slice or None)] of the three norms in a fuse's flat parameter block."""
    out, off = [], 0
    for nm in (fuse.x, fuse.y, fuse.out):
        n, _ = nm.query(d)
        g = slice(off, off + d) if n >= d else None
        b = slice(off + d, off + 2 * d) if n >= 2 * d else None
        out.append((g, b))
        off += n
    return out


class _FuseParams(torch.nn.Module):
    def __init__(self, fuse, d):
        super().__init__()
        self.fuse, self.d = fuse, int(d)
        self.params = torch.nn.Parameter(torch.from_numpy(fuse.init_params(self.d)))
        self._slices = _norm_slices(fuse, self.d)

    def norm_params(self, j):
        """(gamma, beta) of norm j (0: N_x, 1: N_y, 2: N_out) as views of the flat Parameter's
        data (beta None when absent); write into them to set parameters."""
        g, b = self._slices[j]
        data = self.params.data
        return (data[g] if g else None), (data[b] if b else None)

    def norm_grads(self, j):
        """(dgamma, dbeta) of norm j, views of params.grad (None before a backward)."""
        if self.params.grad is None:
            return None, None
        g, b = self._slices[j]
        return (self.params.grad[g] if g else None), (self.params.grad[b] if b else None)


class SiameseSublayer(_FuseParams):
    """One SiameseNorm residual sub-layer around a block (an nn.Module mapping (R, D) to
    (R, D)):
        u = N_post(x),  h = N_in(u + N_pre(y)),  z = block(h),  x' = u + z / c,  y' = y + z
    forward(x, y) -> (x', y'). Norms: Fuse(x=N_post, y=N_pre, out=N_in)."""

    def __init__(self, block, d, c, kind="layernorm", eps=1e-5, input_norm=None):
        post = Norm(kind, eps=eps)
        fuse = Fuse(post, Norm(kind, eps=eps), input_norm if input_norm is not None else
                    Norm(kind, eps=eps))
        super().__init__(fuse, d)
        if not (c > 0 and math.isfinite(c)):
            raise ValueError(f"the residual scale c must be > 0 and finite, got {c}")
        self.block, self.c = block, float(c)

    def forward(self, x, y):
        u, h = FuseFunction.apply(x, y, self.params, self.fuse)
        z = self.block(h)
        return ApplyFunction.apply(z, u, y, self.c)


class SiameseMerge(_FuseParams):
    """The merge at the end of the network: out = N_f(N_a(x) + N_b(y)) (Fuse(x=N_a, y=N_b,
    out=N_f)). forward(x, y) -> out."""

    def __init__(self, d, kind="layernorm", eps=1e-5, fuse=None):
        super().__init__(fuse if fuse is not None else Fuse(Norm(kind, eps=eps),
                                                            Norm(kind, eps=eps),
                                                            Norm(kind, eps=eps)), d)

    def forward(self, x, y):
        return MergeFunction.apply(x, y, self.params, self.fuse)


class SiameseNorm(torch.nn.Module):
    """A SiameseNorm residual stack around a list of blocks (one per sub-layer; for a
    transformer: attention, MLP, attention, MLP, ...):
        x = y = e;  for each block: (x, y) = SiameseSublayer(x, y);  out = merge(x, y)

    Args:
        blocks: nn.Modules mapping (R, D) float32 to (R, D).
        d: the model width D.
        kind: "layernorm" (gamma and beta) or "rmsnorm" (gamma only); eps: every norm's eps.
        scales: None for the library's default c_i = sqrt(2 (floor(i/2) + 1)), "none" for 1,
            or a sequence of one c per block.
        input_norm: a siamesenorm.Norm for every N_in (Norm("identity") removes it).
    forward(e) accepts (..., D) and returns the same shape.
    """

    def __init__(self, blocks, d, kind="layernorm", eps=1e-5, scales=None, input_norm=None):
        super().__init__()
        blocks = list(blocks)
        S = len(blocks)
        rule = scales if scales is None or isinstance(scales, str) else list(scales)
        net = Net("siamese", S, d, kind=kind, eps=eps, scales=rule)  # the library's c_i
        self.scales = [net.scale(i) for i in range(S)]
        self.d = int(d)
        self.sublayers = torch.nn.ModuleList(
            SiameseSublayer(b, d, c, kind, eps, input_norm) for b, c in zip(blocks, self.scales))
        self.merge = SiameseMerge(d, kind, eps)

    def forward(self, e):
        shape = e.shape
        x, y = SplitFunction.apply(e.reshape(-1, self.d))
        for sub in self.sublayers:
            x, y = sub(x, y)
        return self.merge(x, y).reshape(shape)
