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
from parity_ref import SiameseRef, PreNormRef, Block, randomise_norms, rel_err, official_scale
from placement_ref import SiameseHybridPreRef, SpanNormRef, span_scale
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

    def test_tensor_errors_are_package_errors(self):
        """A tensor the library cannot take raises DTypeError (a SiameseNormError and a
        TypeError), as a numpy array of another dtype does (0.6.19: a plain TypeError)."""
        for bad in (self.x.double(), self.x.half(), self.x.int(),
                    torch.empty(self.R, self.D, device="meta")):
            with self.assertRaises(sn.DTypeError):
                ta.SplitFunction.apply(bad)
        with self.assertRaises(sn.DTypeError):
            ta.MergeFunction.apply(self.x, self.y.double(), torch.zeros(6 * self.D),
                                   sn.Fuse.uniform())


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


def _module_of(model, stage):
    return model.merge if stage == len(model.sublayers) else model.sublayers[stage]


def _copy_norms(ref, model):
    """The reference's norm parameters into the adapter, by the library's (stage, j)."""
    for stage, j, m in ref.norms_by_stage():
        g, b = _module_of(model, stage).norm_params(j)
        if m is None or getattr(m, "weight", None) is None:
            continue
        g.copy_(m.weight.detach())
        if b is not None:
            b.copy_(m.bias.detach())


def _compare(test, model, ref, R, D, label):
    """Output, input gradient and every norm gradient of the adapter against float64 autograd
    of ref."""
    gen = torch.Generator().manual_seed(5)
    e = torch.randn(R, D, generator=gen)
    w = torch.randn(R, D, generator=gen)
    ref64 = copy.deepcopy(ref).double()
    e64 = e.double().requires_grad_(True)
    (ref64(e64) * w.double()).sum().backward()
    e32 = e.clone().requires_grad_(True)
    out = model(e32)
    (out * w).sum().backward()
    with torch.no_grad():
        errs = {"out": rel_err(out.detach(), ref64(e.double())), "de": rel_err(e32.grad, e64.grad)}
    worst = 0.0
    for stage, j, m in ref64.norms_by_stage():
        if m is None or getattr(m, "weight", None) is None:
            continue
        g, b = _module_of(model, stage).norm_grads(j)
        worst = max(worst, rel_err(g, m.weight.grad))
        if b is not None:
            worst = max(worst, rel_err(b, m.bias.grad))
    errs["norm grads"] = worst
    print(f"\n{label} vs float64 torch: " + ", ".join(f"{k} {v:.2e}" for k, v in errs.items()))
    for k, v in errs.items():
        test.assertLessEqual(v, TOL, k)


class NonAffineFinal(SiameseRef):
    """SiameseRef with a non-affine N_f (DiT's final norm) and non-affine N_in."""

    def __init__(self, S, d, eps, hidden):
        super().__init__(S, d, "layernorm", eps, hidden, [official_scale(i) for i in range(S)])
        self.nf = torch.nn.LayerNorm(d, eps=eps, elementwise_affine=False)
        self.inp = torch.nn.ModuleList(torch.nn.LayerNorm(d, eps=eps, elementwise_affine=False)
                                       for _ in range(S))

    def norms_by_stage(self):
        return [(s, j, None if (j == 2) else m) for s, j, m in super().norms_by_stage()]


