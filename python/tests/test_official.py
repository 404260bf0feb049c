"""siamesenorm.official: state dicts saved from models carrying the official SiameseNorm names
(official_standins.py: DeiT, DiT, OLMo hybrid_pre) load into the library's torch module
(torch_adapter.SiameseNorm) and into a Net, give the official model's outputs (within fp32
tolerance of its float64 run), and map back to the same names and tensors."""

import copy
import io
import unittest

import numpy as np
import torch

import siamesenorm as sn
from siamesenorm import official
from official_standins import DeiTStandIn, DiTStandIn, OLMoStandIn, randomise
from parity_ref import rel_err
from strict_main import main

L, D, HIDDEN, R = 3, 32, 64, 24
TOL = 1e-5

CASES = {  # name: (layout, stand-in factory, make_* kwargs)
    "deit": ("deit", lambda: DeiTStandIn(L, D, HIDDEN), {}),
    "dit": ("dit", lambda: DiTStandIn(L, D, HIDDEN), {}),
    "olmo": ("olmo_hybrid_pre", lambda: OLMoStandIn(L, D, HIDDEN), {}),
    "olmo_nobias": ("olmo_hybrid_pre", lambda: OLMoStandIn(L, D, HIDDEN, bias=False),
                    {"bias": False}),
}


def saved_state_dict(model):
    """The model's state dict through torch.save / torch.load, as a checkpoint file gives it."""
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    return torch.load(buf)


class Setup:
    def build(self, case, seed=0):
        layout, factory, kw = CASES[case]
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        ref = factory()
        randomise(ref, gen)
        e = torch.randn(R, D, generator=gen)
        return layout, ref, kw, saved_state_dict(ref), e

    def ref_out(self, ref, e):
        with torch.no_grad():
            return copy.deepcopy(ref).double()(e.double())

    def norm_keys(self, ref, layout):
        """The state-dict keys of the stand-in's norms (and c1): those the helpers map."""
        names = official.norm_names(layout, L)
        mods = [n for n, _, _, kind in names if kind == "norm"]
        bare = [n for n, _, _, kind in names if kind == "bare"]
        return [k for k in ref.state_dict() if k in bare or k.rsplit(".", 1)[0] in mods]


class TorchModule(Setup, unittest.TestCase):
    def run_case(self, case):
        layout, ref, kw, sd, e = self.build(case)
        model = official.make_module(layout, copy.deepcopy(ref.sub_blocks()), D, **kw)
        used = official.from_state_dict(layout, sd, model)
        self.assertEqual(sorted(used), sorted(self.norm_keys(ref, layout)))
        with torch.no_grad():
            out = model(e)
        err = rel_err(out, self.ref_out(ref, e))
        f32 = rel_err(out, ref(e).detach())
        print(f"\n{case}: SiameseNorm module vs the official-named model: float64 {err:.2e}, "
              f"float32 {f32:.2e}")
        self.assertLessEqual(err, TOL)
        # round trip: the same names and tensors, bit for bit
        back = official.to_state_dict(layout, model)
        self.assertEqual(sorted(back), sorted(self.norm_keys(ref, layout)))
        for k, v in back.items():
            self.assertTrue(torch.equal(v, sd[k]), k)
        fresh = official.make_module(layout, copy.deepcopy(ref.sub_blocks()), D, **kw)
        official.from_state_dict(layout, back, fresh)
        for (k1, p1), (k2, p2) in zip(model.state_dict().items(), fresh.state_dict().items()):
            self.assertEqual(k1, k2)
            self.assertTrue(torch.equal(p1, p2), k1)

    def test_deit(self):
        self.run_case("deit")

    def test_dit(self):
        self.run_case("dit")

    def test_olmo_hybrid_pre(self):
        self.run_case("olmo")

    def test_olmo_hybrid_pre_without_bias(self):
        self.run_case("olmo_nobias")

    def test_module_names(self):
        _, ref, _, _, _ = self.build("dit")
        model = official.make_module("dit", ref.sub_blocks(), D)
        keys = [k for k in model.state_dict() if not k.split(".")[2:3] == ["block"]]
        self.assertIn("sublayers.0.post.weight", keys)
        self.assertIn("sublayers.0.pre.bias", keys)
        self.assertIn("merge.x.weight", keys)
        self.assertIn("merge.y.bias", keys)
        # DiT's N_in and N_f are non-affine: no tensors
        self.assertFalse([k for k in keys if ".input." in k or k.startswith("merge.final")])
        olmo = official.make_module("olmo_hybrid_pre", OLMoStandIn(L, D, HIDDEN).sub_blocks(), D)
        keys = list(olmo.state_dict())
        self.assertIn("sublayers.0.c1.weight", keys)
        self.assertNotIn("sublayers.0.c1.bias", keys)
        self.assertIn("sublayers.1.input.weight", keys)


