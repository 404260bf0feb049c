"""PyTorch adapter: autograd Functions running the SiameseNorm primitives through the C kernels
on CPU float32 or bfloat16 tensors (bf16: the `_bf16` calls; parameters stay float32), and
nn.Modules wrapping them. Import it explicitly (it needs torch):

    from siamesenorm.torch_adapter import SiameseNorm
    model = SiameseNorm([block0, block1, ...], d=D, kind="layernorm")
    out = model(e)          # e: (..., D) float32 CPU; the blocks map (R, D) -> (R, D)

The Functions are once-differentiable (no double backward); they take a fuse's or merge's
parameters as one flat tensor in the library's layout [N_x | N_y | N_out], each gamma then beta.

The modules keep one small parameter module per norm, named like torch.nn.LayerNorm's
(weight = gamma, bias = beta), so state_dict keys and named_parameters() read as the norms:
    sublayers.{i}.post.weight / .bias    N_post, on the x stream
    sublayers.{i}.pre.weight / .bias     N_pre, on the y stream
    sublayers.{i}.input.weight / .bias   N_in, on the block input (absent when identity or
                                         non-affine)
    sublayers.{i}.c1.weight              hybrid_pre attention sub-layers: c1 (and .pre)
    merge.x / merge.y / merge.final      N_a (on x), N_b (on y), N_f (on their sum)
Each forward concatenates them into the flat block the C kernels take (a copy of 2-6 D floats per
sub-layer), and autograd splits the gradient back. Until 0.2 the storage was one flat Parameter
per fuse (keys sublayers.{i}.params, merge.params): such state dicts still load (they are split
on load); `params` is now a read-only property giving the flat block.

eps: the default is the library's 1e-5 (also torch.nn.LayerNorm's). The official DeiT and DiT
code uses LayerNorm(eps=1e-6): pass eps=1e-6 to match a checkpoint trained with it.

Errors are the package's (siamesenorm.errors): a tensor that is not float32 / bfloat16 on the
CPU raises DTypeError, a module's input whose last dimension is not its d ShapeError.
An empty batch (no rows) gives an empty output, as torch.nn.LayerNorm does: the library's calls
reject R = 0 (ShapeError), so the Functions answer it themselves without calling C (empty
outputs, zero parameter gradients) and the modules run their blocks on (0, D) inputs.
"""

import ctypes
import math

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from . import _capi, errors
from . import _arrays as A
from .norm import Norm
from .streams import Fuse, apply_forward, apply_backward, split_forward, split_backward
from .net import Net

__all__ = ["FuseFunction", "MergeFunction", "ApplyFunction", "SplitFunction", "NormParams",
           "SiameseSublayer", "SiameseC1Sublayer", "SiameseMerge", "SiameseNorm",
           "default_scale", "HyperConnections", "HyperConnSublayer"]


def _np(t, name, bf16_ok=True):
    """A numpy view of a CPU tensor (copied to contiguous when needed): float32 as float32,
    torch.bfloat16 as uint16 bf16 bits (the library's bf16 calls)."""
    _check_tensor(t, name, bf16_ok)
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _check_tensor(t, name, bf16_ok=True):
    """DTypeError (a TypeError, as numpy arrays of another dtype get) unless t is a float32 (or
    bfloat16) CPU tensor."""
    if not isinstance(t, torch.Tensor):
        raise errors.DTypeError(None, f"{name} must be a torch.Tensor, got {type(t).__name__}")
    ok = t.dtype == torch.float32 or (bf16_ok and t.dtype == torch.bfloat16)
    if not ok or t.device.type != "cpu":
        raise errors.DTypeError(None, f"{name} must be a float32{' or bfloat16' if bf16_ok else ''}"
                                      f" CPU tensor, got {t.dtype} on {t.device}")


def _rows(e, d, module):
    """A module's input e (..., d) as (R, d): DTypeError for a tensor the library cannot take,
    ShapeError when e has no dimension or its last one is not d (reshaping would otherwise cut
    wider rows into d-wide pieces and normalise those)."""
    _check_tensor(e, "e")
    if e.dim() < 1 or e.shape[-1] != d:
        raise _capi.error(errors.ShapeError, f"{module}(d = {d}) takes inputs of shape (..., {d}), "
                                             f"got {tuple(e.shape)} (last dimension "
                                             f"{e.shape[-1] if e.dim() else 'missing'})")
    return e.reshape(-1, d)


def _dim(d):
    """The model width d: an integer (not a bool, a float or a str), as sn.Net takes it."""
    return _capi.check_int(d, ctypes.c_int64, "d")


