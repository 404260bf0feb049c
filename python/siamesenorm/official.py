"""State-dict mapping between the official SiameseNorm code (github.com/Qwen-Applications/
SiameseNorm) and the library's parameter layout: load an official checkpoint's norm tensors
into a siamesenorm.Net (its flat parameter block) or a siamesenorm.torch_adapter.SiameseNorm
(its per-norm modules), and write them back under the official names.

The official layer l holds two sub-layers, attention (library stage 2l) and MLP (stage 2l+1);
stage S = 2L is the merge. j is the norm's index within its stage (sn_net_norm_at's order).
Which stream each official norm acts on was read from the official forward passes:

layout "deit" (deit-model-siamesenorm.py, Block / VisionTransformer.forward_features):
    blocks.{l}.post_norm1     stage 2l,   j 0  N_post  on x (u = post_norm1(x))
    blocks.{l}.pre_norm1      stage 2l,   j 1  N_pre   on y
    blocks.{l}.input_norm1    stage 2l,   j 2  N_in    on u + N_pre(y)
    blocks.{l}.post_norm2 / pre_norm2 / input_norm2    stage 2l+1, j 0 / 1 / 2, likewise
    pre_norm                  stage S,    j 0  N_a     on x  (the names are the other way
    post_norm                 stage S,    j 1  N_b     on y   round: pre_norm(x) + post_norm(y))
    final_norm                stage S,    j 2  N_f     on the sum
layout "dit" (dit-model-siamesenorm.py, DiTBlock / DiT.forward / FinalLayer; no underscores):
    blocks.{l}.postnorm1      stage 2l,   j 0  N_post  on x
    blocks.{l}.prenorm1       stage 2l,   j 1  N_pre   on y (DiT calls that stream t)
    blocks.{l}.norm1          stage 2l,   j 2  N_in, non-affine (no tensors; the block's
                                               adaLN modulate follows it, in the block)
    blocks.{l}.postnorm2 / prenorm2 / norm2            stage 2l+1, likewise
    postnorm                  stage S,    j 0  N_a     on x (postnorm(x) + prenorm(t))
    prenorm                   stage S,    j 1  N_b     on y
    final_layer.norm_final    stage S,    j 2  N_f, non-affine (no tensors)
layout "olmo_hybrid_pre" (OLMo_model_hybrid_pre.py, OLMoSequentialBlock / OLMo.forward):
    transformer.blocks.{l}.c1             stage 2l,   j 0  c1 (a bare Parameter, key without
                                                           .weight): h = x * c1 + N_pre(y)
    transformer.blocks.{l}.attn_y_norm    stage 2l,   j 1  N_pre on y
    transformer.blocks.{l}.ff_norm        stage 2l+1, j 0  N_post on x (u = ff_norm(x), and
                                                           x' = u + z/c)
    transformer.blocks.{l}.ff_y_norm      stage 2l+1, j 1  N_pre on y
    transformer.blocks.{l}.ff_input_norm  stage 2l+1, j 2  N_in on u + N_pre(y)
    transformer.ln_f                      stage S,    j 0  N_a on x
    transformer.ln_y_f                    stage S,    j 1  N_b on y
    transformer.ln_final_f                stage S,    j 2  N_f on the sum
    With block_group_size G > 1 the blocks are transformer.block_groups.{l // G}.{l % G}.

The residual scale of all three is c = sqrt(2 (l + 1)) for both sub-layers of layer l, the
library's default scale rule. eps is not in a state dict: DeiT and DiT use 1e-6, OLMo its
config's layer_norm_eps (default 1e-5); build the library's model with the same (make_net,
make_module). A non-affine official norm (DiT's) loads as gamma 1, beta 0 when the library's
norm has parameters (the same function), and writing it back requires exactly those values.

Loading converts to float32 (the library's only precision) and checks every tensor's presence
and shape, and that the library's norms have the same parameters (gamma, beta) as the official
ones, before it writes anything.
"""

import ctypes
import re
from collections import OrderedDict

import numpy as np

from ._capi import check_int
from .errors import IndexOutOfRange
from .net import Net, PLACEMENTS
from .norm import Norm

