"""Parity of the comparison placements and SiameseNorm's other forms (libsiamesenorm through the
binding) with their pure-PyTorch formulations in placement_ref.py (written from SPEC.md):
SiameseNorm paper form, hybrid_pre, DeepNorm (alpha = (2L)^(1/4), the blocks' weights scaled at
init by beta = (8L)^(-1/4)), Peri-LN, Mix-LN (fractions 0.25 and 0.5), HybridNorm, HybridNorm*,
SpanNorm (c = sqrt(L), explicit c, c = 1).
Same network, inputs and metric as test_parity_siamese: 12 layers (24 sub-layers), R = 64,
D = 96, random gammas/betas (and c1), blocks Linear + GELU + Linear; the output, the embedding
gradient, every gamma/beta gradient and every block gradient within 1e-5 of float64 autograd
(max |lib - ref| / max |ref| per tensor). Seeds 0-2 for every case; seed 3 for explicit
scales and the library's default Mix-LN fraction; seed 4 on every kernel path (scalar, AVX2,
AVX-512 where available). Each run also checks sn_net_scale (c_i / alpha) and
sn_net_init_gain against the values SPEC gives."""

import unittest

import torch  # noqa: F401  (a missing torch must FAIL this test, never skip it)

import siamesenorm as sn
from parity_harness import measure, report, TOL, PLACEMENT_NAMES
from strict_main import main

SEEDS = (0, 1, 2)
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}


class PlacementParity(unittest.TestCase):
    def check(self, placement, kind, seeds=SEEDS, isa=None, **kw):
        for seed in seeds:
            with self.subTest(placement=placement, kind=kind, seed=seed, isa=isa, **kw):
                rows = measure(placement, kind, eps=EPS[kind], seed=seed, isa=isa, **kw)
                extra = "".join(f" {k}={v}" for k, v in kw.items())
                report(f"{placement} {kind}{extra} seed={seed}" + (f" isa={isa}" if isa else ""),
                       rows)
                self.assertTrue(set(rows) >= {"out", "de", "gamma", "block"}, rows)
                for g, (lib64, _, _, k) in rows.items():
                    self.assertLessEqual(lib64, TOL, f"{g} worst tensor {k}")

    def both(self, placement, **kw):
        for kind in ("layernorm", "rmsnorm"):
            self.check(placement, kind, **kw)

    def test_siamese_paper(self):
        self.both("siamese_paper")

    def test_siamese_paper_custom_c(self):
        self.both("siamese_paper", seeds=(3,), scales="custom")

    def test_siamese_hybrid_pre(self):
        self.both("siamese_hybrid_pre")

    def test_siamese_hybrid_pre_custom_c(self):
        self.both("siamese_hybrid_pre", seeds=(3,), scales="custom")

    def test_deepnorm(self):
        self.both("deepnorm")

    def test_deepnorm_explicit_alpha(self):
        self.both("deepnorm", seeds=(3,), scales="custom")

    def test_peri_ln(self):
        self.both("peri_ln")

    def test_mix_ln_quarter(self):
        self.both("mix_ln", mix_fraction=0.25)

    def test_mix_ln_default_fraction_is_quarter(self):
        self.both("mix_ln", seeds=(3,))  # the reference uses 0.25, the Net the library default

    def test_mix_ln_half(self):
        self.both("mix_ln", mix_fraction=0.5)

    def test_hybridnorm(self):
        self.both("hybridnorm")

    def test_hybridnorm_star(self):
        self.both("hybridnorm_star")

    def test_span_norm(self):
        self.both("span_norm")

    def test_span_norm_custom_c(self):
        self.both("span_norm", seeds=(3,), scales="custom")

    def test_span_norm_c1(self):
        self.both("span_norm", seeds=(3,), scales="none")

    def test_every_kernel_path(self):
        """The runs above use the best path; the others must meet the same bound."""
        cases = [("siamese_paper", "layernorm"), ("siamese_hybrid_pre", "rmsnorm"),
                 ("deepnorm", "layernorm"), ("peri_ln", "rmsnorm"), ("mix_ln", "layernorm"),
                 ("hybridnorm", "rmsnorm"), ("hybridnorm_star", "layernorm"),
                 ("span_norm", "rmsnorm")]
        for isa in ("scalar", "avx2", "avx512"):
            if sn.isa_available(isa):
                for placement, kind in cases:
                    self.check(placement, kind, seeds=(4,), isa=isa)

    def test_every_placement_has_a_parity_test(self):
        """Every placement the binding exposes is in the harness (the original three are
        covered by test_parity_single / test_parity_siamese, Hyper-Connections, with its
        connection weights, by test_parity_hyper_connections)."""
        import test_parity_hyper_connections as hc
        self.assertEqual(set(sn.net.PLACEMENTS), set(PLACEMENT_NAMES))
        tested = {n[len("test_"):] for n in dir(self) if n.startswith("test_")}
        for p in PLACEMENT_NAMES:
            if p == "hyper_connections":
                self.assertTrue({"test_static", "test_dynamic"} <= set(dir(hc.LibraryParity)))
            elif p not in ("pre_norm", "post_norm", "siamese"):
                self.assertTrue(any(t.startswith(p) for t in tested), p)


if __name__ == "__main__":
    main()
