"""Pure-PyTorch reference formulations of the comparison placements and SiameseNorm variants
(SPEC.md "Variants a user will ask for" and "The single-stream placements"), written from the
equations, independently of the siamesenorm binding (nothing here imports it).

Every model has `blocks` (one Block per sub-layer) and `norms_by_stage()`: the library's norm
numbering [(stage, j, module)], stage -1 the split, 0..S-1 the sub-layers, S the merge, with
None where the library keeps an identity (parameter-free) norm in that slot."""

import math

import torch
from torch import nn

from parity_ref import Block, make_norm


class Scale(nn.Module):
    """N(v) = gamma * v: a learned per-column scale without normalisation (hybrid_pre's c1)."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = None

    def forward(self, v):
        return self.weight * v


class _Ref(nn.Module):
    def __init__(self, S, d, kind, eps, hidden):
        super().__init__()
        self.S, self.d, self.kind, self.eps = S, d, kind, eps
        self.blocks = nn.ModuleList(Block(d, hidden) for _ in range(S))

    def mk(self):
        return make_norm(self.kind, self.d, self.eps)

    def mks(self):
        return nn.ModuleList(self.mk() for _ in range(self.S))


class SiamesePaperRef(_Ref):
    """Algorithm 1: x_0 = y_0 = e;  h = N_in(x + N_pre(y));  x' = N_post(x + z / c);
    y' = y + z;  out = x_S + N_f(y_S)."""

    def __init__(self, S, d, kind, eps, hidden, scales):
        super().__init__(S, d, kind, eps, hidden)
        self.post, self.pre, self.inp = self.mks(), self.mks(), self.mks()
        self.nf = self.mk()
        self.scales = list(scales)

    def forward(self, e):
        x, y = e, e
        for i, F in enumerate(self.blocks):
            z = F(self.inp[i](x + self.pre[i](y)))
            x = self.post[i](x + z / self.scales[i])
            y = y + z
        return x + self.nf(y)

    def norms_by_stage(self):
        out = []
        for i in range(self.S):
            out += [(i, 0, self.post[i]), (i, 1, self.pre[i]), (i, 2, self.inp[i])]
        return out + [(self.S, 0, None), (self.S, 1, self.nf), (self.S, 2, None)]