__all__ = ["LAYOUTS", "norm_names", "from_state_dict", "to_state_dict", "from_deit_state_dict",
           "to_deit_state_dict", "from_dit_state_dict", "to_dit_state_dict",
           "from_olmo_state_dict", "to_olmo_state_dict", "make_net", "make_module"]

#: layout -> (the library placement, the official eps)
LAYOUTS = {"deit": ("siamese", 1e-6), "dit": ("siamese", 1e-6),
           "olmo_hybrid_pre": ("siamese_hybrid_pre", 1e-5)}

# Entry kinds: "norm" (module with weight and maybe bias), "bare" (a Parameter under the key
# itself: OLMo's c1), "nonaffine" (a module without parameters).


def _layout(layout):
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {sorted(LAYOUTS)}")
    return layout


# Each official norm by what it does: (name template, the library's norm role, kind), for the
# attention sub-layer, the MLP sub-layer and the merge. The (stage, j) of each comes from the
# library (sn_net_find_norm on a net of the layout's placement), so this map cannot drift from
# the parameter layout. {l}: the layer; {b}: OLMo's block path.
_NAMES = {
    "deit": ([("blocks.{l}.post_norm1", "post", "norm"), ("blocks.{l}.pre_norm1", "pre", "norm"),
              ("blocks.{l}.input_norm1", "input", "norm")],
             [("blocks.{l}.post_norm2", "post", "norm"), ("blocks.{l}.pre_norm2", "pre", "norm"),
              ("blocks.{l}.input_norm2", "input", "norm")],
             [("pre_norm", "merge_x", "norm"), ("post_norm", "merge_y", "norm"),
              ("final_norm", "final", "norm")]),
    "dit": ([("blocks.{l}.postnorm1", "post", "norm"), ("blocks.{l}.prenorm1", "pre", "norm"),
             ("blocks.{l}.norm1", "input", "nonaffine")],
            [("blocks.{l}.postnorm2", "post", "norm"), ("blocks.{l}.prenorm2", "pre", "norm"),
             ("blocks.{l}.norm2", "input", "nonaffine")],
            [("postnorm", "merge_x", "norm"), ("prenorm", "merge_y", "norm"),
             ("final_layer.norm_final", "final", "nonaffine")]),
    "olmo_hybrid_pre": ([("{b}.c1", "scale", "bare"), ("{b}.attn_y_norm", "pre", "norm")],
                        [("{b}.ff_norm", "post", "norm"), ("{b}.ff_y_norm", "pre", "norm"),
                         ("{b}.ff_input_norm", "input", "norm")],
                        [("transformer.ln_f", "merge_x", "norm"),
                         ("transformer.ln_y_f", "merge_y", "norm"),
                         ("transformer.ln_final_f", "final", "norm")]),
}


def norm_names(layout, n_layers, prefix="", block_group_size=1):
    """[(official module name, stage, j, kind)] of every norm of an official model with
    n_layers layers, in the library's order; kind is "norm", "bare" (the key is the name itself,
    OLMo's c1) or "nonaffine" (no tensors). prefix is prepended to every name (e.g. "module."
    for a DistributedDataParallel checkpoint). Each name's j is the library's norm of its role
    in that stage (Net.find_norm)."""
    _layout(layout)
    L = check_int(n_layers, ctypes.c_int32, "n_layers")
    if L < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    G = check_int(block_group_size, ctypes.c_int32, "block_group_size")
    if G < 1:
        raise ValueError(f"block_group_size must be >= 1, got {block_group_size}")
    roles = Net(LAYOUTS[layout][0], 2 * L, 1)  # the roles do not depend on the width
    attn, mlp, merge = _NAMES[layout]
    out = []
    for l in range(L):
        b = (f"transformer.blocks.{l}" if G == 1
             else f"transformer.block_groups.{l // G}.{l % G}")
        for stage, entries in ((2 * l, attn), (2 * l + 1, mlp)):
            out += [(t.format(l=l, b=b), stage, roles.find_norm(stage, role), kind)
                    for t, role, kind in entries]
    out += [(t, 2 * L, roles.find_norm(2 * L, role), kind) for t, role, kind in merge]
    out.sort(key=lambda e: (e[1], e[2]))  # the library's order
    return [(prefix + name, s, j, kind) for name, s, j, kind in out]


