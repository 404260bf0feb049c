"""bf16 through the binding and the torch adapter.

- every primitive on uint16 (bf16) arrays is bitwise to_bf16 of the float32 call on the widened
  inputs (the header's contract), and parameter gradients are the float32 call's;
- PyTorch 1.13 parity in bf16: torch.nn.functional.layer_norm on bf16 input (1.13 refuses fp32
  weights with bf16 input, so torch gets bf16 weights; the library keeps them fp32 and gets the
  same values, which are bf16-representable here), forward and backward; and the official
  SiameseNorm block formulation run in torch bf16 against the adapter on bf16 tensors;
- dtype errors raise before C.
Tolerances (max |a - b| / max |b|): torch rounds each op's result to bf16 (e.g. u + N_pre(y)
before N_in) where the library keeps fp32 inside a call, and both round their outputs: single
norms agree within 2^-6 (observed 6.3e-3 forward, 7.3e-3 backward, 7.2e-3 dgamma: about one
bf16 ulp of the largest value) and the 4-sub-layer stack within 2^-4 (observed 1.0e-2 out,
1.8e-2 de). -v prints them."""

import unittest

import numpy as np
import torch
import torch.nn.functional as F

import siamesenorm as sn
from siamesenorm.torch_adapter import SiameseNorm
from strict_main import main