class FlatBlock(Setup, unittest.TestCase):
    """The same through a Net: the official tensors in the library's flat parameter block."""

    def run_case(self, case):
        layout, ref, kw, sd, e = self.build(case, seed=1)
        net = official.make_net(layout, L, D, **kw)
        official.from_state_dict(layout, sd, net)
        blocks = ref.sub_blocks()
        net.split(e.numpy())
        with torch.no_grad():
            for i in range(net.n_sublayers):
                h = net.enter(i)
                net.exit(i, np.ascontiguousarray(blocks[i](torch.from_numpy(h)).numpy()))
        out = net.merge()
        err = rel_err(torch.from_numpy(out), self.ref_out(ref, e))
        print(f"\n{case}: Net vs the official-named model: {err:.2e}")
        self.assertLessEqual(err, TOL)
        back = official.to_state_dict(layout, net)
        self.assertEqual(sorted(back), sorted(self.norm_keys(ref, layout)))
        for k, v in back.items():
            self.assertTrue(np.array_equal(v, sd[k].numpy()), k)
        # the module and the Net agree on the layout: Net -> names -> module -> names
        model = official.make_module(layout, blocks, D, **kw)
        official.from_state_dict(layout, back, model)
        for k, v in official.to_state_dict(layout, model).items():
            self.assertTrue(np.array_equal(v.numpy(), back[k]), k)

    def test_deit(self):
        self.run_case("deit")

    def test_dit(self):
        self.run_case("dit")

    def test_olmo_hybrid_pre(self):
        self.run_case("olmo")

    def test_olmo_hybrid_pre_without_bias(self):
        self.run_case("olmo_nobias")

    def test_flat_offsets(self):
        """DeiT's blocks.1.pre_norm2 is norm 1 of stage 3: its gamma sits at sn_net_norm_at's
        offset in the flat block."""
        _, ref, _, sd, _ = self.build("deit")
        net = official.make_net("deit", L, D)
        official.from_deit_state_dict(sd, net)
        _, off = net.norm_at(3, 1)
        self.assertTrue(np.array_equal(net.params[off:off + D],
                                       sd["blocks.1.pre_norm2.weight"].numpy()))
        self.assertTrue(np.array_equal(net.params[off + D:off + 2 * D],
                                       sd["blocks.1.pre_norm2.bias"].numpy()))
        _, off = net.norm_at(2 * L, 0)  # the merge's N_a, on x: DeiT's pre_norm
        self.assertTrue(np.array_equal(net.params[off:off + D], sd["pre_norm.weight"].numpy()))