def _empty_batch(*mats):
    """True for an empty batch (the first of mats (0, D)), after the checks a call with rows
    would make on the matrices: the Functions answer it without the library (which rejects
    R = 0 with ShapeError)."""
    first = mats[0]
    if first.ndim != 2 or first.shape[0] != 0:
        return False  # a call with rows (or a bad rank: the library's checks say so)
    for a in mats[1:]:
        if a.dtype != first.dtype:
            raise errors.DTypeError(None, f"the matrices of one call must share a dtype, got "
                                          f"{first.dtype} and {a.dtype}")
        if a.shape != first.shape:
            raise _capi.error(errors.ShapeError, f"a matrix has shape {a.shape}, expected "
                                                 f"{first.shape}")
    return True


def _empty_rows(fuse, xn, yn, pn):
    """_empty_batch of a fuse's or merge's x and y, with its parameter block checked too."""
    if not _empty_batch(xn, yn):
        return False
    n = fuse.query(xn.shape[1])[0]
    if (0 if pn is None else pn.size) != n:
        raise _capi.error(errors.ShapeError, f"params has {0 if pn is None else pn.size} "
                                             f"elements, expected {n}")
    return True


def _t(a):
    """A tensor over a numpy result: uint16 bf16 bits become torch.bfloat16."""
    if a.dtype == np.uint16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _zeros(ref):
    """Zeros for a missing gradient, of ref's shape and type."""
    return np.zeros(tuple(ref.shape), np.uint16 if ref.dtype == torch.bfloat16 else np.float32)


def _params_np(p):
    """Parameters stay float32 whatever the activations' type."""
    return None if p is None or p.numel() == 0 else _np(p, "params", False).reshape(-1)


def _zeros_like_np(a):
    return np.zeros_like(a)


class FuseFunction(torch.autograd.Function):
    """(u, h) = FuseFunction.apply(x, y, params, fuse): u = N_x(x), h = N_out(u + N_y(y))
    through sn_fuse_forward / sn_fuse_backward. x, y: (R, D); params: the fuse's flat block."""

    @staticmethod
    def forward(ctx, x, y, params, fuse):
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        if _empty_rows(fuse, xn, yn, pn):
            ctx.fuse, ctx.stats = fuse, None
            ctx.save_for_backward(x, y, params)
            return _t(np.empty_like(xn)), _t(np.empty_like(xn))
        R, D = A.rows_cols("x", xn)  # ShapeError for another rank
        stats = fuse.empty_stats(R, D)
        u, h = fuse.forward(xn, yn, pn, stats=stats)
        ctx.fuse, ctx.stats = fuse, stats
        ctx.save_for_backward(x, y, params)
        return _t(u), _t(h)

    @staticmethod
    @once_differentiable
    def backward(ctx, du, dh):
        x, y, params = ctx.saved_tensors
        if ctx.stats is None:  # an empty batch
            return (torch.empty_like(x), torch.empty_like(y), torch.zeros_like(params), None)
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        dhn = _np(dh, "dh") if dh is not None else _zeros_like_np(xn)
        dun = _np(du, "du") if du is not None else None
        dparams = np.zeros(params.numel(), np.float32)
        dx, dy = ctx.fuse.backward(dhn, xn, yn, pn, ctx.stats, du=dun,
                                   dparams=dparams if dparams.size else None)
        return (_t(dx), _t(dy),
                _t(dparams).view_as(params), None)


class MergeFunction(torch.autograd.Function):
    """out = MergeFunction.apply(x, y, params, fuse): N_out(N_x(x) + N_y(y)) through
    sn_merge_forward / sn_merge_backward."""

    @staticmethod
    def forward(ctx, x, y, params, fuse):
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        if _empty_rows(fuse, xn, yn, pn):
            ctx.fuse, ctx.stats = fuse, None
            ctx.save_for_backward(x, y, params)
            return _t(np.empty_like(xn))
        R, D = A.rows_cols("x", xn)  # ShapeError for another rank
        stats = fuse.empty_stats(R, D)
        out = fuse.merge_forward(xn, yn, pn, stats=stats)
        ctx.fuse, ctx.stats = fuse, stats
        ctx.save_for_backward(x, y, params)
        return _t(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, dout):
        x, y, params = ctx.saved_tensors
        if ctx.stats is None:  # an empty batch
            return (torch.empty_like(x), torch.empty_like(y), torch.zeros_like(params), None)
        xn, yn, pn = _np(x, "x"), _np(y, "y"), _params_np(params)
        dparams = np.zeros(params.numel(), np.float32)
        dx, dy = ctx.fuse.merge_backward(_np(dout, "dout"), xn, yn, pn, ctx.stats,
                                         dparams=dparams if dparams.size else None)
        return (_t(dx), _t(dy),
                _t(dparams).view_as(params), None)