class SiameseHybridPreRef(_Ref):
    """OLMo hybrid_pre: attention (i even) h = c1 * x + N_pre(y), x' = x + z / c, y' = y + z;
    MLP (i odd) the default SiameseNorm sub-layer u = N_post(x), h = N_in(u + N_pre(y)),
    x' = u + z / c, y' = y + z;  out = N_f(N_a(x_S) + N_b(y_S))."""

    def __init__(self, S, d, kind, eps, hidden, scales):
        super().__init__(S, d, kind, eps, hidden)
        self.first = nn.ModuleList(Scale(d) if i % 2 == 0 else self.mk() for i in range(S))
        self.pre = self.mks()
        self.inp = nn.ModuleList(self.mk() for i in range(S) if i % 2 == 1)
        self.na, self.nb, self.nf = self.mk(), self.mk(), self.mk()
        self.scales = list(scales)

    def forward(self, e):
        x, y = e, e
        for i, F in enumerate(self.blocks):
            if i % 2 == 0:
                z = F(self.first[i](x) + self.pre[i](y))
                x = x + z / self.scales[i]
            else:
                u = self.first[i](x)
                z = F(self.inp[i // 2](u + self.pre[i](y)))
                x = u + z / self.scales[i]
            y = y + z
        return self.nf(self.na(x) + self.nb(y))

    def norms_by_stage(self):
        out = []
        for i in range(self.S):
            if i % 2 == 0:
                out += [(i, 0, self.first[i]), (i, 1, self.pre[i])]
            else:
                out += [(i, 0, self.first[i]), (i, 1, self.pre[i]), (i, 2, self.inp[i // 2])]
        return out + [(self.S, 0, self.na), (self.S, 1, self.nb), (self.S, 2, self.nf)]


def deepnorm_alpha(L):
    """Decoder-only DeepNorm residual weight alpha = (2L)^(1/4)."""
    return (2.0 * L) ** 0.25


def deepnorm_beta(L):
    """Decoder-only DeepNorm init gain beta = (8L)^(-1/4) for the v/out/FFN weights."""
    return (8.0 * L) ** -0.25


class DeepNormRef(_Ref):
    """h = x,  x' = N(alpha * x + z),  out = x_S.  The caller's init gain is applied by
    apply_init_gain (both FFN weight matrices of the block, as DeepNet does for FFN weights)."""

    def __init__(self, S, d, kind, eps, hidden, alphas):
        super().__init__(S, d, kind, eps, hidden)
        self.norms = self.mks()
        self.alphas = list(alphas)

    def apply_init_gain(self, gain):
        with torch.no_grad():
            for blk in self.blocks:
                blk.fc1.weight.mul_(gain)
                blk.fc2.weight.mul_(gain)

    def forward(self, e):
        x = e
        for i, F in enumerate(self.blocks):
            x = self.norms[i](self.alphas[i] * x + F(x))
        return x

    def norms_by_stage(self):
        return [(i, 0, n) for i, n in enumerate(self.norms)]


class PeriLNRef(_Ref):
    """x_0 = N_emb(e);  h = N_in(x),  x' = x + N_out(z);  out = N_f(x_S)."""

    def __init__(self, S, d, kind, eps, hidden):
        super().__init__(S, d, kind, eps, hidden)
        self.nemb, self.inp, self.outn, self.nf = self.mk(), self.mks(), self.mks(), self.mk()

    def forward(self, e):
        x = self.nemb(e)
        for i, F in enumerate(self.blocks):
            x = x + self.outn[i](F(self.inp[i](x)))
        return self.nf(x)

    def norms_by_stage(self):
        out = [(-1, 0, self.nemb)]
        for i in range(self.S):
            out += [(i, 0, self.inp[i]), (i, 1, self.outn[i])]
        return out + [(self.S, 0, self.nf)]


class MixLNRef(_Ref):
    """Sub-layers of the first floor(fraction * L) layers Post-Norm (h = x, x' = N(x + z)), the
    rest Pre-Norm (h = N(x), x' = x + z);  out = N_f(x_S)."""

    def __init__(self, S, d, kind, eps, hidden, fraction):
        super().__init__(S, d, kind, eps, hidden)
        self.norms, self.nf = self.mks(), self.mk()
        self.n_post_layers = math.floor(fraction * math.ceil(S / 2))

    def forward(self, e):
        x = e
        for i, F in enumerate(self.blocks):
            if i // 2 < self.n_post_layers:
                x = self.norms[i](x + F(x))
            else:
                x = x + F(self.norms[i](x))
        return self.nf(x)

    def norms_by_stage(self):
        return [(i, 0, n) for i, n in enumerate(self.norms)] + [(self.S, 0, self.nf)]


class HybridNormRef(_Ref):
    """Attention (i even) h = x, x' = x + z;  MLP (i odd) u = N(x), h = u, x' = u + z;
    out = N_f(x_S).  star=True (HybridNorm*): both sub-layers of layer 0 Pre-Norm
    (h = N(x), x' = x + z)."""

    def __init__(self, S, d, kind, eps, hidden, star):
        super().__init__(S, d, kind, eps, hidden)
        self.star = star
        self.norms = nn.ModuleList(
            self.mk() if (i % 2 == 1 or (star and i < 2)) else nn.Identity() for i in range(S))
        self.nf = self.mk()

    def forward(self, e):
        x = e
        for i, F in enumerate(self.blocks):
            if self.star and i < 2:
                x = x + F(self.norms[i](x))
            elif i % 2 == 0:
                x = x + F(x)
            else:
                u = self.norms[i](x)
                x = u + F(u)
        return self.nf(x)

    def norms_by_stage(self):
        out = [(i, 0, None if isinstance(n, nn.Identity) else n)
               for i, n in enumerate(self.norms)]
        return out + [(self.S, 0, self.nf)]


def span_scale(S):
    """SpanNorm's default residual scale c = sqrt(L), L = ceil(S / 2) layers (SPEC.md, SpanNorm:
    the library's choice where the paper's text could not be read)."""
    return math.sqrt(math.ceil(S / 2))


class SpanNormRef(_Ref):
    """SpanNorm (SPEC.md "SpanNorm"): a clean residual spans each layer, Post-Norm inside it.
    Layer input x:  a = N_att(x + Attn(x));  x' = x + N_mlp(a + MLP(a)) / c;  out = N_f(x_S).
    A last layer with only its attention (odd S): x' = x + N_att(x + Attn(x)) / c.  c_i for
    sub-layer i; the closing sub-layer's is used."""

    def __init__(self, S, d, kind, eps, hidden, scales):
        super().__init__(S, d, kind, eps, hidden)
        self.norms, self.nf = self.mks(), self.mk()
        self.scales = list(scales)

    def forward(self, e):
        x = e
        for i in range(0, self.S, 2):
            a = x + self.blocks[i](x)
            if i + 1 < self.S:
                a = self.norms[i](a)
                x = x + self.norms[i + 1](a + self.blocks[i + 1](a)) / self.scales[i + 1]
            else:
                x = x + self.norms[i](a) / self.scales[i]
        return self.nf(x)

    def norms_by_stage(self):
        return [(i, 0, n) for i, n in enumerate(self.norms)] + [(self.S, 0, self.nf)]
