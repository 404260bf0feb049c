"""Hyper-Connections (placement "hyper_connections"): the pure-PyTorch reference of hc_ref.py
(written from the paper's equations, arXiv 2409.19606v3) checked on its own, then the library
through the binding against it.

ReferenceSelfTest (pure PyTorch, float64): the oracle at the paper's initialisation is a
Pre-Norm network (static HC, n = 1, 2, 4; its final norm's eps divided by n^2, the streams being
summed), dynamic HC at initialisation is static HC bit for bit, and the einsum form agrees with
an explicit loop over streams and entries."""

import copy
import unittest

import torch

from hc_ref import HyperConnRef, randomise_connections
from parity_ref import PreNormRef, make_norm, rel_err
from strict_main import main

S, R, D, HIDDEN = 6, 16, 24, 48


def _grads(model, e, G):
    e = e.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    out = model(e)
    (out * G).sum().backward()
    res = {"out": out.detach(), "de": e.grad.detach()}
    for name, p in model.named_parameters():
        if p.grad is not None:
            res[name] = p.grad.detach()
    return res


def _hc(n, dynamic, kind, seed, random_connections=False):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    eps = 1e-5 if kind == "layernorm" else 1e-6
    model = HyperConnRef(S, D, kind, eps, HIDDEN, n, dynamic).double()
    with torch.no_grad():
        for _, _, m in model.norms_by_stage():
            m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen, dtype=torch.float64))
            if getattr(m, "bias", None) is not None:
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen,
                                               dtype=torch.float64))
    if random_connections:
        randomise_connections(model, gen)
    e = torch.randn(R, D, generator=gen, dtype=torch.float64)
    G = torch.randn(R, D, generator=gen, dtype=torch.float64)
    return model, e, G, eps


class ReferenceSelfTest(unittest.TestCase):
    def test_static_init_is_pre_norm(self):
        """At the paper's initialisation static HC with n streams is the Pre-Norm network with
        the same blocks and norms, the final norm's eps divided by n^2: every output and
        gradient within 1e-12 (n = 1: the output bit for bit)."""
        for n in (1, 2, 4):
            for kind in ("layernorm", "rmsnorm"):
                with self.subTest(n=n, kind=kind):
                    hc, e, G, eps = _hc(n, False, kind, seed=n)
                    pre = PreNormRef(S, D, kind, eps, HIDDEN).double()
                    pre.blocks = copy.deepcopy(hc.blocks)
                    for k in range(S):
                        pre.norms[k].load_state_dict(hc.hc[k].norm.state_dict())
                    pre.nf = make_norm(kind, D, eps / n ** 2).double()
                    pre.nf.load_state_dict(hc.nf.state_dict())
                    a, b = _grads(hc, e, G), _grads(pre, e, G)
                    if n == 1:
                        self.assertTrue(torch.equal(a["out"], b["out"]))
                    worst = 0.0
                    for key in ("out", "de"):
                        worst = max(worst, rel_err(a[key], b[key]))
                    for k in range(S):
                        for p in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
                            worst = max(worst, rel_err(a[f"blocks.{k}.{p}"],
                                                       b[f"blocks.{k}.{p}"]))
                        for p in pre.norms[k].state_dict():
                            worst = max(worst, rel_err(a[f"hc.{k}.norm.{p}"],
                                                       b[f"norms.{k}.{p}"]))
                    for p in pre.nf.state_dict():
                        worst = max(worst, rel_err(a[f"nf.{p}"], b[f"nf.{p}"]))
                    print(f"\nstatic HC n={n} {kind} at init vs Pre-Norm: worst {worst:.1e}")
                    self.assertLess(worst, 1e-12)

    def test_dynamic_init_is_static_init(self):
        """tanh(0) = 0: dynamic HC at initialisation computes static HC's output bit for bit."""
        for n in (1, 2, 4):
            st, e, G, _ = _hc(n, False, "layernorm", seed=10 + n)
            dy, _, _, _ = _hc(n, True, "layernorm", seed=10 + n)
            dy.blocks = copy.deepcopy(st.blocks)
            for k in range(S):
                dy.hc[k].norm.load_state_dict(st.hc[k].norm.state_dict())
            dy.nf.load_state_dict(st.nf.state_dict())
            with torch.no_grad():
                self.assertTrue(torch.equal(st(e), dy(e)), n)

    def test_einsum_form_agrees_with_loops(self):
        """The oracle's matrix form against its explicit loop over streams s and entries
        A_r[s, j] (the paper's H' = A_r^T H), random connections, static and dynamic."""
        for dynamic in (False, True):
            for n in (1, 3, 4):
                with self.subTest(n=n, dynamic=dynamic):
                    model, e, _, _ = _hc(n, dynamic, "rmsnorm", seed=20 + n,
                                         random_connections=True)
                    H = model.streams(e)
                    with torch.no_grad():
                        for k in range(S):
                            a = model.hc[k](H, model.blocks[k])
                            b = model.reference_step(k, H, model.blocks[k])
                            self.assertLess(rel_err(a, b), 1e-14)
                            H = a

    def test_random_connections_differ_from_pre_norm(self):
        """The parity runs use random connections: far from the initial Pre-Norm network (else
        a fault in the connections could go unseen)."""
        for dynamic in (False, True):
            a, e, G, _ = _hc(4, dynamic, "layernorm", seed=30, random_connections=True)
            b = copy.deepcopy(a)
            with torch.no_grad():
                for sub in b.hc:
                    sub.A_r.copy_(sub.A_r.t().clone())
                self.assertGreater(rel_err(a(e), b(e)), 1e-2)


if __name__ == "__main__":
    main()
