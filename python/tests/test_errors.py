"""Error paths: every rejected call raises a SiameseNormError subclass whose message starts
with the library's own text (sn_status_string) for the status, and leaves every output buffer
untouched (checked against a sentinel)."""

import unittest

import numpy as np

import siamesenorm as sn
from strict_main import main

R, D = 4, 16
SENTINEL = np.float32(-7.25)


def filled(shape=(R, D)):
    return np.full(shape, SENTINEL, np.float32)


class ErrorPaths(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((R, D)).astype(np.float32)
        self.y = rng.standard_normal((R, D)).astype(np.float32)
        self.norm = sn.Norm("layernorm")
        self.params = self.norm.init_params(D)

    def assertLibraryError(self, cm, cls, status):
        exc = cm.exception
        self.assertIsInstance(exc, cls)
        self.assertIsInstance(exc, sn.SiameseNormError)
        self.assertEqual(exc.status, status)
        self.assertEqual(exc.library_message, sn.status_string(status))
        self.assertTrue(str(exc).startswith(sn.status_string(status)), str(exc))

    def test_wrong_dtype(self):
        out = filled()
        with self.assertRaises(sn.DTypeError) as cm:
            self.norm.forward(self.x.astype(np.float64), self.params, out=out)
        self.assertIsInstance(cm.exception, TypeError)
        self.assertIn("float32", str(cm.exception))
        self.assertTrue(np.all(out == SENTINEL))
        with self.assertRaises(sn.DTypeError):
            self.norm.forward(self.x, self.params.astype(np.float16), out=out)
        with self.assertRaises(sn.DTypeError):
            self.norm.forward(self.x.tolist(), self.params)
        self.assertTrue(np.all(out == SENTINEL))

    def test_wrong_shape(self):
        out = filled((R, D + 1))
        with self.assertRaises(sn.ShapeError) as cm:
            self.norm.forward(self.x, self.params, out=out)
        self.assertLibraryError(cm, sn.ShapeError, 2)
        self.assertTrue(np.all(out == SENTINEL))
        with self.assertRaises(sn.ShapeError) as cm:
            self.norm.forward(self.x.reshape(-1), self.params)
        self.assertLibraryError(cm, sn.ShapeError, 2)
        with self.assertRaises(sn.ShapeError):  # params of the wrong size
            self.norm.forward(self.x, self.params[:-1], out=filled())
        with self.assertRaises(sn.ShapeError):  # stats too small
            self.norm.forward(self.x, self.params, stats=np.zeros(R, np.float32))
        # D = 0 reaches the library itself
        with self.assertRaises(sn.ShapeError) as cm:
            self.norm.query(0)
        self.assertLibraryError(cm, sn.ShapeError, 2)

    def test_non_contiguous(self):
        out = filled()
        wide = np.zeros((R, 2 * D), np.float32)
        # a row stride smaller than D (here negative, or 0): the library's own SN_ERR_STRIDE
        for bad in (self.x[::-1], np.broadcast_to(self.x[0], (R, D))):
            with self.assertRaises(sn.StrideError) as cm:
                self.norm.forward(bad, self.params, out=out)
            self.assertLibraryError(cm, sn.StrideError, 3)
            self.assertIn("row stride", str(cm.exception))
        # layouts the C API cannot express: status 3, but no "row stride smaller than D" text
        # (0.6.19 said it for every stride error); the message says what is wrong
        for bad in (wide[:, ::2], self.x.T.copy().T, self.x[:, ::-1]):
            with self.assertRaises(sn.StrideError) as cm:
                self.norm.forward(bad, self.params, out=out)
            exc = cm.exception
            self.assertEqual(exc.status, 3)
            self.assertIsNone(exc.library_message)
            self.assertNotIn(sn.status_string(3), str(exc))
            self.assertIn("unit column stride", str(exc))
        with self.assertRaises(sn.StrideError) as cm:  # a non-contiguous vector
            self.norm.forward(self.x, self.params, stats=np.zeros((R, 4), np.float32)[:, ::2])
        self.assertNotIn(sn.status_string(3), str(cm.exception))
        self.assertIn("C-contiguous", str(cm.exception))
        self.assertTrue(np.all(out == SENTINEL))
        with self.assertRaises(sn.StrideError):  # a non-contiguous output
            self.norm.forward(self.x, self.params, out=filled((R, 2 * D))[:, ::2])

    def test_misaligned_is_align_error(self):
        """A buffer not aligned to its element size: AlignError with the library's status 16,
        as the C library returns for it (0.6.19 raised StrideError, status 3)."""
        buf = bytearray(4 * R * D + 4)
        mis = np.ndarray((R, D), np.float32, buffer=buf, offset=1)
        mis[...] = self.x
        self.assertFalse(mis.flags.aligned)
        out = filled()
        with self.assertRaises(sn.AlignError) as cm:
            self.norm.forward(mis, self.params, out=out)
        self.assertLibraryError(cm, sn.AlignError, 16)
        self.assertTrue(np.all(out == SENTINEL))
        field = np.zeros(R, dtype=[("a", "f4", (D,)), ("b", "u1")])["a"]  # row stride 33 bytes
        with self.assertRaises(sn.AlignError):
            self.norm.forward(field, self.params, out=out)
        with self.assertRaises(sn.AlignError):  # a misaligned output
            self.norm.forward(self.x, self.params, out=mis)
        # the library's own answer for the same pointer
        st = sn._capi.lib.sn_norm_forward.raw(
            None, sn._capi.ctypes.byref(self.norm.to_struct()), R, D, mis.ctypes.data, D,
            self.params.ctypes.data, out.ctypes.data, D, None)
        self.assertEqual(st, sn.AlignError.status)

    def test_empty_batch_is_shape_error(self):
        """R = 0: ShapeError, as the library's SN_ERR_SHAPE for R <= 0 (0.6.19 raised
        StrideError "must have unit column stride")."""
        for call in (lambda e: self.norm.forward(e, self.params),
                     lambda e: sn.split_forward(e),
                     lambda e: sn.to_bf16(e),
                     lambda e: sn.Net("siamese", 2, D).split(e)):
            with self.assertRaises(sn.ShapeError) as cm:
                call(np.zeros((0, D), np.float32))
            self.assertLibraryError(cm, sn.ShapeError, 2)
            self.assertIn("(0, 16)", str(cm.exception))

    def test_every_status_has_an_exported_class(self):
        """Every status the library names (sn_status_string until "unknown status") has its
        class, exported in errors.__all__ and the package namespace (0.6.19 lacked AlignError)."""
        unknown = sn.status_string(10**6)
        k = 1
        while sn.status_string(k) != unknown:
            cls = type(sn.errors.error_for_status(k, sn.status_string(k)))
            self.assertIsNot(cls, sn.SiameseNormError, k)
            self.assertEqual(cls.status, k)
            self.assertIn(cls.__name__, sn.errors.__all__, k)
            self.assertIn(cls.__name__, sn.__all__, k)
            self.assertIs(getattr(sn, cls.__name__), cls)
            k += 1
        self.assertGreaterEqual(k - 1, 18)
        for name in sn.errors.__all__:
            self.assertTrue(hasattr(sn, name), name)

    def test_bf16_dtype_message(self):
        b = sn.to_bf16(self.x)
        with self.assertRaises(sn.DTypeError) as cm:
            sn.from_bf16(b.view(np.int16))
        self.assertIn("uint16", str(cm.exception))
        self.assertNotIn("float32", str(cm.exception))
        with self.assertRaises(sn.DTypeError) as cm:
            sn.to_bf16(b)
        self.assertIn("float32", str(cm.exception))

    def test_bad_eps_from_library(self):
        for eps in (0.0, -1e-5, float("nan"), float("inf")):
            n = sn.Norm("layernorm", eps=eps)
            out, stats = filled(), filled((R, 2))
            with self.assertRaises(sn.EpsError) as cm:
                n.forward(self.x, self.params, out=out, stats=stats)
            self.assertLibraryError(cm, sn.EpsError, 4)
            self.assertTrue(np.all(out == SENTINEL) and np.all(stats == SENTINEL))
        with self.assertRaises(sn.EpsError):  # sn_fuse_init may accept it; the query rejects
            sn.Fuse.uniform("rmsnorm", eps=0.0).query(D)
        with self.assertRaises(sn.EpsError):
            sn.Net("siamese", 2, D, eps=-1.0)

    def test_alias_from_library(self):
        f = sn.Fuse.uniform("layernorm")
        p = f.init_params(D)
        h = filled()
        with self.assertRaises(sn.AliasError) as cm:
            f.forward(self.x, self.y, p, u=h, h=h)
        self.assertLibraryError(cm, sn.AliasError, 6)
        self.assertTrue(np.all(h == SENTINEL))
        big = filled((R, D + 4))
        with self.assertRaises(sn.AliasError):  # partial overlap of views
            sn.split_forward(self.x, x=big[:, :D], y=big[:, 4:])
        self.assertTrue(np.all(big == SENTINEL))

    def test_bad_scale_flags_index_group(self):
        xo, yo = filled(), filled()
        for c in (0.0, -1.0, float("nan"), float("inf")):
            with self.assertRaises(sn.ScaleError) as cm:
                sn.apply_forward(self.x, self.y, self.y.copy(), c, xo=xo, yo=yo)
            self.assertLibraryError(cm, sn.ScaleError, 5)
        self.assertTrue(np.all(xo == SENTINEL) and np.all(yo == SENTINEL))
        dx = filled()
        stats = self.norm.empty_stats(R, D)
        self.norm.forward(self.x, self.params, stats=stats)
        with self.assertRaises(sn.FlagsError) as cm:
            self.norm.backward(self.y, self.x, self.params, stats, dx=dx, flags=8)
        self.assertLibraryError(cm, sn.FlagsError, 10)
        self.assertTrue(np.all(dx == SENTINEL))
        with self.assertRaises(sn.GroupError) as cm:
            sn.Norm("layernorm", group=5).query(D)
        self.assertLibraryError(cm, sn.GroupError, 9)
        with self.assertRaises(sn.NormError) as cm:
            sn.Norm(7).query(D)
        self.assertLibraryError(cm, sn.NormError, 8)
        net = sn.Net("siamese", 2, D)
        with self.assertRaises(sn.IndexOutOfRange) as cm:
            net.scale(2)
        self.assertLibraryError(cm, sn.IndexOutOfRange, 11)
        with self.assertRaises(sn.ScaleError):
            sn.Net("siamese", 2, D, scales=[1.0, 0.0])
        with self.assertRaises(sn.PlacementError):
            sn.Net(99, 2, D)
        with self.assertRaises(sn.ShapeError):
            sn.Net("siamese", 0, D)

    def test_net_errors_write_nothing(self):
        net = sn.Net("siamese", 2, D)
        net.split(self.x)
        h = filled()
        with self.assertRaises(sn.IndexOutOfRange):
            net.enter(5, h=h)
        self.assertTrue(np.all(h == SENTINEL))
        with self.assertRaises(sn.ShapeError):
            net.enter(0, h=filled((R + 1, D)))
        acts = net.acts.copy()
        with self.assertRaises(sn.DTypeError):
            net.exit(0, self.x.astype(np.float64))
        np.testing.assert_array_equal(net.acts, acts)

    def test_read_only_output(self):
        out = filled()
        out.setflags(write=False)
        with self.assertRaises(sn.ReadOnlyError):
            self.norm.forward(self.x, self.params, out=out)


if __name__ == "__main__":
    main()
