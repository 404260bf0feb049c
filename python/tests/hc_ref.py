"""Pure-PyTorch reference formulation of Hyper-Connections (Zhu et al., "Hyper-Connections",
ICLR 2025, arXiv 2409.19606v3, Section 2), written from the paper's equations and independently
of the siamesenorm binding and of the C code (nothing here imports either): the oracle of
test_parity_hyper_connections.py.

Notation (the paper's): the residual stream becomes n streams, per token H in R^{n x D} (here a
tensor (R, n, D)), every one a copy of the embedding e at the start. Sub-layer k (attention for
even k, the MLP for odd k; T^k its Pre-Norm block, T^k(h) = F_k(N_k(h))) has the connection matrix

    HC^k = [[0,   B  ],      B   in R^{1 x n}   depth connections (block output -> streams)
            [A_m, A_r]]      A_m in R^{n x 1}   width connections into the block input
                             A_r in R^{n x n}   width connections among the streams

and computes (the paper's section "Static Hyper-Connections")

    h_0 = A_m^T H                      the block input, h_0 = sum_s A_m[s] H_s
    H'  = A_r^T H                      stream j of H' = sum_s A_r[s, j] H_s
    H^  = B^T T(h_0)^T + H'            stream j gets B[j] * T(h_0)

Dynamic HC (section "Dynamic Hyper-Connections") makes the three matrices depend on the token's
streams, through a norm of each stream H-bar = norm(H) (a norm with its own parameters per
sub-layer):

    B(H)   = s_beta  * tanh(H-bar W_beta)^T + B      W_beta in R^{D x 1}
    A_m(H) = s_alpha * tanh(H-bar W_m)      + A_m    W_m    in R^{D x 1}
    A_r(H) = s_alpha * tanh(H-bar W_r)      + A_r    W_r    in R^{D x n}

so row s of A_m(H) and A_r(H), and entry s of B(H), are functions of stream s alone; s_alpha
and s_beta are learned scaling factors, here scalars (as in the paper's PyTorch-style
pseudocode, where each is a one-element parameter).

Initialisation (section "Initialization"): A_m = e_{k mod n} (the block input of sub-layer k is
stream k mod n), A_r = I_n, B = 1_n; for dynamic HC W_beta = W_m = W_r = 0 and
s_alpha = s_beta = 0.01.
At that point every stream stays equal to Pre-Norm's residual x, so the network is Pre-Norm's.
At the end the streams are summed, then the final norm: out = N_f(sum_j H_j). With all n streams
equal to x, N_f(n x) is N_f(x) with eps / n^2 in place of eps (LayerNorm and RMSNorm alike).

HyperConnRef.reference_step (an explicit loop over streams and matrix entries, no einsum) is a
second reading of the same equations, used to check the oracle's own index orientation."""

import torch
from torch import nn

from parity_ref import Block, make_norm


def init_connections(n, k):
    """(A_m, A_r, B) of sub-layer k at the paper's initialisation."""
    am = torch.zeros(n)
    am[k % n] = 1.0
    return am, torch.eye(n), torch.ones(n)


