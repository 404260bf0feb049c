"""Hyper-Connections (placement "hyper_connections"): the pure-PyTorch reference of hc_ref.py
(written from the paper's equations, arXiv 2409.19606v3) checked on its own, then the library
through the binding, and the torch adapter, against it.

ReferenceSelfTest (pure PyTorch, float64): the oracle at the paper's initialisation is a
Pre-Norm network (static HC, n = 1, 2, 4; its final norm's eps divided by n^2, the streams being
summed), dynamic HC at initialisation is static HC bit for bit, and the einsum form agrees with
an explicit loop over streams and entries.

LibraryParity: the network of the other parity tests (12 layers = 24 sub-layers, R = 64,
D = 96, blocks Linear + GELU + Linear, random gammas and betas) with random connection weights
(A_m, A_r, B and, dynamic, W_m, W_r, W_beta, s_alpha, s_beta all away from their initial values),
static and dynamic, n = 1, 2, 4, LayerNorm and RMSNorm: the output, the embedding gradient,
every gamma / beta gradient (the block norms N_i, the streams' norms N_hc, the final norm), every
connection-weight gradient and every block gradient, the library in fp32 (sn.Net) against
float64 autograd of the reference, max |lib - ref| / max |ref| per tensor within TOL = 1e-5
(the worst tensor of each group and the tolerance are printed). The same for the torch adapter
(torch_adapter.HyperConnections), on every kernel path, and with bf16 activations (act_dtype
"bf16": 4 sub-layers, within 2^-4 as test_bf16's stack). The library's view of the paper's
initialisation: sn.Net's init_params give the reference's initial weights."""

import copy
import unittest

import numpy as np
import torch

import siamesenorm as sn
from siamesenorm.torch_adapter import HyperConnections
from hc_ref import HyperConnRef, init_connections, randomise_connections, reduction_scales
from parity_harness import torch_run
from parity_ref import PreNormRef, make_norm, randomise_norms, rel_err
from strict_main import main

S, R, D, HIDDEN = 6, 16, 24, 48


def _hc(n, dynamic, kind, seed, random_connections=False):
    """The small float64 network of the self-tests (random norms; connections at their
    initial values unless random_connections)."""
    model, e, G = build(n, dynamic, kind, seed, S_=S, R_=R, D_=D, hidden=HIDDEN,
                        random_connections=random_connections)
    return model.double(), e.double(), G.double(), EPS[kind]


