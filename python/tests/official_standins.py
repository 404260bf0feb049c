"""Small stand-ins for the official SiameseNorm models (github.com/Qwen-Applications/SiameseNorm),
written for the tests from the official forward passes: the same module names and the same
norm equations, with the attention and MLP replaced by small token-wise blocks (parity_ref.Block)
and DiT's adaLN conditioning by a fixed learned shift and scale. Nothing here imports the
binding: the tests load these models' state dicts into the library through siamesenorm.official.

  DeiTStandIn   deit-model-siamesenorm.py: blocks.{l}.{post,pre,input}_norm{1,2}; the merge
                final_norm(pre_norm(x) + post_norm(y)) (pre_norm acts on x, post_norm on y)
  DiTStandIn    dit-model-siamesenorm.py: blocks.{l}.{postnorm,prenorm}{1,2}, non-affine
                norm1/norm2 followed by the block's modulate; postnorm(x) + prenorm(t), then
                final_layer.norm_final (non-affine)
  OLMoStandIn   OLMo_model_hybrid_pre.py (attn_norm off: c1; ffn_norm with the residual taken
                after it): transformer.blocks.{l}.{c1, attn_y_norm, ff_norm, ff_y_norm,
                ff_input_norm}; ln_final_f(ln_f(x) + ln_y_f(y))
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

from parity_ref import Block


def scale_of(layer):
    """The official residual scale of both sub-layers of a layer: ((index + 1) * 2) ** 0.5."""
    return math.sqrt(2.0 * (layer + 1))


class LayerNormNoBias(nn.Module):
    """A LayerNorm with gamma only (OLMo with bias_for_layer_norm / include_bias off; torch 1.13's
    nn.LayerNorm has no bias=False)."""

    def __init__(self, d, eps):
        super().__init__()
        self.eps, self.d = eps, d
        self.weight = nn.Parameter(torch.ones(d))
        self.register_parameter("bias", None)

    def forward(self, v):
        return F.layer_norm(v, (self.d,), self.weight, None, self.eps)


class DeiTBlock(nn.Module):
    def __init__(self, d, hidden, index, eps):
        super().__init__()
        self.pre_norm1, self.post_norm1 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.attn = Block(d, hidden)
        self.pre_norm2, self.post_norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.input_norm1, self.input_norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.mlp = Block(d, hidden)
        self.index = index

    def forward(self, x, y):
        c = scale_of(self.index)
        x = self.post_norm1(x)
        z = self.attn(self.input_norm1(x + self.pre_norm1(y)))
        x, y = x + z / c, y + z
        x = self.post_norm2(x)
        z = self.mlp(self.input_norm2(x + self.pre_norm2(y)))
        return x + z / c, y + z


class DeiTStandIn(nn.Module):
    def __init__(self, n_layers, d, hidden, eps=1e-6):
        super().__init__()
        self.blocks = nn.Sequential(*[DeiTBlock(d, hidden, i, eps) for i in range(n_layers)])
        self.pre_norm = nn.LayerNorm(d, eps=eps)
        self.post_norm = nn.LayerNorm(d, eps=eps)
        self.final_norm = nn.LayerNorm(d, eps=eps)

    def sub_blocks(self):
        """The library's blocks, one per sub-layer: attention, MLP, attention, ..."""
        return [m for b in self.blocks for m in (b.attn, b.mlp)]

    def forward(self, e):
        x, y = e, e.clone()
        for blk in self.blocks:
            x, y = blk(x, y)
        return self.final_norm(self.pre_norm(x) + self.post_norm(y))


class Modulated(nn.Module):
    """DiT's modulate(h, shift, scale) = h * (1 + scale) + shift, then the block, then the gate:
    the part of a DiT sub-layer after its non-affine norm (constant conditioning here)."""

    def __init__(self, d, hidden):
        super().__init__()
        self.inner = Block(d, hidden)
        self.shift = nn.Parameter(torch.zeros(d))
        self.scale = nn.Parameter(torch.zeros(d))
        self.gate = nn.Parameter(torch.ones(d))

    def forward(self, h):
        return self.gate * self.inner(h * (1 + self.scale) + self.shift)


