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
from siamesenorm import official
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


class IntegerArguments(unittest.TestCase):
    """Integer arguments are integers: a float, a str or a bool raises TypeError before anything
    reaches C, instead of being truncated by int() (0.6.19: net.exit(1.9, h) ran sub-layer 1,
    Net("siamese", 2.9, 8) had 2 sub-layers, Norm(kind=1.9) was an RMSNorm). numpy integers are
    integers. A bool is refused too: True is not a sub-layer index."""

    def test_non_integers_refused(self):
        D = 8
        net = sn.Net("siamese", 4, D)
        e = np.ones((2, D), np.float32)
        net.split(e)
        h = net.enter(0)
        acts = net.acts.copy()
        with sn.Context() as ctx:
            calls = {
                "exit(1.9)": lambda: net.exit(1.9, h),
                "exit(1.0)": lambda: net.exit(1.0, h),
                "enter(True)": lambda: net.enter(True),
                "enter(np.float32)": lambda: net.enter(np.float32(1.5)),
                "exit_backward('0')": lambda: net.exit_backward("0"),
                "scale(0.5)": lambda: net.scale(0.5),
                "param_views(1.5, 0)": lambda: net.param_views(1.5, 0),
                "norm_at(0, 0.0)": lambda: net.norm_at(0, 0.0),
                "Net S=2.9": lambda: sn.Net("siamese", 2.9, D),
                "Net d='8'": lambda: sn.Net("siamese", 2, "8"),
                "Net d=8.0": lambda: sn.Net("siamese", 2, 8.0),
                "Net hc_rate=2.0": lambda: sn.Net("hyper_connections", 2, D, hc_rate=2.0),
                "Norm kind=1.9": lambda: sn.Norm(kind=1.9),
                "Norm kind=True": lambda: sn.Norm(kind=True),
                "Norm group=2.7": lambda: sn.Norm(group=2.7),
                "Net placement=2.0": lambda: sn.Net(2.0, 2, D),
                "query(8.0)": lambda: sn.Norm().query(8.0),
                "Context threads=2.5": lambda: sn.Context(threads=2.5),
                "set_threads(True)": lambda: ctx.set_threads(True),
                "set_scratch(8.0)": lambda: ctx.set_scratch(8.0),
                "set_parallel_for n=1.5": lambda: ctx.set_parallel_for(None, 1.5),
                "flags=1.7": lambda: sn.split_backward(e, e, flags=1.7),
                "flags=True": lambda: net.exit_backward(0, flags=True),
                "isa_name(1.0)": lambda: sn.isa_name(1.0),
                "status_string(1.0)": lambda: sn.status_string(1.0),
                "norm_names n_layers=1.5": lambda: official.norm_names("deit", 1.5),
            }
            for label, call in calls.items():
                with self.subTest(label):
                    with self.assertRaises(TypeError):
                        call()
        np.testing.assert_array_equal(net.acts, acts)

    def test_numpy_integers_accepted(self):
        D = 8
        net = sn.Net("siamese", np.int32(4), np.int64(D), norm=sn.Norm(kind=np.int8(0),
                                                                       group=np.uint8(0)))
        self.assertEqual((net.n_sublayers, net.d), (4, D))
        net.split(np.ones((2, D), np.float32))
        self.assertEqual(net.enter(np.int64(1)).shape, (2, D))
        self.assertEqual(net.scale(np.uint16(3)), net.scale(3))
        e = np.ones((2, D), np.float32)
        sn.split_backward(e, e, flags=np.uint32(0))
        self.assertEqual(sn.Norm().query(np.int64(D)), sn.Norm().query(D))


class NetState(unittest.TestCase):
    def test_failed_split_keeps_the_pending_pass(self):
        """A split that fails (here NonFiniteError in checked mode, on a batch of another R)
        changes nothing: R, acts and work of the pass before it stay, and its backward runs
        (0.6.19 set R and reallocated acts/work before the C call)."""
        R, D = 4, 8
        rng = np.random.default_rng(5)
        e = rng.standard_normal((R, D)).astype(np.float32)
        with sn.Context() as ctx:
            ctx.set_check_finite(True)
            ref = sn.Net("siamese", 2, D, ctx=ctx)
            net = sn.Net("siamese", 2, D, ctx=ctx)
            for n in (ref, net):
                n.split(e)
                for i in range(2):
                    n.exit(i, np.tanh(n.enter(i)))
                n.merge()
            acts, work = net.acts.copy(), net.work.copy()
            for rows in (6, R):
                bad = rng.standard_normal((rows, D)).astype(np.float32)
                bad[rows - 1, 0] = np.inf
                with self.assertRaises(sn.NonFiniteError):
                    net.split(bad)
                self.assertEqual(net.R, R)
                np.testing.assert_array_equal(net.acts, acts)
                np.testing.assert_array_equal(net.work, work)
            with self.assertRaises(sn.ShapeError):
                net.split(np.zeros((3, D + 1), np.float32))
            self.assertEqual(net.R, R)
            dout = rng.standard_normal((R, D)).astype(np.float32)
            for n in (ref, net):
                n.zero_grad()
                n.merge_backward(dout)
                for i in reversed(range(2)):
                    n.enter_backward(i, n.exit_backward(i))
            np.testing.assert_array_equal(net.split_backward(), ref.split_backward())
            np.testing.assert_array_equal(net.grads, ref.grads)

    def test_huge_width_is_nomem_before_c(self):
        """Net(d=2**40): the library accepts the description; the binding cannot allocate its
        params and raises NoMemError (a MemoryError of the package) before any pass call."""
        with self.assertRaises(sn.NoMemError) as cm:
            sn.Net("siamese", 4, 2**40)
        self.assertIsInstance(cm.exception, MemoryError)
        with self.assertRaises(sn.ShapeError):  # beyond the library's own limit
            sn.Net("siamese", 4, 2**62)