class AdapterGaps(unittest.TestCase):
    """Issue 14 item 8: hybrid_pre and a non-affine final norm through SiameseNorm, per-norm
    parameter names, and state dicts of the old flat layout."""

    S, D, R = 8, 48, 20

    def test_hybrid_pre(self):
        S, D = self.S, self.D
        torch.manual_seed(2)
        ref = SiameseHybridPreRef(S, D, "layernorm", 1e-5, 2 * D,
                                  [official_scale(i) for i in range(S)]).float()
        randomise_norms(ref, torch.Generator().manual_seed(2))
        model = ta.SiameseNorm([copy.deepcopy(b) for b in ref.blocks], D,
                               placement="siamese_hybrid_pre")
        self.assertIsInstance(model.sublayers[0], ta.SiameseC1Sublayer)
        self.assertIsInstance(model.sublayers[1], ta.SiameseSublayer)
        _copy_norms(ref, model)
        _compare(self, model, ref, self.R, D, "adapter hybrid_pre")

    def test_nonaffine_final_and_input(self):
        S, D, eps = self.S, self.D, 1e-6
        torch.manual_seed(3)
        ref = NonAffineFinal(S, D, eps, 2 * D).float()
        randomise_norms(ref, torch.Generator().manual_seed(3))
        nonaffine = sn.Norm("layernorm", affine="none", eps=eps)
        model = ta.SiameseNorm([copy.deepcopy(b) for b in ref.blocks], D, eps=eps,
                               input_norm=nonaffine, final_norm=nonaffine)
        self.assertEqual(model.merge.norm_params(2), (None, None))
        self.assertEqual(model.merge.fuse.out, nonaffine)
        _copy_norms(ref, model)
        _compare(self, model, ref, self.R, D, "adapter, non-affine N_in and N_f")

    def test_names(self):
        model = ta.SiameseNorm([Block(8, 16) for _ in range(2)], 8, kind="rmsnorm")
        names = [n for n, _ in model.named_parameters() if ".block." not in n]
        self.assertEqual(names, [
            "sublayers.0.post.weight", "sublayers.0.pre.weight", "sublayers.0.input.weight",
            "sublayers.1.post.weight", "sublayers.1.pre.weight", "sublayers.1.input.weight",
            "merge.x.weight", "merge.y.weight", "merge.final.weight"])
        ln = ta.SiameseNorm([Block(8, 16)], 8)
        self.assertIn("merge.final.bias", ln.state_dict())
        # params: the flat block in the library's layout, differentiable, read-only
        sub = ln.sublayers[0]
        sub.pre.weight.data.fill_(2.0)
        flat = sub.params
        self.assertEqual(flat.numel(), 6 * 8)
        self.assertTrue(torch.equal(flat[16:24], torch.full((8,), 2.0)))
        self.assertTrue(flat.requires_grad)
        with self.assertRaises(AttributeError):
            sub.params = flat.detach()
        with self.assertRaises((AttributeError, KeyError)):  # nn.Module refuses it too
            sub.params = torch.nn.Parameter(flat.detach())

    def test_old_flat_state_dict_loads(self):
        """A state dict of 0.2 (one flat `params` per sub-layer and merge) loads into the
        per-norm modules."""
        D = 8
        model = ta.SiameseNorm([Block(D, 16) for _ in range(2)], D)
        old = {}
        for k, v in model.state_dict().items():
            if ".block." in k:
                old[k] = v
        gen = torch.Generator().manual_seed(9)
        flats = {p: torch.randn(6 * D, generator=gen)
                 for p in ("sublayers.0.", "sublayers.1.", "merge.")}
        old.update({p + "params": t for p, t in flats.items()})
        model.load_state_dict(old)  # strict: every key consumed, none missing
        for p, t in flats.items():
            mod = model.merge if p == "merge." else model.sublayers[int(p.split(".")[1])]
            self.assertTrue(torch.equal(mod.params.detach(), t))
            self.assertTrue(torch.equal(mod.norm_params(1)[1], t[3 * D:4 * D]))  # N_y beta
        bad = dict(old)
        bad["merge.params"] = torch.zeros(5)
        with self.assertRaises(RuntimeError):
            model.load_state_dict(bad)

    def test_rejects_other_placements(self):
        with self.assertRaises(ValueError):
            ta.SiameseNorm([Block(8, 16)], 8, placement="pre_norm")


class _SpanView:
    """The SpanNorm adapter seen through _compare's (stage, j) lookup: stage S is its final
    norm, and norm 0 of a stage is the sub-layer module's norm (its fuse's output norm, 2)."""

    def __init__(self, model):
        self.m = model
        self.sublayers = model.sublayers
        self.merge = model.final

    def __call__(self, e):
        return self.m(e)


class _Norm0(object):
    def __init__(self, sub):
        self.sub = sub

    def norm_params(self, j):
        return self.sub.norm_params(2 + j)

    def norm_grads(self, j):
        return self.sub.norm_grads(2 + j)