class ApplyFunction(torch.autograd.Function):
    """(xo, yo) = ApplyFunction.apply(z, u, y, c): xo = u + z / c, yo = y + z through
    sn_apply_forward / sn_apply_backward (c is a constant float > 0)."""

    @staticmethod
    def forward(ctx, z, u, y, c):
        zn, un, yn = _np(z, "z"), _np(u, "u"), _np(y, "y")
        ctx.c = float(c)
        if _empty_batch(zn, un, yn):  # no C call
            if not (ctx.c > 0 and math.isfinite(ctx.c)):
                raise _capi.error(errors.ScaleError, f"c = {ctx.c}")
            return _t(np.empty_like(zn)), _t(np.empty_like(zn))
        xo, yo = apply_forward(zn, un, yn, ctx.c)
        return _t(xo), _t(yo)

    @staticmethod
    @once_differentiable
    def backward(ctx, dxo, dyo):
        if dxo is None and dyo is None:
            return None, None, None, None
        ref = dxo if dxo is not None else dyo
        if ref.numel() == 0:  # an empty batch
            return torch.empty_like(ref), dxo, dyo, None
        dxon = _np(dxo, "dxo") if dxo is not None else _zeros(ref)
        dyon = _np(dyo, "dyo") if dyo is not None else _zeros(ref)
        dz = apply_backward(dxon, dyon, ctx.c)
        # The gradients of u and y are dxo and dyo themselves (like torch's own add).
        return _t(dz), dxo, dyo, None


class SplitFunction(torch.autograd.Function):
    """(x, y) = SplitFunction.apply(e): two copies of e through sn_split_forward; the backward
    is de = dx + dy (sn_split_backward)."""

    @staticmethod
    def forward(ctx, e):
        en = _np(e, "e")
        if _empty_batch(en):  # no C call
            return _t(np.empty_like(en)), _t(np.empty_like(en))
        x, y = split_forward(en)
        return _t(x), _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dx, dy):
        ref = dx if dx is not None else dy
        if ref is None:
            return None
        if ref.numel() == 0:  # an empty batch
            return torch.empty_like(ref)
        dxn = _np(dx, "dx") if dx is not None else _zeros(ref)
        dyn = _np(dy, "dy") if dy is not None else _zeros(ref)
        return _t(split_backward(dxn, dyn))


