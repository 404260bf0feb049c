"""Runs one network three ways and measures the parity metric:
  ref64  the pure-PyTorch reference (parity_ref) in float64 autograd: the ground truth;
  ref32  the same reference in float32 autograd (what PyTorch itself achieves in fp32);
  lib    float32: the norm placement by libsiamesenorm through the binding (sn.Net), the
         blocks' forward and backward by torch float32 (the same weights).
Parameters and inputs are drawn in float32 so that all three see identical values."""

import copy

import numpy as np
import torch

import siamesenorm as sn
import placement_ref as P
from parity_ref import (SiameseRef, PreNormRef, PostNormRef, official_scale, randomise_norms,
                        rel_err)

L, S, R, D, HIDDEN = 12, 24, 64, 96, 4 * 96
TOL = 1e-5


PLACEMENT_NAMES = ("pre_norm", "post_norm", "siamese", "siamese_paper", "siamese_hybrid_pre",
                   "deepnorm", "peri_ln", "mix_ln", "hybridnorm", "hybridnorm_star", "span_norm",
                   "hyper_connections")


def _reference(placement, kind, eps, ref_scales, input_norm, mix_fraction):
    """The PyTorch formulation of a placement (parity_ref / placement_ref: from SPEC)."""
    if placement == "siamese":
        return SiameseRef(S, D, kind, eps, HIDDEN, ref_scales, input_norm=input_norm)
    if placement == "pre_norm":
        return PreNormRef(S, D, kind, eps, HIDDEN)
    if placement == "post_norm":
        return PostNormRef(S, D, kind, eps, HIDDEN)
    if placement == "siamese_paper":
        return P.SiamesePaperRef(S, D, kind, eps, HIDDEN, ref_scales)
    if placement == "siamese_hybrid_pre":
        return P.SiameseHybridPreRef(S, D, kind, eps, HIDDEN, ref_scales)
    if placement == "deepnorm":
        return P.DeepNormRef(S, D, kind, eps, HIDDEN, ref_scales)
    if placement == "peri_ln":
        return P.PeriLNRef(S, D, kind, eps, HIDDEN)
    if placement == "mix_ln":
        return P.MixLNRef(S, D, kind, eps, HIDDEN, 0.25 if mix_fraction is None else mix_fraction)
    if placement in ("hybridnorm", "hybridnorm_star"):
        return P.HybridNormRef(S, D, kind, eps, HIDDEN, star=placement == "hybridnorm_star")
    if placement == "span_norm":
        return P.SpanNormRef(S, D, kind, eps, HIDDEN, ref_scales)
    raise ValueError(placement)


def build(placement, kind, eps, scales, seed, input_norm=True, mix_fraction=None,
          init_gain=None):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = _reference(placement, kind, eps, scales, input_norm, mix_fraction)
    model = model.float()
    randomise_norms(model, gen)
    if init_gain is not None:
        model.apply_init_gain(init_gain)
    e = torch.randn(R, D, generator=gen)
    G = torch.randn(R, D, generator=gen)  # loss = sum(out * G): dout = G
    return model, e, G


def torch_run(model, e, G):
    e = e.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    out = model(e)
    (out * G).sum().backward()
    res = {"out": out.detach(), "de": e.grad.detach()}
    for i, j, m in model.norms_by_stage():
        if m is None:
            continue
        res[("gamma", i, j)] = m.weight.grad.detach()
        if getattr(m, "bias", None) is not None:
            res[("beta", i, j)] = m.bias.grad.detach()
    for b, blk in enumerate(model.blocks):
        for name, p in blk.named_parameters():
            res[("block", b, name)] = p.grad.detach()
    return res