class HCSublayer(nn.Module):
    """The connection parameters of one sub-layer (static: A_m, A_r, B; dynamic also the norm of
    the streams, W_m, W_r, W_beta, s_alpha, s_beta) and its Pre-Norm norm N_k."""

    def __init__(self, d, n, k, kind, eps, dynamic):
        super().__init__()
        am, ar, b = init_connections(n, k)
        self.n, self.dynamic = n, dynamic
        self.norm = make_norm(kind, d, eps)  # N_k: the Pre-Norm norm on h_0
        self.A_m = nn.Parameter(am)
        self.A_r = nn.Parameter(ar)
        self.B = nn.Parameter(b)
        if dynamic:
            self.dyn_norm = make_norm(kind, d, eps)  # H-bar = norm(H), per stream
            self.W_m = nn.Parameter(torch.zeros(d))
            self.W_r = nn.Parameter(torch.zeros(d, n))
            self.W_beta = nn.Parameter(torch.zeros(d))
            self.s_alpha = nn.Parameter(torch.tensor(0.01))
            self.s_beta = nn.Parameter(torch.tensor(0.01))

    def matrices(self, H):
        """(A_m (R, n), A_r (R, n, n), B (R, n)) for the streams H (R, n, D): the static ones
        broadcast, or the dynamic ones."""
        R = H.shape[0]
        if not self.dynamic:
            return (self.A_m.expand(R, -1), self.A_r.expand(R, -1, -1), self.B.expand(R, -1))
        Hb = self.dyn_norm(H)  # every stream normalised on its own (the last dimension)
        am = self.s_alpha * torch.tanh(Hb @ self.W_m) + self.A_m
        ar = self.s_alpha * torch.tanh(Hb @ self.W_r) + self.A_r
        b = self.s_beta * torch.tanh(Hb @ self.W_beta) + self.B
        return am, ar, b

    def forward(self, H, F, trace=None):
        """trace: a list that receives {H, h0, z, out} of this sub-layer (h0 and out keep their
        gradients after a backward: retain_grad)."""
        am, ar, b = self.matrices(H)
        h0 = torch.einsum("rs,rsd->rd", am, H)           # A_m^T H
        Hp = torch.einsum("rsj,rsd->rjd", ar, H)         # A_r^T H
        z = F(self.norm(h0))                             # T(h_0)
        out = Hp + b.unsqueeze(-1) * z.unsqueeze(1)      # B^T T(h_0)^T + H'
        if trace is not None and out.requires_grad:
            h0.retain_grad()
            out.retain_grad()
            trace.append({"H": H, "h0": h0, "z": z, "out": out})
        return out

    def connection_params(self):
        """[(name, parameter)] of the connection weights (not the norms)."""
        names = ["A_m", "A_r", "B"]
        if self.dynamic:
            names += ["W_m", "W_r", "W_beta", "s_alpha", "s_beta"]
        return [(nm, getattr(self, nm)) for nm in names]


class HyperConnRef(nn.Module):
    """S sub-layers of Hyper-Connections with expansion rate n around the blocks Linear + GELU
    + Linear; static (dynamic=False) or dynamic HC; out = N_f(sum_j H_j)."""

    def __init__(self, S, d, kind, eps, hidden, n, dynamic):
        super().__init__()
        self.S, self.d, self.n, self.dynamic = S, d, n, dynamic
        self.blocks = nn.ModuleList(Block(d, hidden) for _ in range(S))
        self.hc = nn.ModuleList(HCSublayer(d, n, k, kind, eps, dynamic) for k in range(S))
        self.nf = make_norm(kind, d, eps)

    def streams(self, e):
        """H_0: n copies of the embedding, (R, n, D)."""
        return e.unsqueeze(1).expand(-1, self.n, -1)

    def forward(self, e, trace=None):
        """trace: a list that receives each sub-layer's intermediates (HCSublayer.forward)."""
        H = self.streams(e)
        for k, F in enumerate(self.blocks):
            H = self.hc[k](H, F, trace)
        return self.nf(H.sum(1))

    def reference_step(self, k, H, F):
        """Sub-layer k by explicit loops over streams and matrix entries (the second reading)."""
        am, ar, b = self.hc[k].matrices(H)
        n = self.n
        h0 = sum(am[:, s:s + 1] * H[:, s] for s in range(n))
        z = F(self.hc[k].norm(h0))
        out = []
        for j in range(n):  # new stream j: sum over old streams s of A_r[s, j] H_s, + B[j] z
            out.append(sum(ar[:, s, j:j + 1] * H[:, s] for s in range(n)) + b[:, j:j + 1] * z)
        return torch.stack(out, 1)

    def norms_by_stage(self):
        """[(stage, name, norm module)]: stage k's N_k ("input") and, dynamic, the streams' norm
        ("streams"); stage S the final norm."""
        out = []
        for k, sub in enumerate(self.hc):
            out.append((k, "input", sub.norm))
            if self.dynamic:
                out.append((k, "streams", sub.dyn_norm))
        return out + [(self.S, "final", self.nf)]


