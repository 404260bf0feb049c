"""The PyTorch adapter (siamesenorm.torch_adapter) against pure PyTorch. The library is fp32
only, so torch.autograd.gradcheck (float64) does not apply: instead the adapter's outputs and
gradients must match float64 autograd of the pure-torch formulation within 1e-5 (metric:
max |a - ref| / max |ref| per tensor), and each Function must match its torch expression."""

import copy
import math
import unittest

import torch

import siamesenorm as sn
from siamesenorm import torch_adapter as ta
from parity_ref import SiameseRef, Block, randomise_norms, rel_err, official_scale
from strict_main import main

TOL = 1e-5


class Functions(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(0)
        self.R, self.D = 10, 24
        self.x = torch.randn(self.R, self.D, generator=g)
        self.y = 3 * torch.randn(self.R, self.D, generator=g)
        self.gen = g

    def grads(self, fn, *inputs):
        inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
        outs = fn(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        # The same loss weights for the float32 and float64 runs: drawn in float32, then cast.
        w = [torch.randn(o.shape, generator=torch.Generator().manual_seed(k)).to(o.dtype)
             for k, o in enumerate(outs)]
        sum(((o * wk).sum() for o, wk in zip(outs, w))).backward()
        return [o.detach().double() for o in outs] + [t.grad.double() for t in inputs]

    def test_fuse_and_merge(self):
        D = self.D
        fuse = sn.Fuse.uniform("layernorm", eps=1e-5)
        params = fuse.init_params(D)
        params = torch.from_numpy(params) + 0.2 * torch.randn(len(params), generator=self.gen)

        def ref(x, y, p):
            ln = lambda v, k: torch.nn.functional.layer_norm(  # noqa: E731
                v, (D,), p[2 * k * D:(2 * k + 1) * D], p[(2 * k + 1) * D:(2 * k + 2) * D], 1e-5)
            u = ln(x, 0)
            return u, ln(u + ln(y, 1), 2)

        lib = self.grads(lambda x, y, p: ta.FuseFunction.apply(x, y, p, fuse), self.x, self.y,
                         params)
        want = self.grads(ref, self.x.double(), self.y.double(), params.double())
        for a, b in zip(lib, want):
            self.assertLessEqual(rel_err(a, b), TOL)
        lib = self.grads(lambda x, y, p: ta.MergeFunction.apply(x, y, p, fuse), self.x, self.y,
                         params)
        want = self.grads(lambda x, y, p: ref(x, y, p)[1], self.x.double(), self.y.double(),
                          params.double())
        for a, b in zip(lib, want):
            self.assertLessEqual(rel_err(a, b), TOL)

    def test_apply_and_split(self):
        c = math.sqrt(6.0)
        z = torch.randn(self.R, self.D, generator=self.gen)
        lib = self.grads(lambda z, u, y: ta.ApplyFunction.apply(z, u, y, c), z, self.x, self.y)
        want = self.grads(lambda z, u, y: (u + z / c, y + z), z.double(), self.x.double(),
                          self.y.double())
        for a, b in zip(lib, want):
            self.assertLessEqual(rel_err(a, b), 1e-6)
        lib = self.grads(ta.SplitFunction.apply, self.x)
        want = self.grads(lambda e: (e * 1, e * 1), self.x.double())
        for a, b in zip(lib, want):
            self.assertLessEqual(rel_err(a, b), 1e-7)

    def test_rejects_float64(self):
        with self.assertRaises(TypeError):
            ta.SplitFunction.apply(self.x.double())


class ModuleParity(unittest.TestCase):
    def run_case(self, kind, eps, scales):
        S, R, D = 24, 64, 96
        torch.manual_seed(1)
        gen = torch.Generator().manual_seed(1)
        ref_scales = ([official_scale(i) for i in range(S)] if scales is None
                      else [1.0] * S if scales == "none" else scales)
        ref = SiameseRef(S, D, kind, eps, 4 * D, ref_scales).float()
        randomise_norms(ref, gen)
        model = ta.SiameseNorm([copy.deepcopy(b) for b in ref.blocks], D, kind=kind, eps=eps,
                               scales=scales)
        for i, sub in enumerate(model.sublayers):
            self.assertAlmostEqual(sub.c, ref_scales[i], places=5)
            for j, m in enumerate((ref.post[i], ref.pre[i], ref.inp[i])):
                g, b = sub.norm_params(j)
                g.copy_(m.weight.detach())
                if b is not None:
                    b.copy_(m.bias.detach())
        for j, m in enumerate((ref.na, ref.nb, ref.nf)):
            g, b = model.merge.norm_params(j)
            g.copy_(m.weight.detach())
            if b is not None:
                b.copy_(m.bias.detach())
        e = torch.randn(2, R // 2, D, generator=gen)  # (batch, seq, D): the adapter flattens
        w = torch.randn(2, R // 2, D, generator=gen)

        ref64 = copy.deepcopy(ref).double()
        e64 = e.double().reshape(R, D).requires_grad_(True)
        out64 = ref64(e64)
        (out64 * w.double().reshape(R, D)).sum().backward()

        e32 = e.clone().requires_grad_(True)
        out = model(e32)
        self.assertEqual(out.shape, e.shape)
        (out * w).sum().backward()

        errs = {"out": rel_err(out.detach().reshape(R, D), out64.detach()),
                "de": rel_err(e32.grad.reshape(R, D), e64.grad)}
        worst_g = worst_b = worst_blk = 0.0
        for i, sub in enumerate(model.sublayers):
            for j, m in enumerate((ref64.post[i], ref64.pre[i], ref64.inp[i])):
                g, b = sub.norm_grads(j)
                worst_g = max(worst_g, rel_err(g, m.weight.grad))
                if b is not None:
                    worst_b = max(worst_b, rel_err(b, m.bias.grad))
            for p, q in zip(sub.block.parameters(), ref64.blocks[i].parameters()):
                worst_blk = max(worst_blk, rel_err(p.grad, q.grad))
        for j, m in enumerate((ref64.na, ref64.nb, ref64.nf)):
            g, b = model.merge.norm_grads(j)
            worst_g = max(worst_g, rel_err(g, m.weight.grad))
            if b is not None:
                worst_b = max(worst_b, rel_err(b, m.bias.grad))
        errs.update(gamma=worst_g, block=worst_blk)
        if kind == "layernorm":
            errs["beta"] = worst_b
        print(f"\nadapter {kind} scales={'default' if scales is None else scales if isinstance(scales, str) else 'custom'}"
              f" vs float64 torch: " + ", ".join(f"{k} {v:.2e}" for k, v in errs.items()))
        for k, v in errs.items():
            self.assertLessEqual(v, TOL, k)

    def test_layernorm_default(self):
        self.run_case("layernorm", 1e-5, None)

    def test_rmsnorm_none(self):
        self.run_case("rmsnorm", 1e-6, "none")

    def test_layernorm_custom(self):
        g = torch.Generator().manual_seed(3)
        self.run_case("layernorm", 1e-5, [float(torch.empty(()).uniform_(0.5, 3.0, generator=g))
                                          for _ in range(24)])

    def test_trains(self):
        """The module is a usable nn.Module: an optimiser step changes its norm parameters."""
        D = 16
        model = ta.SiameseNorm([Block(D, 32) for _ in range(4)], D)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        before = model.sublayers[0].params.detach().clone()
        model(torch.randn(8, D)).pow(2).mean().backward()
        opt.step()
        self.assertFalse(torch.equal(before, model.sublayers[0].params.detach()))


if __name__ == "__main__":
    main()