def library_run(model, placement, kind, eps, scales_arg, e, G, ctx=None, keep_h=False,
                **net_kw):
    """keep_h: also return every block input h_i the library produced, as ("h", i)."""
    net = sn.Net(placement, S, D, kind=kind, eps=eps, scales=scales_arg, ctx=ctx, **net_kw)
    by_stage = {}
    for i, j, m in model.norms_by_stage():
        by_stage.setdefault(i, []).append(m)
    for i in range(-1, S + 1):  # the split, every sub-layer, the merge
        assert len(net.stage_norms(i)) == len(by_stage.get(i, [])), (i, net.stage_norms(i))
    for i, j, m in model.norms_by_stage():
        if m is None:  # the library keeps a parameter-free identity norm in this slot
            nm, _ = net.norm_at(i, j)
            assert nm.kind == sn.SN_NORM_IDENTITY or nm.affine == sn.SN_AFFINE_NONE, (i, j)
            assert nm.query(D)[0] == 0, (i, j, nm.query(D))
            continue
        if isinstance(m, P.Scale):
            assert net.norm_at(i, j)[0].kind == sn.SN_NORM_SCALE, (i, j, net.norm_at(i, j))
        gamma, beta = net.param_views(i, j)
        gamma[:] = m.weight.detach().numpy()
        has_bias = getattr(m, "bias", None) is not None
        assert (beta is not None) == has_bias, (i, j, net.norm_at(i, j))
        if has_bias:
            beta[:] = m.bias.detach().numpy()
    net.zero_grad()
    net.split(np.ascontiguousarray(e.numpy()))
    graphs = []
    for i in range(S):
        h = net.enter(i)
        ht = torch.from_numpy(h).requires_grad_(True)
        zt = model.blocks[i](ht)
        net.exit(i, np.ascontiguousarray(zt.detach().numpy()))
        graphs.append((ht, zt))
    if keep_h:
        res_h = {("h", i): graphs[i][0].detach().clone() for i in range(S)}
    out = net.merge()
    net.merge_backward(np.ascontiguousarray(G.numpy()))
    res = {"out": torch.from_numpy(out.copy())}
    if keep_h:
        res.update(res_h)
    for i in reversed(range(S)):
        dz = net.exit_backward(i)
        ht, zt = graphs[i]
        names, params = zip(*model.blocks[i].named_parameters())
        grads = torch.autograd.grad(zt, (ht,) + params, grad_outputs=torch.from_numpy(dz))
        net.enter_backward(i, np.ascontiguousarray(grads[0].numpy()))
        for name, g in zip(names, grads[1:]):
            res[("block", i, name)] = g
    res["de"] = torch.from_numpy(net.split_backward())
    for i, j, m in model.norms_by_stage():
        if m is None:
            continue
        dg, db = net.grad_views(i, j)
        res[("gamma", i, j)] = torch.from_numpy(dg.copy())
        if db is not None:
            res[("beta", i, j)] = torch.from_numpy(db.copy())
    return res, net


def group_of(key):
    return key if isinstance(key, str) else key[0]


def reference_scales(placement, scales, seed):
    """(scales for the reference, the Net's scales argument, the c_i / alpha_i the library must
    report) for scales in "default", "none", "custom" (random explicit values)."""
    if placement not in ("siamese", "siamese_paper", "siamese_hybrid_pre", "deepnorm",
                         "span_norm"):
        return None, None, [1.0] * S
    if scales == "default":
        if placement == "deepnorm":
            ref = [P.deepnorm_alpha(L)] * S
        elif placement == "span_norm":
            ref = [P.span_scale(S)] * S
        else:
            ref = [official_scale(i) for i in range(S)]
        return ref, None, ref
    if scales == "none":
        return [1.0] * S, "none", [1.0] * S
    rng = np.random.default_rng(seed + 100)
    c = rng.uniform(0.5, 3.0, S).astype(np.float32)
    return [float(v) for v in c], c, [float(v) for v in c]


def measure(placement, kind, eps=1e-5, scales="default", seed=0, isa=None, input_norm=True,
            mix_fraction=None):
    """Returns rows = {group: (lib_vs_64, t32_vs_64, lib_vs_t32, worst key)}.
    input_norm=False: SiameseNorm without the input norm; mix_fraction: Mix-LN's fraction."""
    ref_scales, scales_arg, want_scales = reference_scales(placement, scales, seed)
    gain = P.deepnorm_beta(L) if placement == "deepnorm" else None
    net_kw = {}
    if not input_norm:
        net_kw["input_norm"] = sn.Norm("identity")
    if mix_fraction is not None:
        net_kw["mix_fraction"] = mix_fraction
    model, e, G = build(placement, kind, eps, ref_scales, seed, input_norm=input_norm,
                        mix_fraction=mix_fraction, init_gain=gain)
    ref64_model = copy.deepcopy(model).double()
    ref64 = torch_run(ref64_model, e.double(), G.double())
    ref32 = torch_run(model, e, G)
    ctx = sn.Context(isa=isa) if isa else None  # None: the library's best kernel path
    lib, net = library_run(model, placement, kind, eps, scales_arg, e, G, ctx, **net_kw)
    for i in range(S):  # c_i (SiameseNorm family), alpha (DeepNorm), else 1
        assert abs(net.scale(i) - want_scales[i]) <= 1e-6 * want_scales[i], (i, net.scale(i))
    want_gain = 1.0 if gain is None else gain
    assert abs(net.init_gain() - want_gain) <= 1e-6 * want_gain, (net.init_gain(), want_gain)
    assert set(lib) == set(ref64), set(lib) ^ set(ref64)
    rows = {}
    for k in ref64:
        errs = (rel_err(lib[k], ref64[k]), rel_err(ref32[k], ref64[k]), rel_err(lib[k], ref32[k]))
        g = group_of(k)
        if g not in rows or errs[0] > rows[g][0]:
            rows[g] = errs + (k,)
    return rows


def report(title, rows):
    print(f"\n{title}: metric = max|a - ref| / max|ref| per tensor, worst tensor of each group")
    print(f"  {'tensor':8s} {'lib vs f64':>11s} {'torch32 vs f64':>15s} {'lib vs torch32':>15s}"
          f"  worst")
    for g in ("out", "de", "gamma", "beta", "block"):
        if g in rows:
            a, b, c, k = rows[g]
            print(f"  {g:8s} {a:11.2e} {b:15.2e} {c:15.2e}  {k}")