def default_scale(i):
    """The library's default residual scale of sub-layer i: sqrt(2 * (floor(i / 2) + 1))."""
    return math.sqrt(2.0 * (i // 2 + 1))


def _width(nm, d):
    return nm.group if nm.group > 0 else d


class NormParams(torch.nn.Module):
    """The parameters of one norm, named as torch.nn.LayerNorm's: weight (gamma) and bias
    (beta), None when the norm has no such parameter (RMSNorm and c1: no bias; non-affine and
    identity norms: neither). Initialised to the library's defaults (gamma 1, beta 0)."""

    def __init__(self, norm, d):
        super().__init__()
        self.norm = norm
        d = _dim(d)
        n, _ = norm.query(d)
        W = _width(norm, d)
        init = _t(norm.init_params(d)) if n else torch.empty(0)
        self.weight = torch.nn.Parameter(init[:W].clone()) if n >= W else None
        self.bias = torch.nn.Parameter(init[W:2 * W].clone()) if n >= 2 * W else None
        self.n_params = n

    def flat(self):
        """The tensors of this norm's parameter block in order, [gamma, beta] (those present)."""
        return [t for t in (self.weight, self.bias) if t is not None]

    def extra_repr(self):
        return repr(self.norm)


class _FuseParams(torch.nn.Module):
    """A fuse's (or merge's) three norms as named NormParams submodules; `params` is their flat
    block in the library's layout [N_x | N_y | N_out]."""

    _names = ("x", "y", "out")

    def __init__(self, fuse, d, names=None):
        super().__init__()
        self.fuse, self.d = fuse, _dim(d)
        self._norm_names = tuple(names or self._names)
        for name, nm in zip(self._norm_names, (fuse.x, fuse.y, fuse.out)):
            setattr(self, name, NormParams(nm, self.d))
        self.n_params = sum(self.norm_module(j).n_params for j in range(3))
        self._register_load_state_dict_pre_hook(self._load_flat_params)

    def norm_module(self, j):
        """The NormParams of norm j (0: N_x, 1: N_y, 2: N_out)."""
        return getattr(self, self._norm_names[j])

    @property
    def params(self):
        """The flat parameter block [N_x | N_y | N_out] (each gamma then beta), as the C
        kernels take it: a new tensor, differentiable with respect to the per-norm parameters.
        Read-only: write through norm_params(j) or the per-norm modules."""
        parts = [t for j in range(3) for t in self.norm_module(j).flat()]
        return torch.cat(parts) if parts else torch.empty(0)

    @params.setter
    def params(self, value):
        raise AttributeError("params is the concatenation of the per-norm parameters, not "
                             "storage: set them through norm_params(j) or load_state_dict")

    def norm_params(self, j):
        """(gamma, beta) of norm j (0: N_x, 1: N_y, 2: N_out) as the .data of its parameters
        (beta None when absent); write into them to set parameters."""
        m = self.norm_module(j)
        return (m.weight.data if m.weight is not None else None,
                m.bias.data if m.bias is not None else None)

    def norm_grads(self, j):
        """(dgamma, dbeta) of norm j (None before a backward or when absent)."""
        m = self.norm_module(j)
        return (m.weight.grad if m.weight is not None else None,
                m.bias.grad if m.bias is not None else None)

    def _load_flat_params(self, state_dict, prefix, *args):
        """Backward compatibility: a state dict of 0.2 holds one flat `params` tensor per fuse;
        split it into the per-norm keys (its length must be this fuse's n_params)."""
        key = prefix + "params"
        if key not in state_dict:
            return
        flat = state_dict[key]
        if flat.numel() != self.n_params:
            return  # left in place: load_state_dict reports it as unexpected
        del state_dict[key]
        off = 0
        for j in range(3):
            m, name = self.norm_module(j), self._norm_names[j]
            for pname in ("weight", "bias"):
                t = getattr(m, pname)
                if t is not None:
                    state_dict[f"{prefix}{name}.{pname}"] = flat[off:off + t.numel()].view_as(t)
                    off += t.numel()


class SiameseSublayer(_FuseParams):
    """One SiameseNorm residual sub-layer around a block (an nn.Module mapping (R, D) to
    (R, D)):
        u = N_post(x),  h = N_in(u + N_pre(y)),  z = block(h),  x' = u + z / c,  y' = y + z
    forward(x, y) -> (x', y'). Norms: Fuse(x=N_post, y=N_pre, out=N_in), parameters in the
    submodules post, pre and input (NormParams). eps: 1e-5 by default (the official DeiT/DiT
    code: 1e-6). input_norm: a Norm for N_in (Norm("identity") removes it, affine="none"
    makes it non-affine as in DiT)."""

    _names = ("post", "pre", "input")

    def __init__(self, block, d, c, kind="layernorm", eps=1e-5, input_norm=None, fuse=None):
        if fuse is None:
            fuse = Fuse(Norm(kind, eps=eps), Norm(kind, eps=eps),
                        input_norm if input_norm is not None else Norm(kind, eps=eps))
        super().__init__(fuse, d)
        if not (c > 0 and math.isfinite(c)):
            raise ValueError(f"the residual scale c must be > 0 and finite, got {c}")
        self.block, self.c = block, float(c)

    def forward(self, x, y):
        u, h = FuseFunction.apply(x, y, self.params, self.fuse)
        z = self.block(h)
        return ApplyFunction.apply(z, u, y, self.c)


class SiameseC1Sublayer(_FuseParams):
    """A hybrid_pre attention sub-layer (OLMo's SiameseNorm hybrid_pre, layer norm replaced by a
    learned per-column scale c1 on x):
        h = c1 * x + N_pre(y),  z = block(h),  x' = x + z / c,  y' = y + z
    Norms: Fuse(x=c1 (kind "scale", gamma only), y=N_pre, out=identity); parameters in the
    submodules c1 and pre (the third, identity, has none)."""

    _names = ("c1", "pre", "input")

    def __init__(self, block, d, c, kind="layernorm", eps=1e-5, fuse=None):
        if fuse is None:
            fuse = Fuse(Norm("scale", affine="scale"), Norm(kind, eps=eps), Norm("identity"))
        super().__init__(fuse, d)
        if not (c > 0 and math.isfinite(c)):
            raise ValueError(f"the residual scale c must be > 0 and finite, got {c}")
        self.block, self.c = block, float(c)

    def forward(self, x, y):
        _, h = FuseFunction.apply(x, y, self.params, self.fuse)
        z = self.block(h)
        return ApplyFunction.apply(z, x, y, self.c)


class SiameseMerge(_FuseParams):
    """The merge at the end of the network: out = N_f(N_a(x) + N_b(y)) (Fuse(x=N_a, y=N_b,
    out=N_f)), parameters in the submodules x (N_a), y (N_b) and final (N_f).
    forward(x, y) -> out. final_norm: a Norm for N_f (e.g. Norm("layernorm", affine="none",
    eps=1e-6) for DiT, whose final layer's norm is non-affine)."""

    _names = ("x", "y", "final")

    def __init__(self, d, kind="layernorm", eps=1e-5, fuse=None, final_norm=None):
        if fuse is None:
            fuse = Fuse(Norm(kind, eps=eps), Norm(kind, eps=eps),
                        final_norm if final_norm is not None else Norm(kind, eps=eps))
        elif final_norm is not None:
            fuse = Fuse(fuse.x, fuse.y, final_norm)
        super().__init__(fuse, d)

    def forward(self, x, y):
        return MergeFunction.apply(x, y, self.params, self.fuse)


_ADAPTER_PLACEMENTS = ("siamese", "siamese_hybrid_pre")


class SiameseNorm(torch.nn.Module):
    """A SiameseNorm residual stack around a list of blocks (one per sub-layer; for a
    transformer: attention, MLP, attention, MLP, ...):
        x = y = e;  for each block: (x, y) = sublayer(x, y);  out = merge(x, y)

    Args:
        blocks: nn.Modules mapping (R, D) float32 to (R, D).
        d: the model width D.
        kind: "layernorm" (gamma and beta) or "rmsnorm" (gamma only).
        eps: every norm's eps. Default 1e-5 (the library's and torch.nn.LayerNorm's); the
            official DeiT and DiT code uses 1e-6: pass eps=1e-6 to match it.
        scales: None for the library's default c_i = sqrt(2 (floor(i/2) + 1)), "none" for 1,
            or a sequence of one c per block.
        input_norm: a siamesenorm.Norm for every N_in (Norm("identity") removes it;
            Norm(kind, affine="none", eps=...) makes it non-affine, as DiT's norm1/norm2).
        final_norm: a siamesenorm.Norm for the merge's N_f (e.g. non-affine for DiT, whose
            FinalLayer.norm_final is LayerNorm(elementwise_affine=False, eps=1e-6)).
        placement: "siamese" (the official DeiT/DiT form) or "siamese_hybrid_pre" (OLMo: the
            even, attention, sub-layers take h = c1 * x + N_pre(y) and x' = x + z / c).
        norm: a siamesenorm.Norm replacing kind and eps for every norm but N_in, c1 and
            final_norm (as Net's norm=; e.g. Norm("layernorm", affine="scale") for LayerNorms
            without beta). Without input_norm, N_in is this norm too.
    The norms' layout is the library's (Net(placement, ...).stage_norms). Parameters per norm:
    sublayers.{i}.post/.pre/.input (hybrid_pre attention: .c1/.pre), merge.x/.y/.final, each
    with weight (and bias). forward(e) accepts (..., D) and returns the same shape: ShapeError
    when the last dimension is not d; an empty batch (no rows) returns an empty tensor, as
    torch.nn.LayerNorm does (the blocks run on (0, D) inputs, the norms' gradients are zero).
    """

    def __init__(self, blocks, d, kind="layernorm", eps=1e-5, scales=None, input_norm=None,
                 final_norm=None, placement="siamese", norm=None):
        super().__init__()
        if placement not in _ADAPTER_PLACEMENTS:
            raise ValueError(f"placement {placement!r}: the torch adapter runs "
                             f"{list(_ADAPTER_PLACEMENTS)} (sn.Net runs every placement)")
        blocks = list(blocks)
        S = len(blocks)
        rule = scales if scales is None or isinstance(scales, str) else list(scales)
        net = Net(placement, S, d, kind=kind, eps=eps, scales=rule, norm=norm,
                  input_norm=input_norm)
        self.placement = placement
        self.scales = [net.scale(i) for i in range(S)]  # the library's c_i
        self.d = net.d
        subs = []
        for i, (b, c) in enumerate(zip(blocks, self.scales)):
            norms = [nm for nm, _ in net.stage_norms(i)]
            if len(norms) == 2:  # hybrid_pre attention: [c1, N_pre]
                subs.append(SiameseC1Sublayer(b, d, c, fuse=Fuse(norms[0], norms[1],
                                                                 Norm("identity"))))
            else:
                subs.append(SiameseSublayer(b, d, c, fuse=Fuse(*norms)))
        self.sublayers = torch.nn.ModuleList(subs)
        self.merge = SiameseMerge(d, fuse=Fuse(*[nm for nm, _ in net.stage_norms(S)]),
                                  final_norm=final_norm)

    def forward(self, e):
        shape = e.shape
        x, y = SplitFunction.apply(_rows(e, self.d, "SiameseNorm"))
        for sub in self.sublayers:
            x, y = sub(x, y)
        return self.merge(x, y).reshape(shape)


class SpanNormSublayer(_FuseParams):
    """One SpanNorm sub-layer around a block: t = v + block(v), n = N(t) through the C kernels
    (a fuse of identities on v and z, then N as its output norm). forward(v) -> N(t); the
    parameters are the submodule `norm` (NormParams)."""

    _names = ("_v", "_z", "norm")

    def __init__(self, block, d, norm):
        super().__init__(Fuse(Norm("identity"), Norm("identity"), norm), d)
        self.block = block

    def forward(self, v):
        return FuseFunction.apply(v, self.block(v), self.params, self.fuse)[1]


class SpanNorm(torch.nn.Module):
    """A SpanNorm residual stack (docs/SPEC.md "SpanNorm") around a list of blocks (attention,
    MLP, attention, MLP, ...): a clean residual spans each layer, Post-Norm inside it:
        a = N_2l(x + attn(x)),  x' = x + N_2l+1(a + mlp(a)) / c,  out = N_f(x_S)
    (an odd last block: x' = x + N(x + attn(x)) / c). The norms and c are the library's
    (Net("span_norm", ...)): c = sqrt(L) by default, "none" for 1, or one c per block (the
    closing block's is used).

    Args: blocks, d, kind, eps, scales, norm: as SiameseNorm's. Parameters:
    sublayers.{i}.norm.weight / .bias, final.norm.weight / .bias. forward(e) accepts (..., D)
    float32 and returns the same shape (ShapeError for another last dimension; an empty batch
    gives an empty output, as SiameseNorm's)."""

    def __init__(self, blocks, d, kind="layernorm", eps=1e-5, scales=None, norm=None):
        super().__init__()
        blocks = list(blocks)
        S = len(blocks)
        rule = scales if scales is None or isinstance(scales, str) else list(scales)
        net = Net("span_norm", S, d, kind=kind, eps=eps, scales=rule, norm=norm)
        self.scales = [net.scale(i) for i in range(S)]
        self.d = net.d
        self.sublayers = torch.nn.ModuleList(
            SpanNormSublayer(b, d, net.stage_norms(i)[0][0]) for i, b in enumerate(blocks))
        self.final = SpanNormSublayer(torch.nn.Identity(), d, net.stage_norms(S)[0][0])

    def forward(self, e):
        shape = e.shape
        x = _rows(e, self.d, "SpanNorm")
        S = len(self.sublayers)
        for i in range(0, S, 2):
            if i + 1 < S:
                a = self.sublayers[i](x)
                x = x + self.sublayers[i + 1](a) / self.scales[i + 1]
            else:
                x = x + self.sublayers[i](x) / self.scales[i]
        # the final norm alone: N_f(x + 0), x + 0 being x exactly
        return FuseFunction.apply(x, torch.zeros_like(x), self.final.params,
                                  self.final.fuse)[1].reshape(shape)


class _HCPass:
    """One forward pass of a HyperConnections module: a Net of its own (params as the forward saw
    them, acts, work, grads), so several forwards may wait for their backwards (or never get
    one), or run in other threads, without touching each other's saved activations."""

    def __init__(self, cfg, act_dtype, flat):
        self.net = Net(**cfg, act_dtype=act_dtype)
        self.net.params[:] = flat.detach().cpu().numpy().reshape(-1)

    def bind(self):
        return self.net


def _token():
    """The float32 tensor that chains the pass's Functions, so autograd runs their backwards in
    the order the library requires (merge, then per sub-layer from the last: exit, the block,
    enter; then the split)."""
    return torch.zeros(1)


class _HCSplit(torch.autograd.Function):
    @staticmethod
    def forward(ctx, e, flat, p):
        ctx.p = p
        p.bind().split(_np(e, "e"))
        return _token()

    @staticmethod
    @once_differentiable
    def backward(ctx, dtok):
        net = ctx.p.bind()
        de = net.split_backward()
        return _t(de), torch.from_numpy(net.grads.copy()), None


class _HCEnter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tok, p, i):
        ctx.p, ctx.i = p, i
        return _t(p.bind().enter(i)), _token()

    @staticmethod
    @once_differentiable
    def backward(ctx, dh, dtok):
        net = ctx.p.bind()
        dhn = _np(dh, "dh") if dh is not None else np.zeros((net.R, net.d), net.dtype)
        net.enter_backward(ctx.i, dhn)
        return _token(), None, None


class _HCExit(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tok, z, p, i):
        ctx.p, ctx.i = p, i
        p.bind().exit(i, _np(z, "z"))
        return _token()

    @staticmethod
    @once_differentiable
    def backward(ctx, dtok):
        dz = ctx.p.bind().exit_backward(ctx.i)
        return _token(), _t(dz), None, None


class _HCMerge(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tok, p):
        ctx.p = p
        return _t(p.bind().merge())

    @staticmethod
    @once_differentiable
    def backward(ctx, dout):
        net = ctx.p.bind()
        net.zero_grad()  # the pass's parameter gradients, accumulated down to the split
        net.merge_backward(_np(dout, "dout"))
        return _token(), None


class HyperConnSublayer(torch.nn.Module):
    """One Hyper-Connections sub-layer's parameters (docs/SPEC.md, "Hyper-Connections"), named
    as the paper's PyTorch pseudocode (arXiv 2409.19606, Algorithm 2) names them, plus the
    block and its Pre-Norm norm:
        norm.weight / .bias          N_i, on the block input's mix h0
        static_alpha  (n, n + 1)     row k = stream k: [A_m[k], A_r[k][0], ..., A_r[k][n-1]]
        static_beta   (n,)           B
    dynamic HC also:
        streams_norm.weight / .bias  N_hc, on each stream (the pseudocode's layer_norm)
        dynamic_alpha_fn (D, n + 1)  the projections of the dynamic alpha terms
        dynamic_beta_fn  (D,)
        dynamic_alpha_scale, dynamic_beta_scale  (1,)"""

    def __init__(self, block, norms, n, d, dynamic):
        super().__init__()
        self.block = block
        self.norm = NormParams(norms[0], d)
        self.static_alpha = torch.nn.Parameter(torch.empty(n, n + 1))
        self.static_beta = torch.nn.Parameter(torch.empty(n))
        if dynamic:
            self.streams_norm = NormParams(norms[1], d)
            self.dynamic_alpha_fn = torch.nn.Parameter(torch.empty(d, n + 1))
            self.dynamic_beta_fn = torch.nn.Parameter(torch.empty(d))
            self.dynamic_alpha_scale = torch.nn.Parameter(torch.empty(1))
            self.dynamic_beta_scale = torch.nn.Parameter(torch.empty(1))
        self.dynamic = dynamic

    def _conn(self):
        """[(parameter, its layout in the library's block)]: dynamic_alpha_fn is stored
        transposed there (Wa, (n + 1) x D; sn_net_conn_at)."""
        out = [(self.static_alpha, False), (self.static_beta, False)]
        if self.dynamic:
            out += [(self.dynamic_alpha_fn, True), (self.dynamic_beta_fn, False),
                    (self.dynamic_alpha_scale, False), (self.dynamic_beta_scale, False)]
        return out

    def conn_tensors(self):
        """The connection weights in the library's order and layout (sn_net_conn_at), flat."""
        return [(p.t() if tr else p).reshape(-1) for p, tr in self._conn()]

    def load_conn(self, flat):
        """Set the connection weights from their block in the library's layout."""
        off = 0
        with torch.no_grad():
            for p, tr in self._conn():
                part = flat[off:off + p.numel()]
                p.copy_(part.view(p.t().shape).t() if tr else part.view_as(p))
                off += p.numel()

    def norm_modules(self):
        return [self.norm, self.streams_norm] if self.dynamic else [self.norm]


class HyperConnections(torch.nn.Module):
    """A Hyper-Connections residual stack (Zhu et al., ICLR 2025; docs/SPEC.md) around a list of
    blocks (attention, MLP, ...), run by the library's placement layer
    (Net("hyper_connections", ...)): n streams, all e at the start; per sub-layer
        h0 = sum_k A_m[k] H_k,  z = block(N_i(h0)),  H'_j = sum_k A_r[k][j] H_k + B[j] z
    (dynamic HC: per-row terms s * tanh(<N_hc(H_k), W>) added to A_m, A_r and B); out =
    N_f(sum_k H_k). Initialised as the paper (A_m = e_{i mod n}, A_r = I, B = 1, the dynamic
    projections 0, their scales 0.01): the network starts as Pre-Norm.

    Args:
        blocks: nn.Modules mapping (R, D) to (R, D) (float32, or bfloat16 for bf16 input).
        d: the model width D.
        n: the expansion rate (number of streams), 1 .. SN_HC_MAX_RATE (default 4).
        dynamic: dynamic HC (default) or static HC (False).
        kind, eps, norm: every norm's kind and eps, or a siamesenorm.Norm for all (as Net's).
    Parameters: sublayers.{i}.norm, .static_alpha, .static_beta (dynamic: .streams_norm,
    .dynamic_alpha_fn, .dynamic_beta_fn, .dynamic_alpha_scale, .dynamic_beta_scale; see
    HyperConnSublayer), final.weight / .bias. forward(e) accepts (..., D) and returns the same
    shape (ShapeError for another last dimension); each forward keeps its own activations until
    its backward. An empty batch (no rows) returns an empty tensor, as torch.nn.LayerNorm does:
    the blocks run on a (0, D) input and every parameter's gradient is zero.

    copy.deepcopy, pickle and torch.save of the whole module work (the layout Net it holds
    pickles; see siamesenorm.Net): the copy computes the same outputs and gradients, bit for
    bit."""

    def __init__(self, blocks, d, n=4, dynamic=True, kind="layernorm", eps=1e-5, norm=None):
        super().__init__()
        blocks = list(blocks)
        S = len(blocks)
        self._cfg = dict(placement="hyper_connections", n_sublayers=S, d=d, kind=kind, eps=eps,
                         norm=norm, hc_rate=n, hc_dynamic=dynamic)
        net = Net(**self._cfg)
        self._net = net  # the layout (norm_at, conn_at) and the initial parameters
        self.d, self.n, self.dynamic = net.d, net.hc_rate, net.hc_dynamic
        self.sublayers = torch.nn.ModuleList(
            HyperConnSublayer(b, [nm for nm, _ in net.stage_norms(i)], self.n, self.d,
                              self.dynamic) for i, b in enumerate(blocks))
        self.final = NormParams(net.stage_norms(S)[0][0], self.d)
        self._load(torch.from_numpy(net.init_params()))  # the paper's initialisation

    def _load(self, flat):
        """Set every parameter from a block in the library's layout (n_params floats)."""
        net = self._net
        if flat.numel() != net.n_params or self._flat().numel() != net.n_params:
            raise ValueError(f"{flat.numel()} floats, the library's block has {net.n_params}")
        with torch.no_grad():
            for i, sub in enumerate(self.sublayers):
                for j, m in enumerate(sub.norm_modules()):
                    off = net.norm_at(i, j)[1]
                    for t in m.flat():
                        t.copy_(flat[off:off + t.numel()])
                        off += t.numel()
                off, count = net.conn_at(i)
                sub.load_conn(flat[off:off + count])
            off = net.norm_at(len(self.sublayers), 0)[1]
            for t in self.final.flat():
                t.copy_(flat[off:off + t.numel()])
                off += t.numel()

    def _flat_parts(self):
        """Every parameter tensor (or its transposed view) in the library's order, checked
        against the Net's offsets (sn_net_norm_at, sn_net_conn_at)."""
        net, parts, off = self._net, [], 0
        for i, sub in enumerate(self.sublayers):
            for j, m in enumerate(sub.norm_modules()):
                assert net.norm_at(i, j)[1] == off, (i, j)
                parts += m.flat()
                off += m.n_params
            assert net.conn_at(i)[0] == off, i
            for t in sub.conn_tensors():
                parts.append(t)
                off += t.numel()
            assert off == sum(net.conn_at(i)), i
        assert net.norm_at(len(self.sublayers), 0)[1] == off
        return parts + self.final.flat()

    def _flat(self):
        return torch.cat([t.reshape(-1) for t in self._flat_parts()])

    def forward(self, e):
        shape = e.shape
        e2 = _rows(e, self.d, "HyperConnections")
        flat = self._flat()
        if e2.shape[0] == 0:
            # an empty batch (the library rejects R = 0): the blocks run on the empty input, and
            # the parameters enter with weight 0 so that their gradients are zero, not None
            h = e2 + 0 * flat.sum().to(e2.dtype)
            out = h
            for sub in self.sublayers:
                out = out + sub.block(h)
            return out.reshape(shape)
        p = _HCPass(self._cfg, "bf16" if e.dtype == torch.bfloat16 else "f32", flat)
        tok = _HCSplit.apply(e2, flat, p)
        for i, sub in enumerate(self.sublayers):
            h, tok = _HCEnter.apply(tok, p, i)
            tok = _HCExit.apply(tok, sub.block(h), p, i)
        return _HCMerge.apply(tok, p).reshape(shape)