class ReferenceSelfTest(unittest.TestCase):
    def test_static_init_is_pre_norm(self):
        """At the paper's initialisation static HC with n streams is the Pre-Norm network with
        the same blocks and norms, the final norm's eps divided by n^2: every output and
        gradient within 1e-12 (n = 1: the output bit for bit)."""
        for n in (1, 2, 4):
            for kind in ("layernorm", "rmsnorm"):
                with self.subTest(n=n, kind=kind):
                    hc, e, G, eps = _hc(n, False, kind, seed=n)
                    pre = PreNormRef(S, D, kind, eps, HIDDEN).double()
                    pre.blocks = copy.deepcopy(hc.blocks)
                    for k in range(S):
                        pre.norms[k].load_state_dict(hc.hc[k].norm.state_dict())
                    pre.nf = make_norm(kind, D, eps / n ** 2).double()
                    pre.nf.load_state_dict(hc.nf.state_dict())
                    a, b = reference_run(hc, e, G), torch_run(pre, e, G)
                    if n == 1:
                        self.assertTrue(torch.equal(a["out"], b["out"]))
                    # the same tensors under the two formulations' keys
                    same = {"out": "out", "de": "de"}
                    for k in b:
                        if k[0] == "block":
                            same[k] = k
                        elif k[0] in ("gamma", "beta"):
                            same[k] = (k[0], k[1], "final" if k[1] == S else "input")
                    self.assertEqual(set(same.values()), set(a) - {
                        k for k in a if k[0] in ("A_m", "A_r", "B")})
                    worst = max(rel_err(a[same[k]], b[k]) for k in b)
                    print(f"\nstatic HC n={n} {kind} at init vs Pre-Norm: worst {worst:.1e}")
                    self.assertLess(worst, 1e-12)

    def test_dynamic_init_is_static_init(self):
        """tanh(0) = 0: dynamic HC at initialisation computes static HC's output bit for bit."""
        for n in (1, 2, 4):
            st, e, G, _ = _hc(n, False, "layernorm", seed=10 + n)
            dy, _, _, _ = _hc(n, True, "layernorm", seed=10 + n)
            dy.blocks = copy.deepcopy(st.blocks)
            for k in range(S):
                dy.hc[k].norm.load_state_dict(st.hc[k].norm.state_dict())
            dy.nf.load_state_dict(st.nf.state_dict())
            with torch.no_grad():
                self.assertTrue(torch.equal(st(e), dy(e)), n)

    def test_einsum_form_agrees_with_loops(self):
        """The oracle's matrix form against its explicit loop over streams s and entries
        A_r[s, j] (the paper's H' = A_r^T H), random connections, static and dynamic."""
        for dynamic in (False, True):
            for n in (1, 3, 4):
                with self.subTest(n=n, dynamic=dynamic):
                    model, e, _, _ = _hc(n, dynamic, "rmsnorm", seed=20 + n,
                                         random_connections=True)
                    H = model.streams(e)
                    with torch.no_grad():
                        for k in range(S):
                            a = model.hc[k](H, model.blocks[k])
                            b = model.reference_step(k, H, model.blocks[k])
                            self.assertLess(rel_err(a, b), 1e-14)
                            H = a

    def test_random_connections_differ_from_pre_norm(self):
        """The parity runs use random connections: far from the initial Pre-Norm network (else
        a fault in the connections could go unseen)."""
        for dynamic in (False, True):
            a, e, G, _ = _hc(4, dynamic, "layernorm", seed=30, random_connections=True)
            b = copy.deepcopy(a)
            with torch.no_grad():
                for sub in b.hc:
                    sub.A_r.copy_(sub.A_r.t().clone())
                self.assertGreater(rel_err(a(e), b(e)), 1e-2)


# ---- the library against the reference ----------------------------------------------------

PS, PR, PD, PHIDDEN = 24, 64, 96, 4 * 96  # parity_harness's network: 12 layers
TOL = 1e-5        # max|lib - ref| / max|ref|, as every placement's parity test
SUM_TOL = 1e-6    # max|lib - ref| / max sum|terms| (reduction_scales)
BF16_TOL = 2.0 ** -4      # bf16 activations, as test_bf16's 4-sub-layer stack
BF16_SUM_TOL = 2.0 ** -8
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}
ROLES = {"input": "input", "streams": "streams", "final": "final"}  # reference -> library role
CONN = ("A_m", "A_r", "B", "W_m", "W_r", "W_beta", "s_alpha", "s_beta")