def rel(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def bf16_values(rng, shape, scale=1.0):
    """(uint16 bits, their float32 values)."""
    b = sn.to_bf16((scale * rng.standard_normal(shape)).astype(np.float32))
    return b, sn.from_bf16(b)


def tbf16(b):
    return torch.from_numpy(b.view(np.int16)).view(torch.bfloat16)


class Bitwise(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(15)

    def test_norm(self):
        for kind in ("layernorm", "rmsnorm"):
            n = sn.Norm(kind)
            R, D = 13, 100
            p = (1 + 0.3 * self.rng.standard_normal(n.query(D)[0])).astype(np.float32)
            xb, xf = bf16_values(self.rng, (R, D), 2.0)
            s16, s32 = n.empty_stats(R, D), n.empty_stats(R, D)
            o16 = n.forward(xb, p, stats=s16)
            o32 = n.forward(xf, p, stats=s32)
            self.assertEqual(o16.dtype, np.uint16)
            self.assertTrue(np.array_equal(o16, sn.to_bf16(o32)))
            self.assertTrue(np.array_equal(s16, s32))
            db, df = bf16_values(self.rng, (R, D))
            g16, g32 = np.zeros_like(p), np.zeros_like(p)
            dx16 = n.backward(db, xb, p, s16, dparams=g16)
            dx32 = n.backward(df, xf, p, s32, dparams=g32)
            self.assertTrue(np.array_equal(dx16, sn.to_bf16(dx32)))
            self.assertTrue(np.array_equal(g16, g32))

    def test_fuse_and_streams(self):
        f = sn.Fuse.uniform("layernorm")
        R, D = 9, 64
        p = (1 + 0.3 * self.rng.standard_normal(f.query(D)[0])).astype(np.float32)
        (xb, xf), (yb, yf) = bf16_values(self.rng, (R, D)), bf16_values(self.rng, (R, D))
        s16, s32 = f.empty_stats(R, D), f.empty_stats(R, D)
        u16, h16 = f.forward(xb, yb, p, stats=s16)
        u32, h32 = f.forward(xf, yf, p, stats=s32)
        self.assertTrue(np.array_equal(h16, sn.to_bf16(h32)))
        self.assertTrue(np.array_equal(u16, sn.to_bf16(u32)))
        (dhb, dhf), (dub, duf) = bf16_values(self.rng, (R, D)), bf16_values(self.rng, (R, D))
        g16, g32 = np.zeros_like(p), np.zeros_like(p)
        dx16, dy16 = f.backward(dhb, xb, yb, p, s16, du=dub, dparams=g16)
        dx32, dy32 = f.backward(dhf, xf, yf, p, s32, du=duf, dparams=g32)
        self.assertTrue(np.array_equal(dx16, sn.to_bf16(dx32)))
        self.assertTrue(np.array_equal(dy16, sn.to_bf16(dy32)))
        self.assertTrue(np.array_equal(g16, g32))
        xo16, yo16 = sn.apply_forward(xb, yb, dhb, 1.7)
        xo32, yo32 = sn.apply_forward(xf, yf, dhf, 1.7)
        self.assertTrue(np.array_equal(xo16, sn.to_bf16(xo32)))
        self.assertTrue(np.array_equal(yo16, sn.to_bf16(yo32)))
        de16 = sn.split_backward(xb, yb)
        self.assertTrue(np.array_equal(de16, sn.to_bf16(sn.split_backward(xf, yf))))

    def test_net(self):
        R, D, S = 7, 32, 4
        e16, e32 = bf16_values(self.rng, (R, D))
        out = {}
        for dt, e in (("bf16", e16), ("f32", e32)):
            net = sn.Net("siamese", S, D, act_dtype=dt)
            net.split(e)
            for i in range(S):
                h = net.enter(i)
                net.exit(i, h)
            out[dt] = net.merge()
        self.assertEqual(out["bf16"].dtype, np.uint16)
        self.assertLess(rel(sn.from_bf16(out["bf16"]), out["f32"]), 2 ** -4)

    def test_dtype_errors(self):
        n = sn.Norm("layernorm")
        p = n.init_params(8)
        xb = np.zeros((2, 8), np.uint16)
        with self.assertRaises(sn.DTypeError):  # mixed: bf16 input, float32 output
            n.forward(xb, p, out=np.zeros((2, 8), np.float32))
        with self.assertRaises(sn.DTypeError):
            n.forward(np.zeros((2, 8), np.float64), p)
        with self.assertRaises(sn.DTypeError):  # parameters stay float32
            n.forward(xb, p.astype(np.uint16))
        net = sn.Net("siamese", 2, 8, act_dtype="bf16")
        with self.assertRaises(sn.DTypeError):
            net.split(np.zeros((2, 8), np.float32))
        with self.assertRaises(sn.DTypeError):
            sn.Net("siamese", 2, 8, act_dtype="fp16")


class TorchParity(unittest.TestCase):
    def test_layer_norm(self):
        torch.manual_seed(0)
        R, D = 33, 96
        x = (2 * torch.randn(R, D)).bfloat16()
        w = (1 + 0.3 * torch.randn(D)).bfloat16().float()  # bf16-representable fp32 weights
        b = (0.3 * torch.randn(D)).bfloat16().float()
        xt = x.clone().requires_grad_()
        wt, bt = w.bfloat16().requires_grad_(), b.bfloat16().requires_grad_()
        yt = F.layer_norm(xt, (D,), wt, bt, 1e-5)
        dy = torch.randn(R, D).bfloat16()
        yt.backward(dy)
        n = sn.Norm("layernorm")
        p = torch.cat([w, b]).numpy()
        xb = x.view(torch.int16).numpy().view(np.uint16)
        st = n.empty_stats(R, D)
        y = n.forward(xb, p, stats=st)
        dp = np.zeros_like(p)
        dx = n.backward(dy.view(torch.int16).numpy().view(np.uint16), xb, p, st, dparams=dp)
        e_fwd = rel(sn.from_bf16(y), yt.detach().float().numpy())
        e_bwd = rel(sn.from_bf16(dx), xt.grad.float().numpy())
        e_dw = rel(dp[:D], wt.grad.float().numpy())
        if "-v" in __import__("sys").argv:
            print(f"\nlayer_norm bf16 vs torch: fwd {e_fwd:.2e} bwd {e_bwd:.2e} dgamma {e_dw:.2e}")
        self.assertLess(e_fwd, 2 ** -6)
        self.assertLess(e_bwd, 2 ** -6)
        self.assertLess(e_dw, 2 ** -6)

    def test_official_block_bf16(self):
        """The official SiameseNorm sub-layer (DeiT form: u = N_post(x),
        h = N_in(u + N_pre(y)), x' = u + z / c, y' = y + z; merge N_f(N_a(x) + N_b(y))) in torch
        bf16 ops, against the adapter on bf16 tensors, with the same linear blocks."""
        torch.manual_seed(1)
        R, D, S = 16, 64, 4
        blocks = [torch.nn.Linear(D, D).bfloat16() for _ in range(S)]
        model = SiameseNorm(blocks, d=D)
        e = torch.randn(R, D).bfloat16()

        def ln(v):
            return F.layer_norm(v, (D,), torch.ones(D).bfloat16(), torch.zeros(D).bfloat16())

        ea = e.clone().requires_grad_()
        out_a = model(ea)
        eo = e.clone().requires_grad_()
        x = y = eo
        for i, blk in enumerate(blocks):
            c = sn.torch_adapter.default_scale(i)
            u = ln(x)
            h = ln(u + ln(y))
            z = blk(h)
            x, y = u + z / c, y + z
        out_o = ln(ln(x) + ln(y))
        self.assertEqual(out_a.dtype, torch.bfloat16)
        g = torch.randn(R, D).bfloat16()
        out_a.backward(g)
        out_o.backward(g)
        e_out = rel(out_a.detach().float().numpy(), out_o.detach().float().numpy())
        e_de = rel(ea.grad.float().numpy(), eo.grad.float().numpy())
        if "-v" in __import__("sys").argv:
            print(f"\nofficial block bf16 vs adapter: out {e_out:.2e} de {e_de:.2e}")
        self.assertLess(e_out, 2 ** -4)
        self.assertLess(e_de, 2 ** -4)

    def test_mixed_raises(self):
        f = sn.Fuse.uniform("layernorm")
        p = torch.from_numpy(f.init_params(8))
        with self.assertRaises(TypeError):
            sn.torch_adapter.FuseFunction.apply(torch.zeros(2, 8).bfloat16(), torch.zeros(2, 8),
                                                p, f)


if __name__ == "__main__":
    main()
