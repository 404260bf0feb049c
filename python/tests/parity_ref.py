"""Pure-PyTorch reference formulations used by the parity tests. Written from SPEC.md,
independently of the siamesenorm binding (nothing here imports it)."""

import math

import torch
from torch import nn


class RMSNorm(nn.Module):
    """N(v) = gamma * v / sqrt(mean(v^2) + eps) (+ beta when bias=True)."""

    def __init__(self, d, eps, bias=False):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(self, v):
        out = self.weight * (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + self.eps))
        return out + self.bias if self.bias is not None else out


def make_norm(kind, d, eps):
    if kind == "layernorm":
        return nn.LayerNorm(d, eps=eps)
    if kind == "rmsnorm":
        return RMSNorm(d, eps)
    raise ValueError(kind)


class Block(nn.Module):
    """The shared block F: Linear -> GELU -> Linear."""

    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, h):
        return self.fc2(self.act(self.fc1(h)))


def official_scale(i):
    """c_i = sqrt(2 (l + 1)) with l = floor(i / 2): the official code's ((index+1)*2)**0.5."""
    return math.sqrt(2.0 * (i // 2 + 1))


class SiameseRef(nn.Module):
    """SPEC 'as the official code runs it'. input_norm=False is the ablation "without the input
    norm": h_i = u_i + N_pre,i(y_i) (the library keeps an identity norm in N_in's slot)."""

    def __init__(self, S, d, kind, eps, hidden, scales, input_norm=True):
        super().__init__()
        mk = lambda: make_norm(kind, d, eps)  # noqa: E731
        self.post = nn.ModuleList(mk() for _ in range(S))
        self.pre = nn.ModuleList(mk() for _ in range(S))
        self.inp = nn.ModuleList(mk() if input_norm else nn.Identity() for _ in range(S))
        self.blocks = nn.ModuleList(Block(d, hidden) for _ in range(S))
        self.na, self.nb, self.nf = mk(), mk(), mk()
        self.scales = list(scales)

    def forward(self, e):
        x, y = e, e
        for i, F in enumerate(self.blocks):
            u = self.post[i](x)
            h = self.inp[i](u + self.pre[i](y))
            z = F(h)
            x = u + z / self.scales[i]
            y = y + z
        return self.nf(self.na(x) + self.nb(y))

    def norms_by_stage(self):
        """[(stage, j, module)] in the library's numbering: sub-layer i -> [post, pre, in],
        merge (stage S) -> [a, b, f]."""
        S = len(self.blocks)
        out = []
        for i in range(S):
            inp = None if isinstance(self.inp[i], nn.Identity) else self.inp[i]
            out += [(i, 0, self.post[i]), (i, 1, self.pre[i]), (i, 2, inp)]
        return out + [(S, 0, self.na), (S, 1, self.nb), (S, 2, self.nf)]


class PreNormRef(nn.Module):
    """h_i = N_i(x_i), x_{i+1} = x_i + z_i, out = N_f(x_S)."""

    def __init__(self, S, d, kind, eps, hidden):
        super().__init__()
        self.norms = nn.ModuleList(make_norm(kind, d, eps) for _ in range(S))
        self.blocks = nn.ModuleList(Block(d, hidden) for _ in range(S))
        self.nf = make_norm(kind, d, eps)

    def forward(self, e):
        x = e
        for N, F in zip(self.norms, self.blocks):
            x = x + F(N(x))
        return self.nf(x)

    def norms_by_stage(self):
        S = len(self.blocks)
        return [(i, 0, n) for i, n in enumerate(self.norms)] + [(S, 0, self.nf)]


class PostNormRef(nn.Module):
    """h_i = x_i, x_{i+1} = N_i(x_i + z_i), out = x_S."""

    def __init__(self, S, d, kind, eps, hidden):
        super().__init__()
        self.norms = nn.ModuleList(make_norm(kind, d, eps) for _ in range(S))
        self.blocks = nn.ModuleList(Block(d, hidden) for _ in range(S))

    def forward(self, e):
        x = e
        for N, F in zip(self.norms, self.blocks):
            x = N(x + F(x))
        return x

    def norms_by_stage(self):
        return [(i, 0, n) for i, n in enumerate(self.norms)]


def randomise_norms(model, gen):
    """Random gammas in [0.5, 1.5] and betas ~ N(0, 0.1^2): not the 1/0 defaults."""
    with torch.no_grad():
        for _, _, m in model.norms_by_stage():
            if m is None:  # an identity slot: no parameters
                continue
            m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen, dtype=m.weight.dtype))
            if getattr(m, "bias", None) is not None:
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen,
                                               dtype=m.bias.dtype))


def rel_err(a, ref):
    """The parity metric: max |a - ref| / max |ref| over the whole tensor."""
    a = torch.as_tensor(a).double()
    ref = torch.as_tensor(ref).double()
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-300))