def randomise_connections(model, gen, spread=0.2):
    """Random connection weights around the initial values (A_r not symmetric, A_m not one-hot,
    B not uniform, W and s nonzero) so that a transposed or misplaced weight shows: spread times
    a standard normal added to each, divided by sqrt(D) for the projections W."""
    with torch.no_grad():
        for sub in model.hc:
            for name, p in sub.connection_params():
                scale = spread / model.d ** 0.5 if name.startswith("W_") else spread
                p.add_(scale * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def reduction_scales(model, trace):
    """The condition of every connection-weight gradient: each is a sum over rows (and D) of
    products, e.g. dA_m[k] = sum_rows <dh0, H_k>, and LayerNorm / RMSNorm make N_k(h0)
    invariant to the scale of h0, so sum_k A_m[k] dA_m[k] = sum_rows <dh0, h0> is about 0: these
    sums cancel (with n = 1, dA_m is that sum alone) and a float32 result is accurate relative to
    the sum of the absolute values of its terms, not to its own size. The dynamic projections,
    scales and the streams' norm's gamma / beta inherit those per-row sums. Returns
    {(name, k) or ("gamma" / "beta", k, "streams"): that sum (the tensor's shape)}, in float64,
    from a traced forward and backward of the reference
    (trace as HyperConnRef.forward fills it)."""
    out = {}
    for k, (sub, t) in enumerate(zip(model.hc, trace)):
        H, z = t["H"].detach(), t["z"].detach()
        dh0, G = t["h0"].grad, t["out"].grad
        Pm = torch.einsum("rd,rkd->rk", dh0.abs(), H.abs())       # |terms| of a_m[r, k]
        Pr = torch.einsum("rjd,rkd->rkj", G.abs(), H.abs())       # of a_r[r, k, j]
        Pb = torch.einsum("rjd,rd->rj", G.abs(), z.abs())         # of b[r, j]
        out[("A_m", k)], out[("A_r", k)], out[("B", k)] = Pm.sum(0), Pr.sum(0), Pb.sum(0)
        if not sub.dynamic:
            continue
        with torch.no_grad():
            Hn = sub.dyn_norm(H)
            Hb = Hn.abs()
            ta_m, ta_r, tb = (torch.tanh(Hn @ sub.W_m), torch.tanh(Hn @ sub.W_r),
                              torch.tanh(Hn @ sub.W_beta))
            pm = sub.s_alpha.abs() * (1 - ta_m ** 2) * Pm               # |terms| of pa[r, k, 0]
            pr = sub.s_alpha.abs() * (1 - ta_r ** 2) * Pr               # of pa[r, k, 1 + j]
            pb = sub.s_beta.abs() * (1 - tb ** 2) * Pb                  # of pb[r, k]
            out[("s_alpha", k)] = (ta_m.abs() * Pm).sum() + (ta_r.abs() * Pr).sum()
            out[("s_beta", k)] = (tb.abs() * Pb).sum()
            out[("W_m", k)] = torch.einsum("rk,rkd->d", pm, Hb)
            out[("W_r", k)] = torch.einsum("rkj,rkd->dj", pr, Hb)
            out[("W_beta", k)] = torch.einsum("rk,rkd->d", pb, Hb)
            # dHbar_k = pa[k, 0] W_m + sum_j pa[k, 1 + j] W_r[:, j] + pb[k] W_beta, and the
            # streams' norm's gamma / beta gradients sum it (times x-hat) over rows and streams
            dHb = (pm.unsqueeze(-1) * sub.W_m.abs() + torch.einsum("rkj,dj->rkd", pr, sub.W_r.abs())
                   + pb.unsqueeze(-1) * sub.W_beta.abs())
            m = sub.dyn_norm
            xhat = (Hn - (m.bias if m.bias is not None else 0)) / m.weight
            out[("gamma", k, "streams")] = (dHb * xhat.abs()).sum((0, 1))
            if m.bias is not None:
                out[("beta", k, "streams")] = dHb.sum((0, 1))
    return out