class SpanNormAdapter(unittest.TestCase):
    """ta.SpanNorm (the library's norms through FuseFunction, the residual in torch) against
    float64 autograd of placement_ref.SpanNormRef, for an even and an odd number of blocks."""

    D, R = 48, 20

    def check(self, S, kind, scales):
        torch.manual_seed(S)
        c = [span_scale(S)] * S if scales is None else [1.0] * S
        ref = SpanNormRef(S, self.D, kind, 1e-5, 2 * self.D, c).float()
        randomise_norms(ref, torch.Generator().manual_seed(S))
        model = ta.SpanNorm([copy.deepcopy(b) for b in ref.blocks], self.D, kind=kind,
                            scales=scales)
        self.assertEqual(model.scales, [float(torch.tensor(v, dtype=torch.float32))
                                        for v in c])
        view = _SpanView(model)
        view.sublayers = [_Norm0(m) for m in model.sublayers]
        view.merge = _Norm0(model.final)
        _copy_norms(ref, view)
        _compare(self, view, ref, self.R, self.D, f"adapter span_norm S={S} {kind}")

    def test_even_layernorm(self):
        self.check(6, "layernorm", None)

    def test_odd_rmsnorm_c1(self):
        self.check(5, "rmsnorm", "none")


class HyperConnectionsAdapter(unittest.TestCase):
    """torch_adapter.HyperConnections beyond the parity runs of test_parity_hyper_connections:
    names, the paper's initialisation (the network starts as Pre-Norm), forwards waiting for
    their backwards, bf16 input, bad settings raised before C."""
    S, D, R = 4, 16, 6

    def blocks(self, seed=0):
        torch.manual_seed(seed)
        return [Block(self.D, 2 * self.D) for _ in range(self.S)]

    def test_names_and_init(self):
        mod = ta.HyperConnections(self.blocks(), self.D, n=2, dynamic=True)
        names = {n for n, _ in mod.named_parameters() if not n.startswith("sublayers.0.block")}
        for p in ("norm.weight", "norm.bias", "streams_norm.weight", "streams_norm.bias",
                  "static_alpha", "static_beta", "dynamic_alpha_fn", "dynamic_beta_fn",
                  "dynamic_alpha_scale", "dynamic_beta_scale"):
            self.assertIn("sublayers.0." + p, names)
        self.assertIn("final.weight", names)
        for i, sub in enumerate(mod.sublayers):  # A_m = e_{i mod n}, A_r = I, B = 1
            want = torch.zeros(2, 3)
            want[i % 2, 0] = 1
            want[:, 1:] = torch.eye(2)
            self.assertTrue(torch.equal(sub.static_alpha.detach(), want))
            self.assertTrue(torch.equal(sub.static_beta.detach(), torch.ones(2)))
            self.assertEqual(tuple(sub.dynamic_alpha_fn.shape), (self.D, 3))
            self.assertFalse(sub.dynamic_alpha_fn.detach().any())
            self.assertAlmostEqual(float(sub.dynamic_beta_scale), 0.01, places=7)
        static = ta.HyperConnections(self.blocks(), self.D, n=3, dynamic=False)
        self.assertFalse(hasattr(static.sublayers[0], "dynamic_alpha_fn"))

    def test_starts_as_pre_norm(self):
        """At initialisation the output is Pre-Norm's with the final norm's eps / n^2 (SPEC):
        within 1e-6 of the float64 Pre-Norm formulation."""
        for n in (1, 2, 4):
            for dynamic in (False, True):
                blocks = self.blocks(n)
                mod = ta.HyperConnections(blocks, self.D, n=n, dynamic=dynamic)
                pre = PreNormRef(self.S, self.D, "layernorm", 1e-5, 2 * self.D)
                pre.blocks = torch.nn.ModuleList(copy.deepcopy(blocks))
                pre.nf = torch.nn.LayerNorm(self.D, eps=1e-5 / n ** 2)
                e = torch.randn(self.R, self.D, generator=torch.Generator().manual_seed(n))
                with torch.no_grad():
                    got, want = mod(e), pre.double()(e.double())
                self.assertLess(rel_err(got, want), 1e-6, (n, dynamic))

    def test_pending_forwards(self):
        """Two forwards before their backwards: each keeps its own activations, so the
        gradients are those of the two passes run one after the other."""
        mod = ta.HyperConnections(self.blocks(), self.D, n=4)
        g = torch.Generator().manual_seed(3)
        e1, e2 = torch.randn(self.R, self.D, generator=g), torch.randn(7, self.D, generator=g)
        mod(e1).sum().backward()
        mod(e2).pow(2).sum().backward()
        want = [p.grad.clone() for p in mod.parameters()]
        mod.zero_grad()
        a, b = mod(e1), mod(e2)
        (a.sum() + b.pow(2).sum()).backward()
        for w, p in zip(want, mod.parameters()):
            self.assertLess(rel_err(p.grad, w), 1e-6)

    def test_threads(self):
        """Forwards in two threads at once (each pass has a Net of its own): the outputs of a
        serial run, bit for bit."""
        import threading
        mod = ta.HyperConnections(self.blocks(), self.D, n=4)
        es = [torch.randn(64, self.D, generator=torch.Generator().manual_seed(k))
              for k in range(8)]
        with torch.no_grad():
            want = [mod(e) for e in es]
            got = [None] * len(es)

            def work(k0):
                for _ in range(5):
                    for k in range(k0, len(es), 2):
                        got[k] = mod(es[k])

            ts = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        for a, b in zip(got, want):
            self.assertTrue(torch.equal(a, b))

    def test_bf16(self):
        blocks = [torch.nn.Linear(self.D, self.D).bfloat16() for _ in range(self.S)]
        mod = ta.HyperConnections(blocks, self.D, n=2)
        e = torch.randn(self.R, self.D).bfloat16().requires_grad_(True)
        out = mod(e)
        self.assertEqual(out.dtype, torch.bfloat16)
        out.float().sum().backward()
        self.assertEqual(e.grad.dtype, torch.bfloat16)
        self.assertIsNotNone(mod.sublayers[0].static_alpha.grad)

    def test_bad_settings(self):
        for n, exc in ((0, sn.StreamsError), (sn.SN_HC_MAX_RATE + 1, sn.StreamsError),
                       (2.5, TypeError)):
            with self.assertRaises(exc):
                ta.HyperConnections(self.blocks(), self.D, n=n)


