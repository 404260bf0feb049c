"""Test 'python-install' (meson test, suite python): the binding as a pip user gets it.

  1. installs the built library into a temporary DESTDIR (meson install --destdir), a private
     prefix;
  2. creates a clean venv with /usr/bin/python3 -m venv --system-site-packages (numpy and torch
     from Debian stay visible) and runs pip install --no-build-isolation --no-index on a copy of
     python/ (setuptools builds in the project directory; the copy keeps the source tree clean);
  3. from an empty directory outside the source tree, without PYTHONPATH or SIAMESENORM_LIBRARY,
     imports the installed package and runs a small computation checked against numpy:
       a. the private prefix through the system loader: LD_LIBRARY_PATH = its libdir;
       b. the private prefix through pkg-config: PKG_CONFIG_PATH = its pkgconfig directory
          (plus PKG_CONFIG_SYSROOT_DIR, only because a DESTDIR tree keeps the .pc's /usr/local
          prefix; an install made with --prefix needs PKG_CONFIG_PATH alone);
       c. no variable at all: a system install is found (never the build tree or the private
          prefix), or the import raises LibraryNotFoundError naming what it tried;
  4. the installed distribution's version (importlib.metadata) is the header's.
A private prefix needs LD_LIBRARY_PATH or PKG_CONFIG_PATH, as for any library installed there;
a system prefix (after ldconfig) needs none, which 3c checks as far as the machine has one.

Usage: test_install.py BUILD_DIR PYTHON_SOURCE_DIR VERSION. Exit 77 (skip) with a message when
python3-venv or pip is missing (tools/deps.sh installs them)."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

PY = "/usr/bin/python3"
SKIP = 77

SCRIPT = r"""
import os, sys
import numpy as np
import siamesenorm as sn
print("FILE", sn.__file__)
print("LIB", os.path.realpath(sn.library_path))
print("VERSION", sn.__version__, sn.version_string())
x = np.random.default_rng(0).standard_normal((5, 32)).astype(np.float32)
nm = sn.Norm("layernorm", eps=1e-5)
p = nm.init_params(32)
p[:32] = 1.5
p[32:] = 0.25
out = nm.forward(x, p)
ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * 1.5 + 0.25
assert np.abs(out - ref).max() < 1e-5, np.abs(out - ref).max()
net = sn.Net("siamese", 2, 32)
net.split(x)
for i in range(2):
    net.exit(i, np.tanh(net.enter(i)))