def build(n, dynamic, kind, seed, S_=PS, R_=PR, D_=PD, hidden=PHIDDEN,
          random_connections=True):
    """A float32 reference with random norms and (unless told) random connections, its input e
    and dL/dout G."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = HyperConnRef(S_, D_, kind, EPS[kind], hidden, n, dynamic).float()
    randomise_norms(model, gen)
    if random_connections:
        randomise_connections(model, gen)
    e = torch.randn(R_, D_, generator=gen)
    G = torch.randn(R_, D_, generator=gen)
    return model, e, G


def reference_run(model, e, G, scales=None):
    """Every output and gradient of the reference, keyed as the library's side keys them;
    scales: a dict that receives reduction_scales (the condition of the connection weights'
    gradients)."""
    e = e.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    trace = [] if scales is not None else None
    out = model(e, trace)
    (out * G).sum().backward()
    if scales is not None:
        scales.update(reduction_scales(model, trace))
    res = {"out": out.detach(), "de": e.grad.detach()}
    for k, role, m in model.norms_by_stage():
        res[("gamma", k, role)] = m.weight.grad.detach()
        if getattr(m, "bias", None) is not None:
            res[("beta", k, role)] = m.bias.grad.detach()
    for k, sub in enumerate(model.hc):
        for name, p in sub.connection_params():
            res[(name, k)] = p.grad.detach().reshape(p.shape)
    for k, blk in enumerate(model.blocks):
        for name, p in blk.named_parameters():
            res[("block", k, name)] = p.grad.detach()
    return res


def load_net(net, model):
    """Copy the reference's norms and connection weights into the Net's parameters (through
    the library's own layout queries: find_norm by role, conn_views)."""
    for k, role, m in model.norms_by_stage():
        gamma, beta = net.param_views(k, net.find_norm(k, ROLES[role]))
        gamma[:] = m.weight.detach().numpy()
        if beta is not None:
            beta[:] = m.bias.detach().numpy()
    for k, sub in enumerate(model.hc):
        v = net.conn_views(k)
        v["alpha"][:, 0] = sub.A_m.detach().numpy()
        v["alpha"][:, 1:] = sub.A_r.detach().numpy()
        v["beta"][:] = sub.B.detach().numpy()
        if sub.dynamic:
            v["Wa"][0] = sub.W_m.detach().numpy()
            v["Wa"][1:] = sub.W_r.detach().numpy().T
            v["Wb"][:] = sub.W_beta.detach().numpy()
            v["s_a"][:] = float(sub.s_alpha)
            v["s_b"][:] = float(sub.s_beta)


def conn_grads(net, model):
    """The library's connection gradients, in the reference's names and shapes."""
    res = {}
    for k, sub in enumerate(model.hc):
        g = {name: torch.from_numpy(a.copy()) for name, a in net.conn_grad_views(k).items()}
        res[("A_m", k)] = g["alpha"][:, 0]
        res[("A_r", k)] = g["alpha"][:, 1:]
        res[("B", k)] = g["beta"]
        if sub.dynamic:
            res[("W_m", k)] = g["Wa"][0]
            res[("W_r", k)] = g["Wa"][1:].t()
            res[("W_beta", k)] = g["Wb"]
            res[("s_alpha", k)] = g["s_a"].reshape(())
            res[("s_beta", k)] = g["s_b"].reshape(())
    return res


def library_run(model, kind, e, G, ctx=None, act_dtype="f32"):
    """The Net (fp32 or bf16 activations) with the reference's blocks run by torch."""
    bf16 = act_dtype == "bf16"
    net = sn.Net("hyper_connections", model.S, model.d, kind=kind, eps=EPS[kind],
                 hc_rate=model.n, hc_dynamic=model.dynamic, ctx=ctx, act_dtype=act_dtype)
    load_net(net, model)
    net.zero_grad()
    cast = (lambda t: sn.to_bf16(np.ascontiguousarray(t.numpy()))) if bf16 else \
        (lambda t: np.ascontiguousarray(t.numpy()))
    back = (lambda a: torch.from_numpy(sn.from_bf16(a))) if bf16 else \
        (lambda a: torch.from_numpy(a.copy()))
    net.split(cast(e))
    graphs = []
    for i in range(model.S):
        ht = back(net.enter(i)).requires_grad_(True)
        zt = model.blocks[i](ht)
        net.exit(i, cast(zt.detach()))
        graphs.append((ht, zt))
    res = {"out": back(net.merge())}
    net.merge_backward(cast(G))
    for i in reversed(range(model.S)):
        dz = back(net.exit_backward(i))
        ht, zt = graphs[i]
        names, params = zip(*model.blocks[i].named_parameters())
        grads = torch.autograd.grad(zt, (ht,) + params, grad_outputs=dz)
        net.enter_backward(i, cast(grads[0]))
        for name, g in zip(names, grads[1:]):
            res[("block", i, name)] = g
    res["de"] = back(net.split_backward())
    for k, role, m in model.norms_by_stage():
        dg, db = net.grad_views(k, net.find_norm(k, ROLES[role]))
        res[("gamma", k, role)] = torch.from_numpy(dg.copy())
        if db is not None:
            res[("beta", k, role)] = torch.from_numpy(db.copy())
    res.update(conn_grads(net, model))
    return res


def adapter_run(model, kind, e, G):
    """torch_adapter.HyperConnections around the reference's blocks, its parameters loaded
    from the reference by name (the paper's pseudocode names)."""
    mod = HyperConnections(model.blocks, model.d, n=model.n, dynamic=model.dynamic, kind=kind,
                           eps=EPS[kind])
    with torch.no_grad():
        for k, (sub, ref) in enumerate(zip(mod.sublayers, model.hc)):
            sub.norm.weight.copy_(ref.norm.weight)
            sub.static_alpha[:, 0] = ref.A_m
            sub.static_alpha[:, 1:] = ref.A_r
            sub.static_beta.copy_(ref.B)
            if ref.dynamic:
                sub.streams_norm.weight.copy_(ref.dyn_norm.weight)
                sub.dynamic_alpha_fn[:, 0] = ref.W_m
                sub.dynamic_alpha_fn[:, 1:] = ref.W_r
                sub.dynamic_beta_fn.copy_(ref.W_beta)
                sub.dynamic_alpha_scale.fill_(float(ref.s_alpha))
                sub.dynamic_beta_scale.fill_(float(ref.s_beta))
            for a, b in ((sub.norm, ref.norm),) + (((sub.streams_norm, ref.dyn_norm),)
                                                   if ref.dynamic else ()):
                if b.bias is not None:
                    a.bias.copy_(b.bias)
        mod.final.weight.copy_(model.nf.weight)
        if model.nf.bias is not None:
            mod.final.bias.copy_(model.nf.bias)
    ea = e.clone().requires_grad_(True)
    mod.zero_grad(set_to_none=True)
    out = mod(ea)
    (out * G).sum().backward()
    res = {"out": out.detach(), "de": ea.grad.detach()}
    for k, (sub, ref) in enumerate(zip(mod.sublayers, model.hc)):
        mods = [("input", sub.norm)] + ([("streams", sub.streams_norm)] if ref.dynamic else [])
        for role, m in mods:
            res[("gamma", k, role)] = m.weight.grad
            if m.bias is not None:
                res[("beta", k, role)] = m.bias.grad
        res[("A_m", k)] = sub.static_alpha.grad[:, 0]
        res[("A_r", k)] = sub.static_alpha.grad[:, 1:]
        res[("B", k)] = sub.static_beta.grad
        if ref.dynamic:
            res[("W_m", k)] = sub.dynamic_alpha_fn.grad[:, 0]
            res[("W_r", k)] = sub.dynamic_alpha_fn.grad[:, 1:]
            res[("W_beta", k)] = sub.dynamic_beta_fn.grad
            res[("s_alpha", k)] = sub.dynamic_alpha_scale.grad.reshape(())
            res[("s_beta", k)] = sub.dynamic_beta_scale.grad.reshape(())
        for name, p in sub.block.named_parameters():
            res[("block", k, name)] = p.grad
    res[("gamma", model.S, "final")] = mod.final.weight.grad
    if mod.final.bias is not None:
        res[("beta", model.S, "final")] = mod.final.bias.grad
    return res


def group_of(key):
    return key if isinstance(key, str) else key[0]


def scaled_err(a, ref, scale):
    """max |a - ref| / max scale: the error relative to the largest sum of |terms|."""
    a, ref = torch.as_tensor(a).double(), torch.as_tensor(ref).double()
    return float((a - ref).abs().max() / scale.abs().max().clamp_min(1e-300))


def compare(got, ref64, ref32, scales):
    """{group: (worst lib-vs-f64, torch32-vs-f64 of that tensor, its key, metric)}: the metric
    max|a - ref| / max|ref| per tensor, or for the tensors of `scales` (the connection weights'
    gradients and the streams' norms', sums that cancel) max|a - ref| / max sum|terms|."""
    assert set(got) == set(ref64), set(got) ^ set(ref64)
    rows = {}
    for k in ref64:
        if k in scales:
            err = scaled_err(got[k], ref64[k], scales[k])
            err32, metric = scaled_err(ref32[k], ref64[k], scales[k]), "sum|terms|"
        else:
            err, err32, metric = rel_err(got[k], ref64[k]), rel_err(ref32[k], ref64[k]), "|ref|"
        g = group_of(k) + ("/streams" if k[-1:] == ("streams",) else "")
        if g not in rows or err > rows[g][0]:
            rows[g] = (err, err32, k, metric)
    return rows


def report(title, rows, tol, sum_tol):
    print(f"\n{title}: max|a - ref| / max(metric) per tensor against float64 autograd, worst "
          f"tensor of each group (tolerance {tol:.1e}, sum|terms| {sum_tol:.1e})")
    for g, (a, b, k, metric) in rows.items():
        print(f"  {g:14s} {a:10.2e}  (torch fp32 {b:9.2e})  {metric:10s} {k}")


class LibraryParity(unittest.TestCase):
    def measure(self, n, dynamic, kind, seed, runner="net", isa=None, act_dtype="f32", **dims):
        model, e, G = build(n, dynamic, kind, seed, **dims)
        scales = {}
        ref64 = reference_run(copy.deepcopy(model).double(), e.double(), G.double(), scales)
        ref32 = reference_run(model, e, G)
        if runner == "net":
            ctx = sn.Context(isa=isa) if isa else None
            got = library_run(model, kind, e, G, ctx=ctx, act_dtype=act_dtype)
        else:
            got = adapter_run(model, kind, e, G)
        return compare(got, ref64, ref32, scales)

    def check(self, n, dynamic, kind, seed=0, tol=TOL, sum_tol=SUM_TOL, **kw):
        with self.subTest(n=n, dynamic=dynamic, kind=kind, seed=seed, **kw):
            rows = self.measure(n, dynamic, kind, seed, **kw)
            extra = "".join(f" {k}={v}" for k, v in kw.items() if k in ("runner", "isa",
                                                                          "act_dtype"))
            report(f"hyper_connections n={n} {'dynamic' if dynamic else 'static'} {kind} "
                   f"seed={seed}{extra}", rows, tol, sum_tol)
            want = {"out", "de", "gamma", "A_m", "A_r", "B", "block"}
            if dynamic:
                want |= {"W_m", "W_r", "W_beta", "s_alpha", "s_beta"}
            self.assertTrue(set(rows) >= want, set(rows))
            for g, (err, _, k, metric) in rows.items():
                self.assertLessEqual(err, sum_tol if metric == "sum|terms|" else tol,
                                     f"{g} worst tensor {k}")

    def test_static(self):
        for n in (1, 2, 4):
            for kind in ("layernorm", "rmsnorm"):
                self.check(n, False, kind, seed=n)

    def test_dynamic(self):
        for n in (1, 2, 4):
            for kind in ("layernorm", "rmsnorm"):
                self.check(n, True, kind, seed=10 + n)

    def test_every_kernel_path(self):
        for isa in ("scalar", "avx2", "avx512"):
            if sn.isa_available(isa):
                self.check(4, True, "layernorm", seed=30, isa=isa)
                self.check(2, False, "rmsnorm", seed=31, isa=isa)

    def test_torch_adapter(self):
        for n in (1, 2, 4):
            for dynamic in (False, True):
                self.check(n, dynamic, "layernorm", seed=40 + n, runner="adapter")
        self.check(4, True, "rmsnorm", seed=45, runner="adapter")

    def test_bf16_activations(self):
        """bf16 streams and block matrices (parameters and statistics fp32), 4 sub-layers."""
        for n in (1, 2, 4):
            for dynamic in (False, True):
                self.check(n, dynamic, "layernorm", seed=50 + n, tol=BF16_TOL,
                           sum_tol=BF16_SUM_TOL, act_dtype="bf16", S_=4, R_=16, D_=64, hidden=128)

    def test_init_params_are_the_papers(self):
        """sn.Net's init_params: A_m = e_{i mod n}, A_r = I, B = 1 (dynamic: W = 0,
        s = 0.01), the norms' gamma 1 / beta 0: what the reference starts from."""
        for n in (1, 2, 3, 4):
            for dynamic in (False, True):
                net = sn.Net("hyper_connections", 6, 8, hc_rate=n, hc_dynamic=dynamic)
                for i in range(6):
                    am, ar, b = init_connections(n, i)
                    v = net.conn_views(i)
                    np.testing.assert_array_equal(v["alpha"][:, 0], am.numpy())
                    np.testing.assert_array_equal(v["alpha"][:, 1:], ar.numpy())
                    np.testing.assert_array_equal(v["beta"], b.numpy())
                    if dynamic:
                        self.assertFalse(v["Wa"].any() or v["Wb"].any())
                        self.assertEqual(float(v["s_a"][0]), np.float32(0.01))
                        self.assertEqual(float(v["s_b"][0]), np.float32(0.01))


if __name__ == "__main__":
    main()
