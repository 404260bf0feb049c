"""Binding guards (defects 3-7 of the audit table in docs/reliability.md): nothing out of range
reaches C.
  3  a parallel-for hook calling run(-1) or run(n) raises IndexError in the hook; the call
     completes with the right result;
  4  one Context used from several threads at once: calls are serialised (results identical to
     a serial run), and a re-entrant call on the same thread raises;
  5  every integer is range-checked before ctypes (no wrap to 32 bits);
  6  Net.struct is a copy: changing it changes nothing;
  7  Net(..., eps=0.0, norm=<valid Norm>) is a valid override;
Hyper-Connections' settings (hc_rate, hc_dynamic) are checked in Python: nothing reaches C."""

import ctypes
import threading
import time
import unittest

import numpy as np

import siamesenorm as sn
from strict_main import main


class HookIndex(unittest.TestCase):
    def test_out_of_range_run_raises_and_call_completes(self):
        R, D = 256, 96  # above the single-thread cut-off: the hook is used
        rng = np.random.default_rng(1)
        x = rng.standard_normal((R, D), np.float32)
        norm = sn.Norm("layernorm")
        p = norm.init_params(D)
        want = norm.forward(x, p)
        seen = []

        def hook(n, run):
            for bad in (-1, n, -n, 2**63):
                try:
                    run(bad)
                except IndexError:
                    seen.append(bad)
            for i in range(n):
                run(i)

        with sn.Context() as ctx:
            ctx.set_parallel_for(hook, 4)
            got = norm.forward(x, p, ctx=ctx)
        self.assertEqual(len(seen) % 4, 0)
        self.assertGreater(len(seen), 0)
        np.testing.assert_array_equal(got, want)


class SharedContext(unittest.TestCase):
    def test_threads_serialised(self):
        R, D = 256, 256  # above the single-thread cut-off: the pool runs
        rng = np.random.default_rng(2)
        xs = [rng.standard_normal((R, D), np.float32) for _ in range(8)]
        norm = sn.Norm("layernorm")
        p = norm.init_params(D)
        want = [norm.forward(x, p) for x in xs]
        bad = []
        with sn.Context(threads=2) as ctx:
            def worker(k):
                for _ in range(40):
                    out = norm.forward(xs[k], p, ctx=ctx)
                    if not np.array_equal(out, want[k]):
                        bad.append(k)
            ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(60)
            self.assertFalse(any(t.is_alive() for t in ts), "a thread hung")
        self.assertEqual(bad, [])

    def test_close_waits_for_calls_in_flight(self):
        """N4 (issue 26): close() from one thread while other threads' calls on the same Context
        are running or waiting for it. The call in flight finishes with the right output; each
        waiting call either ran before the close (right output) or raises ContextClosedError;
        nothing crashes or returns wrong numbers (before: a use-after-free in sn_ctx_*, and
        wrong outputs with no exception)."""
        R, D = 256, 256
        rng = np.random.default_rng(3)
        xs = [rng.standard_normal((R, D), np.float32) for _ in range(8)]
        norm = sn.Norm("layernorm")
        p = norm.init_params(D)
        want = [norm.forward(x, p) for x in xs]
        for rnd in range(6):
            ctx = sn.Context(threads=2)
            in_call = threading.Event()
            if rnd % 2 == 0:  # a slow hook: the first call is surely in flight at close()
                def hook(n, run):
                    in_call.set()
                    time.sleep(0.05)
                    for i in range(n):
                        run(i)
                ctx.set_parallel_for(hook, 2)
            res = {"ok": 0, "closed": 0, "bad": [], "other": []}

            def worker(k):
                for _ in range(20):
                    try:
                        out = norm.forward(xs[k], p, ctx=ctx)
                    except sn.ContextClosedError:
                        res["closed"] += 1
                        continue
                    except BaseException as e:  # noqa: BLE001 (reported below)
                        res["other"].append(repr(e))
                        continue
                    in_call.set()
                    if np.array_equal(out, want[k]):
                        res["ok"] += 1
                    else:
                        res["bad"].append(k)
            ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
            for t in ts:
                t.start()
            self.assertTrue(in_call.wait(30))
            ctx.close()
            self.assertIsNone(ctx.handle)
            for t in ts:
                t.join(60)
            self.assertFalse(any(t.is_alive() for t in ts), "a thread hung")
            self.assertEqual(res["bad"], [], "wrong outputs")
            self.assertEqual(res["other"], [])
            self.assertGreater(res["ok"], 0)
            self.assertEqual(res["ok"] + res["closed"], 8 * 20)
            with self.assertRaises(sn.ContextClosedError):
                norm.forward(xs[0], p, ctx=ctx)
            with self.assertRaises(ValueError):  # ContextClosedError is a ValueError
                ctx.threads
            ctx.close()  # idempotent

    def test_reentrant_call_raises(self):
        """A call on a context, or its close(), from inside that context's own call (its hook,
        on the calling thread) raises RuntimeError; the outer call completes bitwise right
        and the context stays open."""
        R, D = 256, 96
        x = np.ones((R, D), np.float32)
        norm = sn.Norm("rmsnorm")
        p = norm.init_params(D)
        errs = []
        with sn.Context() as ctx:
            def hook(n, run):
                for inner in (lambda: norm.forward(x, p, ctx=ctx), ctx.close):
                    try:
                        inner()
                    except RuntimeError as e:
                        errs.append(e)
                for i in range(n):
                    run(i)
            ctx.set_parallel_for(hook, 2)
            out = norm.forward(x, p, ctx=ctx)
            self.assertIsNotNone(ctx.handle)
        self.assertTrue(any("already in a call" in str(e) for e in errs))
        self.assertTrue(any("close()" in str(e) for e in errs))
        np.testing.assert_array_equal(out, norm.forward(x, p))