def _struct_bytes(net):
    s = net.struct
    s.scales = None  # the pointer differs; the values are compared through net.scale
    return bytes(s)


class NetCopies(unittest.TestCase):
    """Net pickles and deep-copies (0.6.19: "ctypes objects containing pointers cannot be
    pickled"): the copy has the same description, params, grads and pending pass; both finish
    the pass with bitwise identical results."""

    CONFIGS = [
        dict(placement="siamese_paper", n_sublayers=4, d=8, scales=[1.0, 2.0, 0.7, 3.0]),
        dict(placement="hyper_connections", n_sublayers=4, d=8, hc_rate=3, hc_dynamic=True),
        dict(placement="mix_ln", n_sublayers=4, d=8, mix_fraction=0.5, kind="rmsnorm"),
        dict(placement="siamese", n_sublayers=2, d=8, input_norm=sn.Norm("identity"),
             act_dtype="bf16"),
        dict(placement="deepnorm", n_sublayers=2, d=8, scales="none",
             norm=sn.Norm("layernorm", affine="scale", eps=1e-6)),
    ]

    def forward(self, net, e, W):
        bf16 = net.dtype == np.uint16
        net.split(sn.to_bf16(e) if bf16 else e)
        for i in range(net.n_sublayers):
            h = net.enter(i)
            h = sn.from_bf16(h) if bf16 else h
            z = np.tanh(h @ W[i]).astype(np.float32)
            net.exit(i, sn.to_bf16(z) if bf16 else z)

    def backward(self, net, dout, W):
        bf16 = net.dtype == np.uint16
        out = net.merge()
        net.zero_grad()
        net.merge_backward(sn.to_bf16(dout) if bf16 else dout)
        for i in reversed(range(net.n_sublayers)):
            dz = net.exit_backward(i)
            dz = sn.from_bf16(dz) if bf16 else dz
            net.enter_backward(i, sn.to_bf16(dz) if bf16 else dz)  # a stand-in block backward
        return [out, net.split_backward(), net.grads.copy()]

    def test_copies_continue_the_pass(self):
        import copy
        import pickle
        rng = np.random.default_rng(9)
        R = 5
        for cfg in self.CONFIGS:
            with self.subTest(cfg["placement"]), sn.Context() as ctx:
                net = sn.Net(**cfg, ctx=ctx)
                D = net.d
                W = [rng.standard_normal((D, D)).astype(np.float32) / 3
                     for _ in range(net.n_sublayers)]
                e = rng.standard_normal((R, D)).astype(np.float32)
                dout = rng.standard_normal((R, D)).astype(np.float32)
                net.params[:] = rng.standard_normal(net.n_params).astype(np.float32)
                net.grads[:] = 1.5
                fresh = [copy.deepcopy(net), pickle.loads(pickle.dumps(net))]
                for c in fresh:
                    self.assertEqual(c.R, None)
                    np.testing.assert_array_equal(c.grads, net.grads)
                self.forward(net, e, W)  # a pass pending: copied too
                copies = [copy.deepcopy(net), pickle.loads(pickle.dumps(net))]
                self.assertIs(copies[0].ctx, ctx)  # a deep copy shares the context
                self.assertIsNone(copies[1].ctx)   # an unpickled Net has none
                want = self.backward(net, dout, W)
                for c in copies + fresh:
                    self.assertEqual(_struct_bytes(c), _struct_bytes(net))
                    self.assertEqual([c.scale(i) for i in range(c.n_sublayers)],
                                     [net.scale(i) for i in range(net.n_sublayers)])
                    self.assertIsNot(c.params, net.params)
                for c in copies:
                    self.assertEqual(c.R, R)
                    got = self.backward(c, dout, W)  # the pass started before the copy
                    for a, b in zip(got, want):
                        np.testing.assert_array_equal(a, b)
                for c in fresh:
                    self.forward(c, e, W)
                    for a, b in zip(self.backward(c, dout, W), want):
                        np.testing.assert_array_equal(a, b)

    def test_bad_state_refused(self):
        net = sn.Net("siamese", 2, 8)
        state = dict(net._state(), params=np.zeros(3, np.float32))
        with self.assertRaises(sn.ShapeError):
            sn.net._rebuild(net._config(), state)


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