# ---- the library side: a Net or a torch_adapter.SiameseNorm ------------------------------------

def _placement_name(target):
    if isinstance(target, Net):
        names = {v: k for k, v in PLACEMENTS.items()}
        return names.get(target.placement, target.placement), target.n_sublayers, "Net"
    subs = getattr(target, "sublayers", None)
    if subs is not None and hasattr(target, "merge") and hasattr(target, "placement"):
        return target.placement, len(subs), "SiameseNorm"
    raise TypeError("target must be a siamesenorm.Net or a siamesenorm.torch_adapter.SiameseNorm, "
                    f"got {type(target).__name__}")


def _views(target, stage, j):
    """(gamma, beta) of norm j of stage as writable arrays/tensors of the library's storage
    (None when absent; both None for a slot without parameters)."""
    if isinstance(target, Net):
        try:
            return target.param_views(stage, j)
        except IndexOutOfRange:  # no such norm in this stage
            return None, None
    S = len(target.sublayers)
    mod = target.merge if stage == S else target.sublayers[stage]
    return mod.norm_params(j)


def _check_target(layout, target):
    placement, S, what = _placement_name(target)
    want = LAYOUTS[_layout(layout)][0]
    if placement != want:
        raise ValueError(f"layout {layout!r} needs placement {want!r}; the {what} has "
                         f"{placement!r}")
    if S % 2:
        raise ValueError(f"the {what} has {S} sub-layers; the official models have 2 per layer")
    return S // 2


def _to_f32(value, key):
    """A float32 numpy copy of a tensor or array of real floating-point values (float16,
    bfloat16, float32, float64), every value finite in float32. A complex, integer, boolean or
    non-numeric tensor raises TypeError (a complex gamma is not silently cut to its real part),
    a NaN, an infinity or a value past the float32 range ValueError."""
    if hasattr(value, "detach"):  # torch.Tensor
        if value.is_complex() or not value.is_floating_point():
            raise TypeError(f"{key}: dtype {value.dtype}; a norm's tensors are real "
                            "floating-point")
        value = value.detach().cpu().float().numpy()
    try:
        src = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{key}: not a tensor or array ({type(value).__name__})") from exc
    if src.dtype.kind != "f":
        raise TypeError(f"{key}: dtype {src.dtype}; a norm's tensors are real floating-point")
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.array(src, dtype=np.float32)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{key}: holds a NaN, an infinity or a value past the float32 range")
    return arr


def _layer_pattern(key):
    """key with every numeric path component replaced by '#': the same pattern for the
    tensors of every layer (blocks.3.pre_norm1.weight -> blocks.#.pre_norm1.weight)."""
    return re.sub(r"\.\d+(?=\.|$)", ".#", key)


def _unused_norm_keys(layout, state_dict, n_layers, prefix, block_group_size, used):
    """The state_dict keys that name a norm tensor of this layout (of any layer) but were not
    loaded: those of layers the target does not have, or tensors the layout never uses."""
    patterns = set()
    for name, _, _, kind in norm_names(layout, n_layers, prefix, block_group_size):
        for key in ((name,) if kind == "bare" else (name + ".weight", name + ".bias")):
            patterns.add(_layer_pattern(key))
    used = set(used)
    return [k for k in state_dict
            if isinstance(k, str) and k not in used and _layer_pattern(k) in patterns]


def _set(dst, src):
    if hasattr(dst, "copy_"):  # torch tensor (the .data of a Parameter)
        import torch
        with torch.no_grad():
            dst.copy_(torch.from_numpy(src).view_as(dst))
    else:
        dst[...] = src.reshape(dst.shape)


