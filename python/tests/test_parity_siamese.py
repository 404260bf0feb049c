"""Parity of libsiamesenorm's SiameseNorm placement (through the Python binding) with a
pure-PyTorch implementation of the official formulation: 12 layers (24 sub-layers), R = 64,
D = 96, random gammas/betas, blocks Linear + GELU + Linear. Metric: per tensor,
max |lib - ref| / max |ref| with ref the float64 PyTorch autograd result; must be <= 1e-5 for
the output, the embedding gradient, every gamma and beta gradient and the block gradients.
Also the paper's two ablations as the library expresses them: "without the input norm"
(input_norm = identity: h_i = u_i + N_pre,i(y_i)) and "without depth scaling" (SN_SCALE_NONE:
c_i = 1), each against its own PyTorch formulation, for LayerNorm and RMSNorm, two seeds."""

import unittest

import torch  # noqa: F401  (a missing torch must FAIL this test, never skip it)

from parity_harness import measure, report, TOL
from strict_main import main


class SiameseParity(unittest.TestCase):
    def check(self, kind, scales, eps, isa=None, seed=0, input_norm=True):
        rows = measure("siamese", kind, eps=eps, scales=scales, isa=isa, seed=seed,
                       input_norm=input_norm)
        report(f"siamese {kind} c={scales}" + ("" if input_norm else " no input norm")
               + f" seed={seed}" + (f" isa={isa}" if isa else ""), rows)
        for g, (lib64, _, _, k) in rows.items():
            self.assertLessEqual(lib64, TOL, f"{g} worst tensor {k}")

    def ablation(self, **kw):
        for kind, eps in (("layernorm", 1e-5), ("rmsnorm", 1e-6)):
            for seed in (0, 1):
                with self.subTest(kind=kind, seed=seed, **kw):
                    self.check(kind, eps=eps, seed=seed, **kw)

    def test_ablation_without_input_norm(self):
        self.ablation(scales="default", input_norm=False)

    def test_ablation_without_depth_scaling(self):
        self.ablation(scales="none")

    def test_ablation_both(self):
        self.ablation(scales="none", input_norm=False)

    def test_layernorm_default_c(self):
        self.check("layernorm", "default", 1e-5)

    def test_layernorm_custom_c(self):
        self.check("layernorm", "custom", 1e-5)

    def test_rmsnorm_default_c(self):
        self.check("rmsnorm", "default", 1e-6)

    def test_rmsnorm_custom_c(self):
        self.check("rmsnorm", "custom", 1e-6)

    def test_every_kernel_path(self):
        """The default run uses the best path; the others must meet the same bound."""
        import siamesenorm as sn
        for isa in ("scalar", "avx2", "avx512"):
            if sn.isa_available(isa):
                with self.subTest(isa=isa):
                    self.check("layernorm", "custom", 1e-5, isa=isa)
                    self.check("rmsnorm", "default", 1e-6, isa=isa)
                    self.check("layernorm", "none", 1e-5, isa=isa, input_norm=False)


if __name__ == "__main__":
    main()
