"""Execution contexts: kernel paths (sn_isa_*, sn_ctx_set_isa) and threads (built-in pool and
a Python parallel-for hook). The header promises bitwise-identical results for any thread count
within a path, and agreement between paths within about 1e-5 of the largest output."""

import unittest

import numpy as np

import siamesenorm as sn
from strict_main import main

R, D = 512, 96  # 49 K elements: above the library's single-thread cut-off (about 16 K)


def run_all(ctx):
    """A training pass of a small SiameseNorm net plus a grouped norm; returns every output."""
    rng = np.random.default_rng(7)
    e = rng.standard_normal((R, D), np.float32)
    W = [rng.standard_normal((D, D), np.float32) / 10 for _ in range(4)]
    net = sn.Net("siamese", 4, D, ctx=ctx)
    net.params[:] = rng.uniform(0.5, 1.5, net.n_params).astype(np.float32)
    net.split(e)
    hs = []
    for i in range(4):
        h = net.enter(i)
        hs.append(h)
        net.exit(i, np.tanh(h @ W[i]))
    out = net.merge()
    net.merge_backward(rng.standard_normal((R, D), np.float32))
    for i in reversed(range(4)):
        dz = net.exit_backward(i)
        net.enter_backward(i, np.ascontiguousarray((dz * (1 - np.tanh(hs[i] @ W[i]) ** 2))
                                                  @ W[i].T))
    de = net.split_backward()
    g = sn.Norm("rmsnorm", group=16, eps=1e-6)
    stats = g.empty_stats(R, D)
    gout = g.forward(e, g.init_params(D), stats=stats, ctx=ctx)
    return [out, de, net.grads.copy(), gout, stats]


class Contexts(unittest.TestCase):
    def test_isa_queries(self):
        self.assertTrue(sn.isa_available("auto"))
        self.assertTrue(sn.isa_available("scalar"))
        self.assertEqual(sn.isa_name(sn.SN_ISA_SCALAR), "scalar")
        self.assertEqual(sn.isa_name(99), "unknown")
        self.assertIn(sn.default_isa(), ("scalar", "avx2", "avx512"))
        with sn.Context() as ctx:
            with self.assertRaises(sn.ConfigError):
                ctx.set_isa(99)

    def test_paths_agree_and_threads_are_bitwise(self):
        ref = run_all(sn.Context(isa="scalar"))
        for isa in ("scalar", "avx2", "avx512", "auto"):
            if not sn.isa_available(isa):
                with sn.Context() as ctx, self.assertRaises(sn.UnsupportedError):
                    ctx.set_isa(isa)
                continue
            with self.subTest(isa=isa):
                with sn.Context(isa=isa) as ctx:
                    one = run_all(ctx)
                    if isa != "auto":
                        self.assertEqual(ctx.isa, isa)
                    for a, b in zip(one, ref):
                        self.assertLessEqual(np.max(np.abs(a - b)) / np.max(np.abs(b)), 1e-5)
                    ctx.set_threads(2)
                    self.assertEqual(ctx.threads, 2)
                    for a, b in zip(run_all(ctx), one):
                        np.testing.assert_array_equal(a, b)
                    calls = []

                    def serial(n_tasks, run):
                        calls.append(n_tasks)
                        for i in reversed(range(n_tasks)):  # any order is allowed
                            run(i)
                    ctx.set_parallel_for(serial, 4)
                    self.assertEqual(ctx.threads, 4)
                    for a, b in zip(run_all(ctx), one):
                        np.testing.assert_array_equal(a, b)
                    self.assertTrue(calls, "the hook was never called")
                    ctx.set_parallel_for(None)
                    self.assertEqual(ctx.threads, 1)

    def test_bad_thread_counts(self):
        with sn.Context() as ctx:
            with self.assertRaises(sn.ConfigError):
                ctx.set_threads(-1)
            with self.assertRaises(sn.ConfigError):
                ctx.set_parallel_for(lambda n, run: None, 0)



class CheckedMode(unittest.TestCase):
    """sn_ctx_set_check_finite / sn_ctx_nonfinite_row / sn_find_nonfinite through the binding."""

    def test_checked_call_raises_and_writes_nothing(self):
        norm = sn.Norm("layernorm", eps=1e-5)
        x = np.ones((6, 8), np.float32)
        x[:, ::2] = 2.0
        x[4, 3] = np.nan
        params = norm.init_params(8)
        out = np.full((6, 8), 7.0, np.float32)
        with sn.Context() as ctx:
            norm.forward(x, params, out=out, ctx=ctx)  # default: propagates to row 4 only
            self.assertTrue(np.isnan(out[4]).all() and np.isfinite(out[:4]).all())
            out[:] = 7.0
            ctx.set_check_finite(True)
            with self.assertRaises(sn.NonFiniteError) as cm:
                norm.forward(x, params, out=out, ctx=ctx)
            self.assertEqual(cm.exception.status, 15)
            self.assertIn("NaN", str(cm.exception))
            self.assertEqual(ctx.nonfinite_row, 4)
            self.assertTrue((out == 7.0).all())
            x[4, 3] = 1.0
            norm.forward(x, params, out=out, ctx=ctx)
            self.assertEqual(ctx.nonfinite_row, sn.SN_NONFINITE_NONE)

    def test_find_nonfinite_and_scratch(self):
        x = np.zeros((5, 3), np.float32)
        self.assertEqual(sn.find_nonfinite(x), -1)
        x[2, 1] = np.inf
        self.assertEqual(sn.find_nonfinite(x), 2)
        with sn.Context(threads=2) as ctx:
            self.assertGreater(ctx.set_scratch(96), 0)

    def test_scratch_arguments(self):
        """set_scratch validates D: D < 1 is a ShapeError (0.6.19: set_scratch(-1) returned 0
        silently), a size beyond size_t (sn_scratch_bytes' SIZE_MAX) too (0.6.19: numpy's
        ValueError); the context keeps its previous scratch, and calls still run."""
        norm = sn.Norm("layernorm")
        x = np.random.default_rng(4).standard_normal((300, 64)).astype(np.float32)
        p = norm.init_params(64)
        st = norm.empty_stats(300, 64)
        norm.forward(x, p, stats=st)
        want = norm.backward(x, x, p, st)
        with sn.Context(threads=2) as ctx:
            n = ctx.set_scratch(64)
            kept = ctx._scratch
            for D, exc in ((0, sn.ShapeError), (-1, sn.ShapeError), (2**62, sn.ShapeError),
                           (2**63, OverflowError), (64.0, TypeError)):
                with self.subTest(D=D), self.assertRaises(exc):
                    ctx.set_scratch(D)
            self.assertIs(ctx._scratch, kept)
            self.assertGreaterEqual(kept.size, n)
            got = norm.backward(x, x, p, st, ctx=ctx)
        np.testing.assert_array_equal(got, want)

if __name__ == "__main__":
    main()