class ModuleInputs(unittest.TestCase):
    """What the modules do with inputs of another width, empty batches, other tensor types, and
    copies (deepcopy, pickle, torch.save) of the whole module."""
    D, S = 8, 4

    def modules(self, seed=0):
        torch.manual_seed(seed)
        D = self.D
        mk = lambda: [torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.Tanh())  # noqa: E731
                      for _ in range(self.S)]
        return {"SiameseNorm": ta.SiameseNorm(mk(), D),
                "SiameseNorm hybrid_pre": ta.SiameseNorm(mk(), D, placement="siamese_hybrid_pre",
                                                         scales=[1.0, 2.0, 0.5, 3.0]),
                "SpanNorm": ta.SpanNorm(mk(), D),
                "HyperConnections": ta.HyperConnections(mk(), D, n=2, dynamic=True),
                "HyperConnections static": ta.HyperConnections(mk(), D, n=3, dynamic=False)}

    def randomise(self, mod, seed):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in mod.parameters():
                p.add_(0.1 * torch.randn(p.shape, generator=g))

    def test_wrong_width_raises(self):
        """A (2, 16) input to a d = 8 module: ShapeError naming both widths (0.6.19 normalised
        it silently in 8-wide pieces)."""
        for name, mod in self.modules().items():
            for shape in ((2, 2 * self.D), (3, self.D // 2), (self.D, 2), ()):
                with self.subTest(name, shape=shape):
                    with self.assertRaises(sn.ShapeError) as cm:
                        mod(torch.randn(shape))
                    self.assertIsInstance(cm.exception, sn.SiameseNormError)
                    self.assertIn(f"(..., {self.D})", str(cm.exception))
                    self.assertIn(str(tuple(shape)), str(cm.exception))
            self.assertEqual(tuple(mod(torch.randn(2, 3, self.D)).shape), (2, 3, self.D))
            self.assertEqual(tuple(mod(torch.randn(self.D)).shape), (self.D,))

    def test_bad_input_tensor_types(self):
        for name, mod in self.modules().items():
            for bad in (torch.randn(3, self.D, dtype=torch.float64),
                        torch.empty(3, self.D, device="meta"),
                        torch.zeros(0, self.D, dtype=torch.float64)):
                with self.subTest(name, dtype=bad.dtype, device=bad.device):
                    with self.assertRaises(sn.DTypeError):
                        mod(bad)
        with self.assertRaises(TypeError):  # the width is an integer, as sn.Net's d
            ta.SiameseNorm([torch.nn.Identity()] * 2, 8.0)

    def test_empty_batch(self):
        """No rows in, no rows out, as torch.nn.LayerNorm: the output is empty, the blocks run
        on empty inputs, and every parameter's gradient is zero (0.6.19: StrideError)."""
        for name, mod in self.modules().items():
            for shape in ((0, self.D), (2, 0, self.D)):
                with self.subTest(name, shape=shape):
                    mod.zero_grad(set_to_none=True)
                    e = torch.zeros(shape, requires_grad=True)
                    out = mod(e)
                    self.assertEqual(out.shape, e.shape)
                    self.assertEqual(out.dtype, torch.float32)
                    out.sum().backward()
                    self.assertEqual(e.grad.shape, e.shape)
                    for pname, p in mod.named_parameters():
                        self.assertIsNotNone(p.grad, pname)
                        self.assertFalse(p.grad.any(), pname)
        for mod in (ta.SiameseNorm([torch.nn.Identity() for _ in range(2)], self.D),
                    ta.SpanNorm([torch.nn.Identity() for _ in range(2)], self.D),
                    ta.HyperConnections([torch.nn.Identity() for _ in range(2)], self.D, n=2)):
            e = torch.zeros(0, self.D, dtype=torch.bfloat16, requires_grad=True)
            out = mod(e)
            self.assertEqual((out.shape, out.dtype), (e.shape, torch.bfloat16))
            out.float().sum().backward()
            self.assertEqual((e.grad.shape, e.grad.dtype), (e.shape, torch.bfloat16))

    def test_copies_are_bitwise_identical(self):
        """copy.deepcopy (an EMA teacher), pickle and torch.save / torch.load of the whole
        module: the copy's outputs and gradients equal the original's bit for bit (0.6.19:
        HyperConnections raised "ctypes objects containing pointers cannot be pickled")."""
        import io
        import pickle

        def saved(m):
            buf = io.BytesIO()
            torch.save(m, buf)
            buf.seek(0)
            return torch.load(buf)

        g = torch.Generator().manual_seed(11)
        e = torch.randn(5, self.D, generator=g)
        w = torch.randn(5, self.D, generator=g)

        def run(m):
            m.zero_grad(set_to_none=True)
            x = e.clone().requires_grad_(True)
            out = m(x)
            (out * w).sum().backward()
            return [out.detach(), x.grad] + [p.grad for p in m.parameters()]

        for name, mod in self.modules().items():
            self.randomise(mod, 3)
            copies = {"deepcopy": copy.deepcopy(mod), "pickle": pickle.loads(pickle.dumps(mod)),
                      "torch.save": saved(mod)}
            want = run(mod)
            for how, c in copies.items():
                with self.subTest(name, how=how):
                    self.assertEqual(len(list(c.parameters())), len(list(mod.parameters())))
                    got = run(c)
                    self.assertEqual(len(got), len(want))
                    for a, b in zip(got, want):
                        self.assertTrue(torch.equal(a, b))
                    with torch.no_grad():  # independent parameters
                        next(c.parameters()).add_(1.0)
                    self.assertTrue(torch.equal(run(mod)[0], want[0]))


if __name__ == "__main__":
    main()
