"""Every primitive against a float64 numpy reference of the header's formulas, including
groups, affine modes, the stats layout, strided views, in-place aliasing and the accumulate
flags. Metric: max |lib - ref| / max |ref| <= 2e-6 (single fp32 operations)."""

import unittest

import numpy as np

import siamesenorm as sn
from strict_main import main

TOL = 2e-6


def rel(a, ref):
    return float(np.max(np.abs(np.asarray(a, np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def ref_norm(kind, affine, G, eps, x, params):
    """(out, xhat, rstd, mean) of one norm in float64; x (R, D)."""
    x = x.astype(np.float64)
    R, D = x.shape
    W = G or D
    v = x.reshape(R, D // W, W)
    if kind == "identity":
        return x.copy(), None, None, None
    gamma = params[:W].astype(np.float64) if affine != "none" else np.ones(W)
    beta = params[W:2 * W].astype(np.float64) if affine == "scale_shift" else np.zeros(W)
    if kind == "scale":  # N(v) = gamma * v + beta, no statistics
        return (gamma * v + beta).reshape(R, D), v, np.ones(v.shape[:2]), None
    if kind == "layernorm":
        mu = v.mean(-1, keepdims=True)
        var = ((v - mu) ** 2).mean(-1, keepdims=True)
    else:
        mu = np.zeros_like(v[..., :1])
        var = (v ** 2).mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (v - mu) * rstd
    return ((gamma * xhat + beta).reshape(R, D), xhat, rstd[..., 0], mu[..., 0])


def ref_norm_backward(kind, affine, G, eps, x, params, dout):
    """(dx, dparams) in float64."""
    R, D = x.shape
    W = G or D
    if kind == "identity":
        return dout.astype(np.float64), np.zeros(0)
    _, xhat, rstd, _ = ref_norm(kind, affine, G, eps, x, params)
    d = dout.astype(np.float64).reshape(R, D // W, W)
    gamma = params[:W].astype(np.float64) if affine != "none" else np.ones(W)
    g = gamma * d
    inner = g - xhat * (g * xhat).mean(-1, keepdims=True) if kind != "scale" else g
    if kind == "layernorm":
        inner -= g.mean(-1, keepdims=True)
    dx = (rstd[..., None] * inner).reshape(R, D)
    dgamma = (d * xhat).sum((0, 1))
    dbeta = d.sum((0, 1))
    dp = {"scale_shift": np.concatenate([dgamma, dbeta]), "scale": dgamma,
          "none": np.zeros(0)}[affine]
    return dx, dp


def rand(rng, *shape, scale=1.0, offset=0.0):
    return (offset + scale * rng.standard_normal(shape)).astype(np.float32)


CASES = [(k, a, G) for k in ("layernorm", "rmsnorm", "scale") for a in ("scale_shift", "scale", "none")
         for G in (0, 8)] + [("identity", "none", 0)]


class NormPrimitive(unittest.TestCase):
    def test_forward_backward_all_modes(self):
        rng = np.random.default_rng(1)
        R, D, eps = 7, 32, 1e-5
        for kind, affine, G in CASES:
            with self.subTest(kind=kind, affine=affine, group=G):
                n = sn.Norm(kind, affine, G, eps)
                n_params, spr = n.query(D)
                W = G or D
                exp_p = {"scale_shift": 2 * W, "scale": W, "none": 0}[affine]
                exp_s = {"layernorm": 2, "rmsnorm": 1}.get(kind, 0) * (D // W)
                self.assertEqual((n_params, spr), (0 if kind == "identity" else exp_p, exp_s))
                p0 = n.init_params(D)
                if n_params:
                    np.testing.assert_array_equal(p0[:W], 1)
                    np.testing.assert_array_equal(p0[W:], 0)
                params = rand(rng, n_params, scale=0.5, offset=1.0) if n_params else None
                x = rand(rng, R, D, scale=2.0, offset=3.0)
                stats = n.empty_stats(R, D)
                out = n.forward(x, params, stats=stats)
                ref, xhat, rstd, mu = ref_norm(kind, affine, G, eps, x, params)
                self.assertLessEqual(rel(out, ref), TOL)
                if kind == "layernorm":  # stats layout: the group means, then their rstd
                    self.assertLessEqual(rel(stats[:, :D // W], mu), TOL)
                    self.assertLessEqual(rel(stats[:, D // W:], rstd), TOL)
                elif kind == "rmsnorm":
                    self.assertLessEqual(rel(stats, rstd), TOL)
                inf = n.forward(x, params)  # inference: same output
                np.testing.assert_array_equal(inf, out)
                dout = rand(rng, R, D)
                dparams = np.full(n_params, 0.25, np.float32) if n_params else None
                dx = n.backward(dout, x, params, stats if spr else None, dparams=dparams)
                rdx, rdp = ref_norm_backward(kind, affine, G, eps, x, params, dout)
                self.assertLessEqual(rel(dx, rdx), TOL)
                if n_params:  # accumulated onto 0.25
                    self.assertLessEqual(rel(dparams - 0.25, rdp), 1e-5)
                dx2 = np.ones((R, D), np.float32)
                n.backward(dout, x, params, stats if spr else None, dx=dx2, accumulate=True)
                self.assertLessEqual(rel(dx2 - 1.0, rdx), 1e-5)

    def test_large_mean_is_accurate(self):
        rng = np.random.default_rng(2)
        x = rand(rng, 4, 64, scale=1.0, offset=1e4)
        n = sn.Norm("layernorm", eps=1e-5)
        out = n.forward(x, n.init_params(64))
        ref, *_ = ref_norm("layernorm", "scale_shift", 0, 1e-5, x, n.init_params(64))
        self.assertLessEqual(rel(out, ref), 1e-3)  # fp32 input quantisation at 1e4 is ~1e-3 std

    def test_strided_views_and_in_place(self):
        rng = np.random.default_rng(3)
        R, D = 5, 24
        big = rand(rng, R, D + 9)
        view = big[:, 3:3 + D]  # row stride D + 9, unit column stride
        n = sn.Norm("rmsnorm", eps=1e-6)
        p = rand(rng, D, offset=1.0)
        a = n.forward(view, p)
        b = n.forward(np.ascontiguousarray(view), p)
        np.testing.assert_array_equal(a, b)
        outbig = np.zeros((R, D + 5), np.float32)
        n.forward(view, p, out=outbig[:, 5:])
        np.testing.assert_array_equal(outbig[:, 5:], a)
        np.testing.assert_array_equal(outbig[:, :5], 0)
        x = np.ascontiguousarray(view)
        n.forward(x, p, out=x)  # out may alias x
        np.testing.assert_array_equal(x, a)

    def test_deterministic(self):
        rng = np.random.default_rng(4)
        x = rand(rng, 9, 40)
        n = sn.Norm("layernorm")
        p = rand(rng, 80)
        self.assertTrue(all(np.array_equal(n.forward(x, p), n.forward(x, p)) for _ in range(3)))


class StreamPrimitives(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(5)
        self.R, self.D = 6, 32

    def fuse_case(self, fuse):
        R, D, rng = self.R, self.D, self.rng
        n_params, spr = fuse.query(D)
        params = rand(rng, n_params, scale=0.3, offset=1.0)
        x, y = rand(rng, R, D, offset=1.0), rand(rng, R, D, scale=3.0)
        stats = fuse.empty_stats(R, D)
        u, h = fuse.forward(x, y, params, stats=stats)
        sizes = [nm.query(D)[0] for nm in (fuse.x, fuse.y, fuse.out)]
        px, py, po = np.split(params, np.cumsum(sizes)[:2])
        mode = lambda nm: ["scale_shift", "scale", "none"][nm.affine]  # noqa: E731
        kind = lambda nm: ["layernorm", "rmsnorm", "identity", "scale"][nm.kind]  # noqa: E731
        args = lambda nm: (kind(nm), mode(nm), 0, float(np.float32(nm.eps)))  # noqa: E731
        ru, *_ = ref_norm(*args(fuse.x), x, px)
        ry, *_ = ref_norm(*args(fuse.y), y, py)
        s = ru + ry
        rh, *_ = ref_norm(*args(fuse.out), s, po)
        self.assertLessEqual(rel(u, ru), TOL)
        self.assertLessEqual(rel(h, rh), TOL)
        _, h2 = fuse.forward(x, y, params, want_u=False)
        np.testing.assert_array_equal(h2, h)
        np.testing.assert_array_equal(fuse.merge_forward(x, y, params), h)
        # backward
        dh, du = rand(rng, R, D), rand(rng, R, D)
        ds, dpo = ref_norm_backward(*args(fuse.out), s.astype(np.float32), po, dh)
        rdx, dpx = ref_norm_backward(*args(fuse.x), x, px, du + ds)
        rdy, dpy = ref_norm_backward(*args(fuse.y), y, py, ds)
        dparams = np.zeros(n_params, np.float32)
        dx, dy = fuse.backward(dh, x, y, params, stats, du=du, dparams=dparams)
        # s is recomputed in fp32 by the library: compare with a looser bound on the chain
        self.assertLessEqual(rel(dx, rdx), 1e-5)
        self.assertLessEqual(rel(dy, rdy), 1e-5)
        self.assertLessEqual(rel(dparams, np.concatenate([dpx, dpy, dpo])), 1e-5)
        # the documented sub-layer call: dx aliases du, dy accumulates onto dy_{i+1}
        dxy = du.copy()
        dyacc = np.full((R, D), 0.5, np.float32)
        fuse.backward(dh, x, y, params, stats, du=dxy, dx=dxy, dy=dyacc, accumulate_y=True)
        self.assertLessEqual(rel(dxy, rdx), 1e-5)
        self.assertLessEqual(rel(dyacc - 0.5, rdy), 1e-5)
        # merge backward = fuse backward with du = NULL
        mdx, mdy = fuse.merge_backward(dh, x, y, params, stats)
        fdx, fdy = fuse.backward(dh, x, y, params, stats)
        np.testing.assert_array_equal(mdx, fdx)
        np.testing.assert_array_equal(mdy, fdy)

    def test_fuse_layernorm(self):
        f = sn.Fuse.uniform("layernorm", eps=1e-5)
        self.assertEqual(f.x, sn.Norm("layernorm", "scale_shift", 0, 1e-5))
        self.fuse_case(f)

    def test_fuse_rmsnorm(self):
        self.fuse_case(sn.Fuse.uniform("rmsnorm", eps=1e-6))

    def test_fuse_mixed(self):
        self.fuse_case(sn.Fuse(sn.Norm("layernorm"), sn.Norm("rmsnorm", "scale"),
                               sn.Norm("identity")))
        self.fuse_case(sn.Fuse(sn.Norm("identity"), sn.Norm("layernorm"),
                               sn.Norm("layernorm", "none")))
        # hybrid_pre's attention input: h = c1 * x + N_pre(y), c1 a learned scale
        self.fuse_case(sn.Fuse(sn.Norm("scale", "scale"), sn.Norm("rmsnorm"),
                               sn.Norm("identity")))

    def test_apply_split(self):
        R, D, rng = self.R, self.D, self.rng
        z, u, y = rand(rng, R, D), rand(rng, R, D), rand(rng, R, D)
        c = 2.449489742783178
        xo, yo = sn.apply_forward(z, u, y, c)
        self.assertLessEqual(rel(xo, u.astype(np.float64) + z / np.float32(c)), 1e-7)
        np.testing.assert_array_equal(yo, y + z)
        u2, y2 = u.copy(), y.copy()
        sn.apply_forward(z, u2, y2, c, xo=u2, yo=y2)  # in place
        np.testing.assert_array_equal(u2, xo)
        np.testing.assert_array_equal(y2, yo)
        dxo, dyo = rand(rng, R, D), rand(rng, R, D)
        dz = sn.apply_backward(dxo, dyo, c)
        self.assertLessEqual(rel(dz, dxo.astype(np.float64) / np.float32(c) + dyo), 1e-7)
        acc = np.ones((R, D), np.float32)
        sn.apply_backward(dxo, dyo, c, dz=acc, accumulate=True)
        self.assertLessEqual(rel(acc - 1, dz), 1e-6)
        e = rand(rng, R, D)
        x, y = sn.split_forward(e)
        np.testing.assert_array_equal(x, e)
        np.testing.assert_array_equal(y, e)
        de = sn.split_backward(dxo, dyo)
        np.testing.assert_array_equal(de, dxo + dyo)
        sn.split_backward(dxo, dyo, de=de, accumulate=True)
        np.testing.assert_array_equal(de, (dxo + dyo) + (dxo + dyo))


if __name__ == "__main__":
    main()