class Roles(unittest.TestCase):
    """norm_names takes each name's (stage, j) from the library's norm roles: they must be the
    official forward passes' (the module docstring's table, written out here for one layer)."""

    def test_one_layer(self):
        want = {
            "deit": [("blocks.0.post_norm1", 0, 0), ("blocks.0.pre_norm1", 0, 1),
                     ("blocks.0.input_norm1", 0, 2), ("blocks.0.post_norm2", 1, 0),
                     ("blocks.0.pre_norm2", 1, 1), ("blocks.0.input_norm2", 1, 2),
                     ("pre_norm", 2, 0), ("post_norm", 2, 1), ("final_norm", 2, 2)],
            "dit": [("blocks.0.postnorm1", 0, 0), ("blocks.0.prenorm1", 0, 1),
                    ("blocks.0.norm1", 0, 2), ("blocks.0.postnorm2", 1, 0),
                    ("blocks.0.prenorm2", 1, 1), ("blocks.0.norm2", 1, 2),
                    ("postnorm", 2, 0), ("prenorm", 2, 1), ("final_layer.norm_final", 2, 2)],
            "olmo_hybrid_pre": [("transformer.blocks.0.c1", 0, 0),
                                ("transformer.blocks.0.attn_y_norm", 0, 1),
                                ("transformer.blocks.0.ff_norm", 1, 0),
                                ("transformer.blocks.0.ff_y_norm", 1, 1),
                                ("transformer.blocks.0.ff_input_norm", 1, 2),
                                ("transformer.ln_f", 2, 0), ("transformer.ln_y_f", 2, 1),
                                ("transformer.ln_final_f", 2, 2)],
        }
        for layout, names in want.items():
            got = [(n, s, j) for n, s, j, _ in official.norm_names(layout, 1)]
            self.assertEqual(got, names, layout)

    def test_net_roles(self):
        net = sn.Net("siamese", 4, 8)
        self.assertEqual(net.norm_role(0, 0), ("post", "x"))
        self.assertEqual(net.norm_role(1, 2), ("input", "fused"))
        self.assertEqual(net.norm_role(4, 2), ("final", "fused"))
        self.assertEqual(net.find_norm(4, "merge_y"), 1)
        self.assertEqual(sn.Net("pre_norm", 2, 8).find_norm(0, "input"), 0)
        self.assertEqual(sn.Net("peri_ln", 2, 8).norm_role(-1, 0), ("embed", "e"))
        with self.assertRaises(sn.errors.IndexOutOfRange):
            net.find_norm(0, "final")
        with self.assertRaises(sn.errors.IndexOutOfRange):
            net.norm_role(0, 3)
        with self.assertRaises(ValueError):
            net.find_norm(0, "nonesuch")


