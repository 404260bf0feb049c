"""Parity of the Pre-Norm and Post-Norm placements (libsiamesenorm through the binding) with
their pure-PyTorch formulations; same network, inputs and metric as test_parity_siamese."""

import unittest

import torch  # noqa: F401  (a missing torch must FAIL this test, never skip it)

from parity_harness import measure, report, TOL
from strict_main import main


class SingleStreamParity(unittest.TestCase):
    def check(self, placement, kind, eps):
        rows = measure(placement, kind, eps=eps)
        report(f"{placement} {kind}", rows)
        for g, (lib64, _, _, k) in rows.items():
            self.assertLessEqual(lib64, TOL, f"{g} worst tensor {k}")

    def test_pre_norm_layernorm(self):
        self.check("pre_norm", "layernorm", 1e-5)

    def test_pre_norm_rmsnorm(self):
        self.check("pre_norm", "rmsnorm", 1e-6)

    def test_post_norm_layernorm(self):
        self.check("post_norm", "layernorm", 1e-5)

    def test_post_norm_rmsnorm(self):
        self.check("post_norm", "rmsnorm", 1e-6)


if __name__ == "__main__":
    main()