def from_state_dict(layout, state_dict, target, prefix="", block_group_size=1):
    """Copy the norm tensors of an official model's state_dict into target, a siamesenorm.Net
    (its params) or a siamesenorm.torch_adapter.SiameseNorm (its per-norm parameters), whose
    placement and depth match layout ("deit", "dit", "olmo_hybrid_pre"; see the module
    docstring for the names). Every tensor is checked before anything is written. Returns the
    list of state_dict keys used: the rest (attention, MLP, embeddings, ...) are the blocks'.

    Raises KeyError (a missing tensor), ValueError (a shape; a gamma/beta the library's norm
    lacks or has beyond the official one: e.g. an OLMo LayerNorm without bias needs the
    library's Norm("layernorm", affine="scale"); a norm tensor of the layout left unused, e.g.
    the layers 6..11 of a 12-layer state dict loaded into a 6-layer target; a NaN or infinite
    value), TypeError (target; a tensor that is not real floating-point, e.g. complex)."""
    n_layers = _check_target(layout, target)
    plan, used = [], []
    for name, stage, j, kind in norm_names(layout, n_layers, prefix, block_group_size):
        g, b = _views(target, stage, j)
        if kind == "nonaffine":
            for key in (name + ".weight", name + ".bias"):
                if key in state_dict:
                    raise ValueError(f"{key}: the official {name} is non-affine, but the state "
                                     "dict holds a tensor for it")
            # the identity transform: gamma 1, beta 0 where the library's norm has them
            if g is not None:
                plan.append((g, np.ones(tuple(g.shape), np.float32)))
            if b is not None:
                plan.append((b, np.zeros(tuple(b.shape), np.float32)))
            continue
        wkey = name if kind == "bare" else name + ".weight"
        bkey = None if kind == "bare" else name + ".bias"
        if wkey not in state_dict:
            raise KeyError(f"{wkey} is not in the state dict (layout {layout!r}, "
                           f"{n_layers} layers, prefix {prefix!r})")
        if g is None:
            raise ValueError(f"{wkey}: the library's norm {j} of stage {stage} has no gamma "
                             "(non-affine or identity); build it with an affine norm")
        w = _to_f32(state_dict[wkey], wkey)
        if w.shape != tuple(g.shape):
            raise ValueError(f"{wkey}: shape {w.shape}, the library's gamma is "
                             f"{tuple(g.shape)}")
        plan.append((g, w))
        used.append(wkey)
        has_bias = bkey is not None and state_dict.get(bkey) is not None
        if has_bias and b is None:
            raise ValueError(f"{bkey}: the official norm has a bias (beta) but the library's "
                             f"norm {j} of stage {stage} has none: use a LayerNorm with "
                             "affine='scale_shift'")
        if b is not None and not has_bias:
            raise ValueError(f"{name}: the library's norm {j} of stage {stage} has a beta but "
                             f"the state dict has no {bkey or 'bias'}: use affine='scale' "
                             "(gamma only) for this model's norms")
        if has_bias:
            bv = _to_f32(state_dict[bkey], bkey)
            if bv.shape != tuple(b.shape):
                raise ValueError(f"{bkey}: shape {bv.shape}, the library's beta is "
                                 f"{tuple(b.shape)}")
            plan.append((b, bv))
            used.append(bkey)
    unused = _unused_norm_keys(layout, state_dict, n_layers, prefix, block_group_size, used)
    if unused:
        raise ValueError(f"{len(unused)} norm tensors of the state dict would be left unused "
                         f"(e.g. {', '.join(sorted(unused)[:3])}): it is not a {n_layers}-layer "
                         f"{layout!r} model like the target (layers, prefix or block groups "
                         "differ)")
    for dst, src in plan:
        _set(dst, src)
    return used


