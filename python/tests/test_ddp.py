"""The PyTorch adapter's modules under torch.nn.parallel.DistributedDataParallel (gloo, 2
processes on this machine) give the same gradients as one process on the whole batch.

The model: a SiameseNorm stack (its SiameseSublayers and SiameseMerge, whose norm parameters
are flat nn.Parameters filled by the C kernels' backward) around Linear-GELU-Linear blocks,
between an input projection and an output head, trained with a mean cross-entropy. Each of the
2 ranks takes half of a batch of B rows; DDP averages the ranks' gradients (all-reduce, then
/ world size), which for equal halves is the whole batch's mean gradient. Checked, to fp32
tolerance (max |a - ref| / max |ref| <= 1e-5 per tensor): the first step's gradients against
one process on all B rows, and the parameters after 3 AdamW steps; and the two ranks' gradients
and parameters are the same bytes (DDP hands every rank the same reduced gradient).

Skips (exit status 77, meson's SKIP) when torch.distributed or its gloo backend is missing."""

import os
import sys
import tempfile
import unittest

import torch

TOL = 1e-5
WORLD = 2
B, T, D_IN, D, V = 8, 6, 10, 16, 7
STEPS = 3


def distributed_missing():
    import torch.distributed as dist
    if not dist.is_available():
        return "torch.distributed is not available in this torch build"
    if not dist.is_gloo_available():
        return "torch.distributed has no gloo backend"
    return None


def make_model(kind, seed):
    from siamesenorm import torch_adapter as ta
    from parity_ref import Block
    torch.manual_seed(seed)
    blocks = [Block(D, 2 * D) for _ in range(4)]
    model = torch.nn.Sequential()
    model.add_module("inp", torch.nn.Linear(D_IN, D))
    model.add_module("siamese", ta.SiameseNorm(blocks, d=D, kind=kind))
    model.add_module("head", torch.nn.Linear(D, V))
    # away from gamma 1 / beta 0, so every norm parameter's gradient matters
    with torch.no_grad():
        for name, p in model.siamese.named_parameters():  # the norms' .weight / .bias
            if ".block." not in name:
                p.add_(0.1 * torch.randn(p.shape))
    return model


def batch():
    g = torch.Generator().manual_seed(123)
    x = torch.randn(B, T, D_IN, generator=g)
    y = torch.randint(0, V, (B, T), generator=g)
    return x, y


def loss_fn(model, x, y):
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


def train(model, x, y, grads_out):
    """3 AdamW steps; the first step's gradients into grads_out; returns the parameters."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for step in range(STEPS):
        opt.zero_grad()
        loss_fn(model, x, y).backward()
        if step == 0:
            for name, p in named(model):
                grads_out[name] = p.grad.detach().clone()
        opt.step()
    return {name: p.detach().clone() for name, p in named(model)}


def named(model):
    """(name, parameter) without DDP's "module." prefix."""
    m = model.module if hasattr(model, "module") else model
    return list(m.named_parameters())


def worker(rank, kind, store, out):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank,
                            world_size=WORLD)
    ddp = torch.nn.parallel.DistributedDataParallel(make_model(kind, seed=7))
    x, y = batch()
    share = B // WORLD
    rows = slice(rank * share, (rank + 1) * share)
    grads = {}
    params = train(ddp, x[rows], y[rows], grads)
    torch.save({"grads": grads, "params": params}, out)
    dist.barrier()
    dist.destroy_process_group()


def rel_err(a, ref):
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


class DistributedDataParallelAgrees(unittest.TestCase):
    def run_case(self, kind):
        torch.set_num_threads(1)
        ref_grads = {}
        x, y = batch()
        ref_params = train(make_model(kind, seed=7), x, y, ref_grads)
        with tempfile.TemporaryDirectory() as tmp:
            outs = [os.path.join(tmp, f"rank{r}.pt") for r in range(WORLD)]
            ctx = torch.multiprocessing.get_context("spawn")
            procs = [ctx.Process(target=worker, args=(r, kind, os.path.join(tmp, "store"), outs[r]))
                     for r in range(WORLD)]
            for p in procs:
                p.start()
            for p in procs:
                p.join(timeout=240)
                if p.is_alive():
                    p.kill()
            self.assertEqual([p.exitcode for p in procs], [0] * WORLD)
            res = [torch.load(o) for o in outs]
        norm_names = [n for n in ref_grads if n.startswith("siamese.") and ".block." not in n]
        # 4 sub-layers (post, pre, input) and the merge (x, y, final): 15 norms, each a weight
        # (and a bias for LayerNorm)
        self.assertEqual(len(norm_names), 15 * (2 if kind == "layernorm" else 1))
        worst = {}
        for name in ref_grads:
            for r in range(WORLD):
                self.assertTrue(torch.equal(res[r]["grads"][name], res[0]["grads"][name]),
                                f"{name}: rank {r}'s gradient differs from rank 0's")
                self.assertTrue(torch.equal(res[r]["params"][name], res[0]["params"][name]),
                                f"{name}: rank {r}'s parameters differ from rank 0's")
            eg = rel_err(res[0]["grads"][name], ref_grads[name])
            ep = rel_err(res[0]["params"][name], ref_params[name])
            worst[name] = (eg, ep)
            self.assertLessEqual(eg, TOL, f"{name}: DDP gradient vs one process")
            self.assertLessEqual(ep, TOL, f"{name}: DDP parameters after {STEPS} steps")
        g = max(v[0] for v in worst.values())
        gn = max(worst[n][0] for n in norm_names)
        p = max(v[1] for v in worst.values())
        print(f"{kind}: worst relative error, DDP (2 x {B // WORLD} rows) vs one process "
              f"({B} rows): gradients {g:.2g} (norm blocks {gn:.2g}), parameters after "
              f"{STEPS} AdamW steps {p:.2g}", file=sys.stderr)

    def test_layernorm(self):
        self.run_case("layernorm")

    def test_rmsnorm(self):
        self.run_case("rmsnorm")


if __name__ == "__main__":
    why = distributed_missing()
    if why:
        print(f"SKIP: {why}", file=sys.stderr)
        sys.exit(77)
    from strict_main import main
    main()
