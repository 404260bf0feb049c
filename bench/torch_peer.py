#!/usr/bin/python3
"""PyTorch eager peer for sn-bench: one SiameseNorm sub-layer (fuse forward + shared block apply
forward + apply backward + fuse backward) computed by PyTorch 1.13 CPU eager in the official
formulation and by libsiamesenorm through its Python binding, on the same inputs, in the same
process, one thread each, their samples taken in turn. Prints both medians and the ratio;
checks the two agree.

Run with /usr/bin/python3 (numpy + torch):
    /usr/bin/python3 bench/torch_peer.py [--R 4096] [--D 768] [--reps 11] [--threads 1] [--json]
The binding finds the library in the build tree (or SIAMESENORM_LIBRARY=path/to/libsiamesenorm.so).

Official formulation (SPEC "SiameseNorm, as the official code runs it"), c = sqrt(2):
    u = LN_post(x);  h = LN_in(u + LN_pre(y));  x' = u + z / c;  y' = y + z
and the backward of (h, x', y') from (dh, dx', dy'): dx, dy, dz and the six parameter gradients.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import siamesenorm as sn  # noqa: E402


def median_ms(fn, reps):
    fn()  # warm up
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    q1, q3 = samples[len(samples) // 4], samples[(3 * len(samples)) // 4]
    med = statistics.median(samples)
    return med, (q3 - q1) / med, samples[0]


def paired_ms(fns, reps):
    """median_ms for several functions, their samples taken in turn (the order alternating),
    so that a machine whose load changes during the run slows them alike."""
    for fn in fns:
        fn()  # warm up
    samples = [[] for _ in fns]
    for r in range(reps):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            t0 = time.perf_counter()
            fns[i]()
            samples[i].append((time.perf_counter() - t0) * 1e3)
    out = []
    for s in samples:
        s.sort()
        q1, q3 = s[len(s) // 4], s[(3 * len(s)) // 4]
        med = statistics.median(s)
        out.append((med, (q3 - q1) / med, s[0]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--R", type=int, default=4096)
    ap.add_argument("--D", type=int, default=768)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    R, D, c = a.R, a.D, math.sqrt(2.0)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    f32 = np.float32

    def mat():
        return rng.standard_normal((R, D)).astype(f32)

    x, y, z, dh, dxo, dyo = mat(), mat(), mat(), mat(), mat(), mat()

    # ---- PyTorch eager, official formulation ----
    lns = [torch.nn.LayerNorm(D, eps=1e-5) for _ in range(3)]  # post, pre, in
    with torch.no_grad():
        for ln in lns:
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    tx, ty, tz = (torch.from_numpy(v.copy()).requires_grad_() for v in (x, y, z))
    tdh, tdxo, tdyo = (torch.from_numpy(v) for v in (dh, dxo, dyo))

    def torch_step():
        for t in (tx, ty, tz, *[p for ln in lns for p in ln.parameters()]):
            t.grad = None
        u = lns[0](tx)
        h = lns[2](u + lns[1](ty))
        xo = u + tz / c
        yo = ty + tz
        torch.autograd.backward([h, xo, yo], [tdh, tdxo, tdyo])
        return h, xo, yo

    # ---- libsiamesenorm through the binding, same parameters ----
    fuse = sn.Fuse.uniform("layernorm", eps=1e-5)
    n_params, spr = fuse.query(D)
    params = np.concatenate([np.concatenate([ln.weight.detach().numpy(),
                                             ln.bias.detach().numpy()]) for ln in lns]).astype(f32)
    assert params.size == n_params
    stats = np.zeros(R * spr, f32)
    u, h, xo, yo = (np.empty((R, D), f32) for _ in range(4))
    dz, dx, dy = (np.empty((R, D), f32) for _ in range(3))
    dparams = np.zeros(n_params, f32)
    ctx = sn.Context(threads=a.threads)

    def c_step():
        fuse.forward(x, y, params, u=u, h=h, stats=stats, ctx=ctx)
        sn.apply_forward(z, u, y, c, xo=xo, yo=yo, ctx=ctx)
        sn.apply_backward(dxo, dyo, c, dz=dz, ctx=ctx)
        dy[...] = dyo  # dy_{i+1}, accumulated into by the fuse backward
        dparams[...] = 0
        fuse.backward(dh, x, y, params, stats, du=dxo, dx=dx, dy=dy, dparams=dparams,
                      accumulate_y=True, ctx=ctx)

    # agreement (fp32 both; different summation orders)
    th, txo, tyo = torch_step()
    c_step()
    tgrads = np.concatenate([np.concatenate([ln.weight.grad.numpy(), ln.bias.grad.numpy()])
                             for ln in lns])

    def rel(a_, b_):
        return float(np.max(np.abs(a_ - b_)) / max(1.0, float(np.max(np.abs(b_)))))

    errs = {"h": rel(h, th.detach().numpy()), "x'": rel(xo, txo.detach().numpy()),
            "y'": rel(yo, tyo.detach().numpy()), "dx": rel(dx, tx.grad.numpy()),
            "dy": rel(dy, ty.grad.numpy()), "dz": rel(dz, tz.grad.numpy()),
            "dparams": rel(dparams, tgrads)}
    worst = max(errs.values())

    # the C step does one extra copy (dy = dy_{i+1}) that a trainer does not need: time it
    # apart and subtract it, so the figure is the library's four calls.
    copy_ms = median_ms(lambda: np.copyto(dy, dyo), a.reps)[0]
    (t_ms, t_noise, t_best), (c_ms, c_noise, c_best) = paired_ms([torch_step, c_step], a.reps)
    c_ms -= copy_ms
    c_best -= copy_ms
    res = {"op": "siamese sub-layer", "R": R, "D": D, "threads": a.threads,
           "torch_ms": t_ms, "torch_noise": t_noise, "torch_best_ms": t_best,
           "c_ms": c_ms, "c_noise": c_noise, "c_best_ms": c_best,
           "speedup": t_ms / c_ms, "speedup_best": t_best / c_best, "isa": ctx.isa,
           "max_rel_diff": worst, "torch_version": torch.__version__}
    if a.json:
        print(json.dumps(res))
    else:
        print(f"# SiameseNorm sub-layer R={R} D={D} threads={a.threads} isa={ctx.isa}, "
              f"torch {torch.__version__}")
        print(f"  PyTorch eager     {t_ms:9.3f} ms (best {t_best:.3f}, noise {100 * t_noise:.0f}%)")
        print(f"  libsiamesenorm    {c_ms:9.3f} ms (best {c_best:.3f}, noise {100 * c_noise:.0f}%)")
        print(f"  speedup           {t_ms / c_ms:9.2f}x   (target >= 4x; of the best samples "
              f"{t_best / c_best:.2f}x)")
        print(f"  max rel. difference vs torch: {worst:.2e} "
              + " ".join(f"{k}={v:.1e}" for k, v in errs.items()))
    return 0 if worst < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