class IntRanges(unittest.TestCase):
    def test_no_wrap(self):
        net = sn.Net("siamese", 4, 8)
        net.split(np.ones((2, 8), np.float32))
        with self.assertRaises(OverflowError):
            net.enter(2**32)
        with self.assertRaises(OverflowError):
            net.exit_backward(0, flags=2**32 + 1)
        with self.assertRaises(OverflowError):
            sn.Norm(kind=2**32)
        n = sn.Norm("layernorm")
        n.group = 2**40
        with self.assertRaises(OverflowError):
            n.query(8)
        with sn.Context() as ctx, self.assertRaises(OverflowError):
            ctx.set_threads(2**32 + 2)
        with self.assertRaises(OverflowError):
            sn.Net("siamese", 2**32 + 4, 8)
        with self.assertRaises(OverflowError):
            sn.Net("siamese", 4, 2**64)


class NetStruct(unittest.TestCase):
    def test_struct_is_a_copy(self):
        net = sn.Net("siamese", 4, 8)
        s = net.struct
        s.d = 1 << 20
        s.placement = 0
        self.assertEqual(net.d, 8)
        self.assertEqual(net.struct.placement, sn._capi.SN_PLACEMENT_SIAMESE)
        e = np.ones((2, 8), np.float32)
        net.split(e)
        self.assertEqual(net.enter(0).shape, (2, 8))

    def test_eps_zero_with_norm_override(self):
        net = sn.Net("siamese", 4, 8, eps=0.0, norm=sn.Norm("layernorm", eps=1e-6))
        self.assertAlmostEqual(net.norm.eps, 1e-6)
        with self.assertRaises(sn.errors.EpsError):
            sn.Net("siamese", 4, 8, eps=0.0)
        with self.assertRaises(sn.errors.EpsError):
            sn.Net("siamese", 4, 8, norm=sn.Norm("layernorm", eps=0.0))


class HyperConnSettings(unittest.TestCase):
    """hc_rate out of 1..SN_HC_MAX_RATE, of the wrong type, hc_dynamic not a bool / 0 / 1, or
    either on another placement: raised before any C call (sn_net_init is never reached)."""

    def test_raised_before_c(self):
        calls = []
        real = sn.net.lib.sn_net_init

        def spy(*args):
            calls.append(args)
            return real(*args)

        sn.net.lib.sn_net_init = spy
        try:
            for bad, exc in ((0, sn.StreamsError), (sn.SN_HC_MAX_RATE + 1, sn.StreamsError),
                             (-1, sn.StreamsError), (2**40, sn.StreamsError),
                             (4.0, TypeError), (True, TypeError), ("4", TypeError),
                             (np.int64(9), sn.StreamsError)):
                with self.subTest(hc_rate=bad), self.assertRaises(exc):
                    sn.Net("hyper_connections", 4, 8, hc_rate=bad)
            for bad in (2, -1, 0.5, "yes"):
                with self.subTest(hc_dynamic=bad), self.assertRaises(TypeError):
                    sn.Net("hyper_connections", 4, 8, hc_dynamic=bad)
            for kw in ({"hc_rate": 2}, {"hc_dynamic": False}):
                with self.subTest(**kw), self.assertRaises(sn.ConfigError):
                    sn.Net("pre_norm", 4, 8, **kw)
            self.assertEqual(calls, [])
            self.assertEqual(sn.StreamsError.status, sn._capi.SN_ERR_STREAMS)
            net = sn.Net("hyper_connections", 4, 8, hc_rate=sn.SN_HC_MAX_RATE, hc_dynamic=0)
            self.assertEqual(len(calls), 1)
            self.assertEqual((net.hc_rate, net.hc_dynamic), (sn.SN_HC_MAX_RATE, False))
        finally:
            sn.net.lib.sn_net_init = real

    def test_defaults_and_conn_at(self):
        net = sn.Net("hyper_connections", 4, 8)
        self.assertEqual((net.hc_rate, net.hc_dynamic), (4, True))  # the paper's main setting
        n, D = 4, 8
        self.assertEqual(net.conn_at(0)[1], n * (n + 2) + (n + 2) * D + 2)
        static = sn.Net("hyper_connections", 4, 8, hc_rate=2, hc_dynamic=False)
        self.assertEqual(static.conn_at(3)[1], 2 * 4)
        with self.assertRaises(sn.IndexOutOfRange):
            static.conn_at(4)
        with self.assertRaises(sn.IndexOutOfRange):  # no connection weights elsewhere
            sn.Net("siamese", 4, 8).conn_at(0)


if __name__ == "__main__":
    main()