assert np.isfinite(net.merge()).all()
print("COMPUTED OK")
"""


def log(*a):
    print("python-install:", *a, flush=True)


def run(cmd, **kw):
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    shown = " ".join(a if len(a) < 60 and "\n" not in a else "<script>" for a in cmd[:4])
    log(f"{shown}{' ...' if len(cmd) > 4 else ''} -> {r.returncode} "
        f"({time.time() - t:.1f} s)")
    return r


def fail(msg, r=None):
    if r is not None:
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
    log("FAIL:", msg)
    sys.exit(1)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "SIAMESENORM_LIBRARY", "LD_LIBRARY_PATH",
                        "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR",
                        "VIRTUAL_ENV")}
    env.update(extra)
    return env


def main():
    build, pysrc, version = sys.argv[1:4]
    major, minor = version.split(".")[:2]
    sover = major if major != "0" else "0." + minor  # the soname: .so.MAJOR, .so.0.MINOR in 0.x
    src_root = os.path.dirname(os.path.abspath(pysrc))
    meson = shutil.which("meson")
    if meson is None:
        log("meson not found on PATH, skipping")
        return SKIP
    if subprocess.run([PY, "-c", "import ensurepip, venv"], capture_output=True).returncode:
        log("python3-venv (ensurepip) is not installed, skipping; tools/deps.sh installs it")
        return SKIP

    tmp = tempfile.mkdtemp(prefix="sn-pyinstall.")
    try:
        root = os.path.join(tmp, "root")
        r = run([meson, "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", root])
        if r.returncode:
            fail("meson install failed", r)
        sos = glob.glob(os.path.join(root, "**", f"libsiamesenorm.so.{sover}"), recursive=True)
        pcs = glob.glob(os.path.join(root, "**", "siamesenorm.pc"), recursive=True)
        if len(sos) != 1 or len(pcs) != 1:
            fail(f"expected one libsiamesenorm.so.{sover} and one siamesenorm.pc, got {sos} {pcs}")
        libdir, pcdir = os.path.dirname(sos[0]), os.path.dirname(pcs[0])
        log("private prefix libdir:", libdir)

        venv = os.path.join(tmp, "venv")
        r = run([PY, "-m", "venv", "--system-site-packages", venv])
        if r.returncode:
            if "ensurepip" in r.stdout + r.stderr:
                log("python3 -m venv cannot install pip (python3-venv missing), skipping")
                return SKIP
            fail("python3 -m venv failed", r)
        vpy = os.path.join(venv, "bin", "python")
        if subprocess.run([vpy, "-m", "pip", "--version"], capture_output=True).returncode:
            log("pip is not available in the venv (python3-pip / python3-venv), skipping")
            return SKIP

        # What `pip install ./python` sees: pyproject.toml and the package (not the tests).
        proj = os.path.join(tmp, "src", "python")
        os.makedirs(proj)
        shutil.copy(os.path.join(pysrc, "pyproject.toml"), proj)
        shutil.copytree(os.path.join(pysrc, "siamesenorm"), os.path.join(proj, "siamesenorm"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        r = run([vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                 "--disable-pip-version-check", "--no-input", "./python"],
                cwd=os.path.join(tmp, "src"), env=clean_env())
        if r.returncode:
            fail("pip install --no-build-isolation --no-index ./python failed", r)

        work = os.path.join(tmp, "elsewhere")
        os.makedirs(work)

        def check_run(what, env, want_lib_under):
            r = run([vpy, "-c", SCRIPT], cwd=work, env=env)
            if r.returncode:
                fail(f"{what}: the installed package did not import and compute", r)
            info = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
            if not info.get("FILE", "").startswith(os.path.join(venv, "lib")):
                fail(f"{what}: siamesenorm imported from {info.get('FILE')}, not the venv", r)
            lib = info.get("LIB", "")
            if not lib.startswith(want_lib_under):
                fail(f"{what}: loaded {lib}, expected a library under {want_lib_under}", r)
            if info.get("VERSION") != f"{version} {version}":
                fail(f"{what}: versions {info.get('VERSION')!r}, expected {version} twice", r)
            log(f"{what}: OK, loaded {lib}")

        check_run("a. LD_LIBRARY_PATH", clean_env(LD_LIBRARY_PATH=libdir), root)
        if shutil.which("pkg-config"):
            check_run("b. PKG_CONFIG_PATH",
                      clean_env(PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=root), root)
        else:
            log("b. skipped: pkg-config not found")

        r = run([vpy, "-c", SCRIPT], cwd=work, env=clean_env())
        if r.returncode == 0:
            lib = next((ln[4:] for ln in r.stdout.splitlines() if ln.startswith("LIB ")), "")
            if lib.startswith(tmp) or lib.startswith(src_root) or lib.startswith(
                    os.path.realpath(build)):
                fail(f"c. without variables the package loaded {lib}: not a system install", r)
            log(f"c. no variables: a system install was found: {lib}")
        elif "LibraryNotFoundError" not in r.stderr or f"libsiamesenorm.so.{sover}" not in r.stderr:
            fail("c. without variables (no system install): expected LibraryNotFoundError "
                 "naming the soname", r)
        else:
            log("c. no variables, no system install: LibraryNotFoundError, as expected")

        r = run([vpy, "-c", "import importlib.metadata as m; print(m.version('siamesenorm'))"],
                cwd=work, env=clean_env())
        if r.returncode or r.stdout.strip() != version:
            fail(f"installed distribution version {r.stdout.strip()!r}, expected {version}", r)
        log("all checks passed")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