class Errors(Setup, unittest.TestCase):
    def test_missing_key(self):
        layout, ref, _, sd, _ = self.build("deit")
        net = official.make_net(layout, L, D)
        before = net.params.copy()
        del sd["blocks.2.input_norm2.weight"]
        with self.assertRaises(KeyError) as cm:
            official.from_deit_state_dict(sd, net)
        self.assertIn("blocks.2.input_norm2.weight", str(cm.exception))
        self.assertTrue(np.array_equal(net.params, before))  # nothing written

    def test_wrong_shape_writes_nothing(self):
        layout, ref, _, sd, _ = self.build("olmo")
        model = official.make_module(layout, ref.sub_blocks(), D)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        sd["transformer.ln_final_f.bias"] = torch.zeros(D + 1)
        with self.assertRaises(ValueError):
            official.from_olmo_state_dict(sd, model)
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)

    def test_placement_and_depth(self):
        _, _, _, sd, _ = self.build("deit")
        with self.assertRaises(ValueError):
            official.from_deit_state_dict(sd, sn.Net("pre_norm", 2 * L, D))
        with self.assertRaises(ValueError):
            official.from_olmo_state_dict(sd, official.make_net("deit", L, D))
        with self.assertRaises(KeyError):  # deeper than the checkpoint
            official.from_deit_state_dict(sd, official.make_net("deit", L + 1, D))
        with self.assertRaises(TypeError):
            official.from_deit_state_dict(sd, object())
        with self.assertRaises(ValueError):
            official.norm_names("vit", L)

    def test_bias_mismatch(self):
        _, _, _, sd, _ = self.build("olmo_nobias")
        with self.assertRaises(ValueError) as cm:  # the library norm has a beta, sd has none
            official.from_olmo_state_dict(sd, official.make_net("olmo_hybrid_pre", L, D))
        self.assertIn("affine='scale'", str(cm.exception))
        _, _, _, sd, _ = self.build("olmo")
        with self.assertRaises(ValueError):  # and the other way round
            official.from_olmo_state_dict(
                sd, official.make_net("olmo_hybrid_pre", L, D, bias=False))

    def test_nonaffine_not_representable(self):
        net = official.make_net("dit", L, D)  # a Net keeps gamma/beta for DiT's final norm
        g, _ = net.param_views(2 * L, 2)
        g[0] = 2.0
        with self.assertRaises(ValueError) as cm:
            official.to_dit_state_dict(net)
        self.assertIn("final_layer.norm_final", str(cm.exception))

    def test_prefix_and_block_groups(self):
        layout, ref, _, sd, _ = self.build("olmo")
        grouped = {}
        for k, v in sd.items():
            if k.startswith("transformer.blocks."):
                _, _, l, rest = k.split(".", 3)
                k = f"transformer.block_groups.{int(l) // 2}.{int(l) % 2}.{rest}"
            grouped["module." + k] = v
        net = official.make_net(layout, L, D)
        official.from_olmo_state_dict(grouped, net, prefix="module.", block_group_size=2)
        back = official.to_olmo_state_dict(net, prefix="module.", block_group_size=2)
        self.assertIn("module.transformer.block_groups.1.0.c1", back)
        for k, v in back.items():
            self.assertTrue(np.array_equal(v, grouped[k].numpy()), k)

    def test_unused_layers_refused(self):
        """N9 (issue 26): a state dict of a deeper model into a shallower target used to load
        its first layers and leave the rest silently unused (72 norm tensors for 12 layers into
        6); now refused, nothing written."""
        for case in ("deit", "dit", "olmo"):
            layout, ref, kw, sd, _ = self.build(case)
            net = official.make_net(layout, L - 1, D, **kw)
            before = net.params.copy()
            with self.assertRaises(ValueError) as cm:
                official.from_state_dict(layout, sd, net)
            self.assertIn("left unused", str(cm.exception))
            self.assertIn(f"blocks.{L - 1}.", str(cm.exception))
            self.assertTrue(np.array_equal(net.params, before), case)

    def test_non_real_and_non_finite_refused(self):
        """N9: a complex gamma (1+5j) used to load as 1.0; integer, boolean, complex and
        non-numeric tensors are refused (TypeError), NaN, infinite and past-float32 values
        (ValueError), nothing written."""
        layout, ref, _, sd, _ = self.build("deit")
        key = "blocks.1.pre_norm2.weight"
        g = sd[key]
        bad_type = [g.to(torch.complex64) * (1 + 5j), g.to(torch.int32), g > 0,
                    g.numpy().astype(np.complex128), g.numpy().astype(np.int64),
                    np.array(["1"] * D)]
        bad_value = [torch.full((D,), float("nan")), np.full(D, np.inf),
                     np.full(D, 1e300, np.float64)]
        for bad, exc in [(b, TypeError) for b in bad_type] + [(b, ValueError) for b in bad_value]:
            net = official.make_net(layout, L, D)
            before = net.params.copy()
            with self.subTest(value=type(bad).__name__ + " " + str(getattr(bad, "dtype", ""))):
                with self.assertRaises(exc):
                    official.from_deit_state_dict({**sd, key: bad}, net)
                self.assertTrue(np.array_equal(net.params, before))
        net = official.make_net(layout, L, D)  # half precision is real: it loads
        official.from_deit_state_dict({**sd, key: g.half()}, net)
        official.from_deit_state_dict({**sd, key: g.bfloat16()}, net)

    def test_other_dtypes_convert_to_float32(self):
        layout, ref, _, sd, e = self.build("deit")
        sd64 = {k: v.double() for k, v in sd.items()}
        net = official.make_net(layout, L, D)
        official.from_deit_state_dict(sd64, net)
        self.assertEqual(net.params.dtype, np.float32)


if __name__ == "__main__":
    main()