def to_state_dict(layout, source, prefix="", block_group_size=1):
    """The norm tensors of source (a siamesenorm.Net or torch_adapter.SiameseNorm) under the
    official names of layout, as an OrderedDict: torch tensors (copies) from a SiameseNorm,
    numpy float32 arrays (copies) from a Net. Merge it with the blocks' tensors to obtain an
    official checkpoint. Raises ValueError when an official norm is non-affine but the
    library's has parameters other than gamma 1, beta 0 (not representable)."""
    n_layers = _check_target(layout, source)
    is_torch = not isinstance(source, Net)
    out = OrderedDict()
    for name, stage, j, kind in norm_names(layout, n_layers, prefix, block_group_size):
        g, b = _views(source, stage, j)
        if kind == "nonaffine":
            if ((g is not None and not np.all(_to_f32(g, name) == 1.0))
                    or (b is not None and not np.all(_to_f32(b, name) == 0.0))):
                raise ValueError(f"{name} is non-affine in the official model, but the "
                                 f"library's norm {j} of stage {stage} has parameters other "
                                 "than gamma 1, beta 0")
            continue
        if g is None:
            raise ValueError(f"{name}: the library's norm {j} of stage {stage} has no gamma")
        pairs = [(name if kind == "bare" else name + ".weight", g)]
        if b is not None:
            pairs.append((name + ".bias", b))
        for key, t in pairs:
            out[key] = t.detach().clone() if is_torch else np.array(t, np.float32)
    return out


def from_deit_state_dict(state_dict, target, prefix=""):
    """from_state_dict("deit", ...): blocks.{l}.post_norm1 ..., pre_norm, post_norm,
    final_norm."""
    return from_state_dict("deit", state_dict, target, prefix)


def to_deit_state_dict(source, prefix=""):
    """to_state_dict("deit", ...)."""
    return to_state_dict("deit", source, prefix)


def from_dit_state_dict(state_dict, target, prefix=""):
    """from_state_dict("dit", ...): blocks.{l}.postnorm1 ..., postnorm, prenorm."""
    return from_state_dict("dit", state_dict, target, prefix)


def to_dit_state_dict(source, prefix=""):
    """to_state_dict("dit", ...)."""
    return to_state_dict("dit", source, prefix)


def from_olmo_state_dict(state_dict, target, prefix="", block_group_size=1):
    """from_state_dict("olmo_hybrid_pre", ...): transformer.blocks.{l}.c1 ...,
    transformer.ln_f, ln_y_f, ln_final_f."""
    return from_state_dict("olmo_hybrid_pre", state_dict, target, prefix, block_group_size)


def to_olmo_state_dict(source, prefix="", block_group_size=1):
    """to_state_dict("olmo_hybrid_pre", ...)."""
    return to_state_dict("olmo_hybrid_pre", source, prefix, block_group_size)


# ---- library models configured as the official ones -------------------------------------------

def _norms(layout, kind, eps, bias):
    placement, official_eps = LAYOUTS[_layout(layout)]
    eps = official_eps if eps is None else float(eps)
    affine = None if bias is None else ("scale_shift" if bias else "scale")
    norm = Norm(kind, affine=affine, eps=eps)
    nonaffine = Norm(kind, affine="none", eps=eps) if layout == "dit" else None
    return placement, eps, norm, nonaffine


def make_net(layout, n_layers, d, kind="layernorm", eps=None, bias=None, **kwargs):
    """A siamesenorm.Net configured as the official model: its placement, 2 * n_layers
    sub-layers, eps (None: the official 1e-6 for DeiT/DiT, OLMo's default 1e-5), DiT's
    non-affine input norms. bias=False for LayerNorms without beta (OLMo with
    include_bias/bias_for_layer_norm off); None: the kind's default. DiT's non-affine final
    norm keeps gamma and beta in a Net (loaded as 1 and 0: the same function). kwargs go to
    Net (e.g. ctx)."""
    placement, eps, norm, nonaffine = _norms(layout, kind, eps, bias)
    n_layers = check_int(n_layers, ctypes.c_int32, "n_layers")
    return Net(placement, 2 * n_layers, d, norm=norm, input_norm=nonaffine, **kwargs)


def make_module(layout, blocks, d, kind="layernorm", eps=None, bias=None, **kwargs):
    """A siamesenorm.torch_adapter.SiameseNorm configured as the official model around blocks
    (2 per layer: attention, MLP, ...): placement, eps and bias as make_net, DiT's non-affine
    input and final norms. kwargs go to SiameseNorm (e.g. scales)."""
    from .torch_adapter import SiameseNorm
    placement, eps, norm, nonaffine = _norms(layout, kind, eps, bias)
    return SiameseNorm(blocks, d, kind=kind, eps=eps, norm=norm, input_norm=nonaffine,
                       final_norm=nonaffine, placement=placement, **kwargs)
