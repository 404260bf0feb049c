"""Loading, version and descriptions: library discovery order, the version check, struct
layouts, status strings, Context, and the Net description calls (scale, sizes, norm_at)."""

import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import siamesenorm as sn
from siamesenorm import _capi
from strict_main import main

# the library's soname: libsiamesenorm.so.MAJOR, or .so.0.MINOR while the major is 0
SONAME = "libsiamesenorm.so." + (str(_capi.EXPECTED_MAJOR) if _capi.EXPECTED_MAJOR
                                 else f"0.{_capi.EXPECTED_MINOR}")

PKG_DIR = os.path.dirname(os.path.abspath(sn.__file__))


def run_python(code, env_updates, pythonpath):
    env = {k: v for k, v in os.environ.items()
           if k not in ("SIAMESENORM_LIBRARY", "LD_LIBRARY_PATH")}
    env.update(env_updates)
    env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)


class Loading(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        # A copy of the package, away from any build tree.
        shutil.copytree(PKG_DIR, os.path.join(self.tmp, "pkg", "siamesenorm"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.pkg = os.path.join(self.tmp, "pkg")

    def test_loaded_library_is_the_requested_one(self):
        want = os.environ.get("SIAMESENORM_LIBRARY")
        self.assertTrue(want, "meson must set SIAMESENORM_LIBRARY for the tests")
        self.assertEqual(os.path.realpath(sn.library_path), os.path.realpath(want))

    def test_env_var_that_fails_is_an_error_listing_it(self):
        r = run_python("import siamesenorm", {"SIAMESENORM_LIBRARY": "/nonexistent/libx.so"},
                       self.pkg)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryNotFoundError", r.stderr)
        self.assertIn("/nonexistent/libx.so", r.stderr)

    def test_build_tree_is_searched_upwards(self):
        libdir = os.path.join(self.tmp, "build-xyz", "src")
        os.makedirs(libdir)
        shutil.copy(sn.library_path, os.path.join(libdir, "libsiamesenorm.so.0"))
        r = run_python("import siamesenorm as s; print(s.library_path)", {}, self.pkg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), os.path.join(libdir, "libsiamesenorm.so.0"))

    def test_dangling_build_link_is_skipped(self):
        """A build directory configured but not built holds a dangling libsiamesenorm.so.0 link
        the loader skips it and takes the next candidate, never FileNotFoundError."""
        broken = os.path.join(self.tmp, "build-configured", "src")
        os.makedirs(broken)
        os.symlink("libsiamesenorm.so.0.2.0", os.path.join(broken, "libsiamesenorm.so.0"))
        os.symlink("libsiamesenorm.so.0", os.path.join(broken, "libsiamesenorm.so"))
        code = "import siamesenorm as s; print('LOADED', s.library_path)"
        r = run_python(code, {}, self.pkg)  # only the dangling links: the system loader next
        self.assertNotIn("FileNotFoundError", r.stderr)
        if r.returncode != 0:
            self.assertIn("LibraryNotFoundError", r.stderr)
        else:
            self.assertNotIn(self.tmp, r.stdout)
        built = os.path.join(self.tmp, "build", "src")
        os.makedirs(built)
        shutil.copy(sn.library_path, os.path.join(built, "libsiamesenorm.so.0"))
        r = run_python(code, {}, self.pkg)  # and beside a built tree: that one loads
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "LOADED " + os.path.join(built, "libsiamesenorm.so.0"))

    def test_installed_package_ignores_build_trees(self):
        """A package in site-packages (pip-installed) does not search build*/ directories above
        it: an installed package uses the installed library."""
        site = os.path.join(self.tmp, "venv", "lib", "site-packages")
        shutil.copytree(os.path.join(self.pkg, "siamesenorm"), os.path.join(site, "siamesenorm"))
        libdir = os.path.join(self.tmp, "build-xyz", "src")
        os.makedirs(libdir)
        shutil.copy(sn.library_path, os.path.join(libdir, "libsiamesenorm.so.0"))
        r = run_python("import siamesenorm as s; print('LOADED', s.library_path)", {}, site)
        self.assertNotIn(self.tmp, r.stdout)
        if r.returncode != 0:
            self.assertIn("LibraryNotFoundError", r.stderr)
            self.assertNotIn("build tree", r.stderr)
        syslib = os.path.join(self.tmp, "syslib")
        os.makedirs(syslib)
        shutil.copy(sn.library_path, os.path.join(syslib, SONAME))
        r = run_python("import siamesenorm as s; print(s.library_path)",
                       {"LD_LIBRARY_PATH": syslib}, site)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), os.path.join(syslib, SONAME))

    def test_system_loader_last(self):
        libdir = os.path.join(self.tmp, "syslib")
        os.makedirs(libdir)
        shutil.copy(sn.library_path, os.path.join(libdir, SONAME))
        r = run_python("import siamesenorm as s; print(s.library_path)",
                       {"LD_LIBRARY_PATH": libdir}, self.pkg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("libsiamesenorm.so", r.stdout)

    def test_nothing_found_lists_what_was_tried(self):
        r = run_python("import siamesenorm as s; print('LOADED', s.library_path)", {}, self.pkg)
        if r.returncode == 0:
            # Only legitimate when a system-wide install exists.
            self.assertIn("LOADED", r.stdout)
            self.assertNotIn(self.tmp, r.stdout)
        else:
            self.assertIn("LibraryNotFoundError", r.stderr)
            self.assertIn("libsiamesenorm.so.0", r.stderr)
            self.assertIn("SIAMESENORM_LIBRARY", r.stderr)


class Version(unittest.TestCase):
    def test_runtime_version(self):
        n, s = sn.version_number(), sn.version_string()
        self.assertEqual(n // 10000, _capi.EXPECTED_MAJOR)
        self.assertEqual(s, f"{n // 10000}.{n // 100 % 100}.{n % 100}")
        # the package version is the library's (meson checks _version.py against the header)
        self.assertEqual(sn.__version__.split(".")[:2], s.split(".")[:2])
        self.assertEqual(sn.__version__, s)

    def test_version_rule(self):
        """0.x: the same minor (a minor version may change the ABI); >= 1: the same major and a
        minor at least the package's. The patch level never matters."""
        ok = _capi.version_compatible
        self.assertTrue(ok(203, 0, 2))
        self.assertFalse(ok(300, 0, 2))
        self.assertFalse(ok(100, 0, 2))
        self.assertFalse(ok(10200, 0, 2))
        self.assertTrue(ok(10300, 1, 2))
        self.assertTrue(ok(10205, 1, 2))
        self.assertFalse(ok(10100, 1, 2))
        self.assertFalse(ok(20200, 1, 2))

    def test_mismatch_is_rejected(self):
        class Fake:
            def __init__(self, n, s):
                self.sn_version_number = lambda: n
                self.sn_version_string = lambda: s
        M, m = _capi.EXPECTED_MAJOR, _capi.EXPECTED_MINOR
        _capi._check_version(Fake(M * 10000 + m * 100 + 7, b"patch"), "ok")  # another patch
        with self.assertRaises(sn.VersionMismatchError) as cm:
            _capi._check_version(Fake((M + 1) * 10000 + 100, b"9.1.0"), "/x/libsiamesenorm.so")
        self.assertIn("9.1.0", str(cm.exception))
        self.assertIn(sn.__version__, str(cm.exception))
        if M == 0:
            with self.assertRaises(sn.VersionMismatchError):  # another minor of 0.x
                _capi._check_version(Fake((m + 1) * 100, b"0.x.0"), "newer")
        if m > 0:
            with self.assertRaises(sn.VersionMismatchError):  # older minor than the binding
                _capi._check_version(Fake(M * 10000 + (m - 1) * 100, b"old"), "old")

    def test_explicit_library_of_another_version_is_an_error(self):
        """SIAMESENORM_LIBRARY naming a library that fails the version check raises
        VersionMismatchError (no other copy is tried). Simulated by a package copy whose
        _version.py claims another minor version."""
        vfile = os.path.join(self.pkg_copy(), "siamesenorm", "_version.py")
        M, m = _capi.EXPECTED_MAJOR, _capi.EXPECTED_MINOR
        with open(vfile, "w") as f:
            f.write(f'__version__ = "{M}.{m + 1}.0"\n')
        r = run_python("import siamesenorm", {"SIAMESENORM_LIBRARY": sn.library_path},
                       os.path.dirname(os.path.dirname(vfile)))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("VersionMismatchError", r.stderr)
        self.assertIn(sn.version_string(), r.stderr)

    def pkg_copy(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        shutil.copytree(PKG_DIR, os.path.join(tmp, "siamesenorm"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        return tmp


class StatusAndStructs(unittest.TestCase):
    def test_struct_layouts(self):
        import ctypes
        self.assertEqual(ctypes.sizeof(_capi.sn_norm), 16)
        self.assertEqual(ctypes.sizeof(_capi.sn_fuse), 48)
        self.assertEqual(_capi.sn_net.scales.offset, 56)
        self.assertEqual(_capi.sn_net.mix_fraction.offset, 64)
        self.assertEqual(_capi.sn_net.hc_rate.offset, 72)
        self.assertEqual(_capi.sn_net.hc_dynamic.offset, 76)
        self.assertEqual(_capi.sn_net.reserved.offset, 80)
        self.assertEqual(ctypes.sizeof(_capi.sn_net), 128)

    def test_status_strings(self):
        texts = {sn.status_string(c) for c in range(15)}
        self.assertEqual(len(texts), 15)  # every code has its own text
        self.assertEqual(sn.status_string(999), "unknown status")
        self.assertIn("eps", sn.status_string(4).lower())

    def test_context(self):
        with sn.Context() as ctx:
            x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
            n = sn.Norm("layernorm")
            a = n.forward(x, n.init_params(8), ctx=ctx)
            b = n.forward(x, n.init_params(8))
            np.testing.assert_array_equal(a, b)
        ctx.close()  # idempotent
        with self.assertRaises(ValueError):
            n.forward(x, n.init_params(8), ctx=ctx)


class NetDescription(unittest.TestCase):
    def test_default_scales(self):
        net = sn.Net("siamese", 6, 16)
        for i in range(6):
            self.assertAlmostEqual(net.scale(i), math.sqrt(2 * (i // 2 + 1)), places=6)
        net = sn.Net("siamese", 6, 16, scales="none")
        self.assertEqual([net.scale(i) for i in range(6)], [1.0] * 6)
        c = [0.5, 1, 2, 3, 4, 5]
        net = sn.Net("siamese", 6, 16, scales=c)
        self.assertEqual([net.scale(i) for i in range(6)], c)
        self.assertEqual(sn.Net("pre_norm", 4, 16).scale(3), 1.0)

    def test_sizes_and_layout(self):
        D, S = 16, 4
        for placement, per_stage, merge, per_row in (("siamese", 3, 3, 2 * D),
                                                     ("pre_norm", 1, 1, D),
                                                     ("post_norm", 1, 0, D)):
            net = sn.Net(placement, S, D, kind="layernorm")
            n_params, acts, work = net.sizes()
            self.assertEqual(n_params, (S * per_stage + merge) * 2 * D, placement)
            self.assertGreaterEqual(acts, S * per_row + D, placement)
            offsets = []
            for i in range(S + 1):
                norms = net.stage_norms(i)
                self.assertEqual(len(norms), per_stage if i < S else merge, (placement, i))
                offsets += [off for _, off in norms]
            # Every norm has its own disjoint 2 D floats, covering the block.
            self.assertEqual(sorted(offsets), list(range(0, n_params, 2 * D)))
            p = net.init_params()
            for i in range(S + 1):
                for j in range(len(net.stage_norms(i))):
                    g, b = net.param_views(i, j)
                    self.assertTrue(np.all(g == 1) and np.all(b == 0))

    def test_rmsnorm_has_no_beta_by_default(self):
        net = sn.Net("siamese", 2, 8, kind="rmsnorm")
        nm, _ = net.norm_at(0, 0)
        self.assertEqual(nm.affine, sn.SN_AFFINE_SCALE)
        self.assertEqual(net.sizes()[0], 9 * 8)
        g, b = net.param_views(2, 2)
        self.assertIsNone(b)

    def test_other_placements(self):
        S, D = 8, 16
        L = S // 2
        deep = sn.Net("deepnorm", S, D)
        self.assertAlmostEqual(deep.scale(0), (2 * L) ** 0.25, places=5)
        self.assertAlmostEqual(deep.init_gain(), (8 * L) ** -0.25, places=6)
        self.assertEqual(sn.Net("siamese", S, D).init_gain(), 1.0)
        peri = sn.Net("peri_ln", S, D)
        self.assertEqual(len(peri.stage_norms(-1)), 1)  # N_emb on the split
        self.assertEqual(len(peri.stage_norms(0)), 2)   # [N_in, N_out]
        self.assertEqual(len(sn.Net("siamese", S, D).stage_norms(-1)), 0)
        mix = sn.Net("mix_ln", S, D)
        self.assertAlmostEqual(mix.struct.mix_fraction, 0.25)
        self.assertAlmostEqual(sn.Net("mix_ln", S, D, mix_fraction=0.5).struct.mix_fraction, 0.5)
        with self.assertRaises(sn.ConfigError):
            sn.Net("mix_ln", S, D, mix_fraction=1.5)
        hp = sn.Net("siamese_hybrid_pre", S, D)
        c1, _ = hp.norm_at(0, 0)
        self.assertEqual(c1.kind, sn.SN_NORM_SCALE)
        self.assertEqual(len(hp.stage_norms(0)), 2)  # attention: [c1, N_pre]
        self.assertEqual(len(hp.stage_norms(1)), 3)  # MLP: [N_post, N_pre, N_in]
        for name in ("siamese_paper", "hybridnorm", "hybridnorm_star"):
            net = sn.Net(name, S, D)
            self.assertGreater(net.sizes()[0], 0, name)

    def test_input_norm_variants(self):
        net = sn.Net("siamese", 2, 8, input_norm=sn.Norm("identity"))
        self.assertEqual(len(net.stage_norms(0)), 3)
        self.assertEqual(net.norm_at(0, 2)[0].kind, sn.SN_NORM_IDENTITY)
        self.assertEqual(net.sizes()[0], (2 * 2 + 3) * 16)


if __name__ == "__main__":
    main()