class DiTBlock(nn.Module):
    def __init__(self, d, hidden, idx, eps):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=eps)
        self.attn = Modulated(d, hidden)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=eps)
        self.mlp = Modulated(d, hidden)
        self.prenorm1, self.prenorm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.postnorm1, self.postnorm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.idx = idx

    def forward(self, x, y):
        gm = scale_of(self.idx)
        u = self.postnorm1(x)
        res = self.attn(self.norm1(u + self.prenorm1(y)))
        u, y = u + res / gm, y + res
        u = self.postnorm2(u)
        res = self.mlp(self.norm2(u + self.prenorm2(y)))
        return u + res / gm, y + res


class FinalLayer(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.norm_final = nn.LayerNorm(d, elementwise_affine=False, eps=eps)


class DiTStandIn(nn.Module):
    def __init__(self, n_layers, d, hidden, eps=1e-6):
        super().__init__()
        self.blocks = nn.ModuleList(DiTBlock(d, hidden, i, eps) for i in range(n_layers))
        self.final_layer = FinalLayer(d, eps)
        self.prenorm = nn.LayerNorm(d, eps=eps)
        self.postnorm = nn.LayerNorm(d, eps=eps)

    def sub_blocks(self):
        return [m for b in self.blocks for m in (b.attn, b.mlp)]

    def forward(self, e):
        x, t = e, e.clone()
        for blk in self.blocks:
            x, t = blk(x, t)
        return self.final_layer.norm_final(self.postnorm(x) + self.prenorm(t))


class OLMoBlock(nn.Module):
    def __init__(self, layer_id, d, hidden, eps, bias):
        super().__init__()
        mk = (lambda: nn.LayerNorm(d, eps=eps)) if bias else (lambda: LayerNormNoBias(d, eps))
        self.layer_id = layer_id
        self.c1 = nn.Parameter(torch.ones(d))
        self.ff_norm, self.attn_y_norm = mk(), mk()
        self.ff_y_norm, self.ff_input_norm = mk(), mk()
        self.att = Block(d, hidden)
        self.ff = Block(d, hidden)

    def forward(self, x, y):
        h = x * self.c1 + self.attn_y_norm(y)
        res = self.att(h)
        c = scale_of(self.layer_id)
        x, y = x + res / c, y + res
        og_x = self.ff_norm(x)
        z = self.ff(self.ff_input_norm(og_x + self.ff_y_norm(y)))
        return og_x + z / c, y + z


class OLMoStandIn(nn.Module):
    def __init__(self, n_layers, d, hidden, eps=1e-5, bias=True):
        super().__init__()
        mk = (lambda: nn.LayerNorm(d, eps=eps)) if bias else (lambda: LayerNormNoBias(d, eps))
        self.transformer = nn.ModuleDict(dict(
            ln_f=mk(), ln_y_f=mk(), ln_final_f=mk(),
            blocks=nn.ModuleList(OLMoBlock(i, d, hidden, eps, bias) for i in range(n_layers))))

    def sub_blocks(self):
        return [m for b in self.transformer.blocks for m in (b.att, b.ff)]

    def forward(self, e):
        x, y = e, e.clone()
        for blk in self.transformer.blocks:
            x, y = blk(x, y)
        t = self.transformer
        return t.ln_final_f(t.ln_f(x) + t.ln_y_f(y))


def randomise(model, gen):
    """Every parameter random (norm gains in [0.5, 1.5], shifts and c1 perturbed, the blocks'
    modulation nonzero), so that a norm loaded into the wrong slot changes the output."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ("weight", "c1", "gate") and p.dim() == 1:
                p.copy_(0.5 + torch.rand(p.shape, generator=gen))
            elif leaf in ("bias", "shift", "scale") and p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
