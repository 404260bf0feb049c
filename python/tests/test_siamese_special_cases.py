"""SiameseNorm's documented special cases (SPEC: "N_post gains at 0 recover Pre-Norm, N_pre gains
at 0 recover Post-Norm"), checked on the library (through the binding) against PyTorch
formulations of the single-stream networks they reduce to. 12 layers, R = 64, D = 96, random
parameters elsewhere, LayerNorm and RMSNorm. What is verified, precisely:

1. Every N_post,i gamma AND beta zero (then u_i = 0: the x stream carries nothing into the
   fuse), N_a random. The y stream is exactly a Pre-Norm network whose block input is the
   composite norm N_in,i(N_pre,i(y_i)):  y_{i+1} = y_i + F_i(N_in,i(N_pre,i(y_i))); every block
   input h_i equals that network's; but x_S = z_{S-1} / c_{S-1} (the last block's output, never
   post-normed) still reaches the merge: out = N_f(N_a(z_{S-1} / c_{S-1}) + N_b(y_S)).
2. Additionally N_a's gamma and beta zero: out = N_f(N_b(y_S)), i.e. exactly Pre-Norm with final
   norm N_f o N_b, in the output and in the gradients of e, of every block and of every N_pre,
   N_in, N_b, N_f parameter.
   In both, the zeroed gains' own gradients (N_post, and N_a in 2) are NOT zero: the special
   case is a point, not a subspace training stays in. They are checked against float64 autograd
   of the full SiameseNorm formulation.
   For LayerNorm, zero gammas alone do not suffice: the betas of N_post put a constant into the
   fuse and the reduction fails (checked: the deviation is large).
3. Every N_pre,i gamma and beta zero and N_b zero: with v_i = N_post,i(x_i) the x stream is
   Post-Norm with the branch scaled by 1/c_i and block input N_in,i(v):
   v_{i+1} = N_post,i+1(v_i + F_i(N_in,i(v_i)) / c_i), v_0 = N_post,0(e),
   out = N_f(N_a(v_{S-1} + F_{S-1}(N_in(v_{S-1})) / c_{S-1})).
Each reduction is also checked between the two float64 formulations (<= 1e-12), which verifies
the mathematical statement independently of the library."""

import copy
import unittest

import torch
from torch import nn

from parity_harness import build, torch_run, library_run, S, TOL
from parity_ref import official_scale, rel_err
from strict_main import main

EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}


def zero_norm(m):
    with torch.no_grad():
        m.weight.zero_()
        if getattr(m, "bias", None) is not None:
            m.bias.zero_()


class PostZeroForm(nn.Module):
    """Cases 1 and 2 written without N_post: a Pre-Norm stream y with composite input norms."""

    def __init__(self, sia, with_a):
        super().__init__()
        self.sia, self.with_a = sia, with_a

    def forward(self, e):
        m, y, self.h = self.sia, e, []
        for i, F in enumerate(m.blocks):
            h = m.inp[i](m.pre[i](y))
            self.h.append(h)
            z = F(h)
            y = y + z
        if self.with_a:
            return m.nf(m.na(z / m.scales[-1]) + m.nb(y))
        return m.nf(m.nb(y))

    def used(self):
        """(stage, j) of the norms this form uses."""
        out = [(i, j) for i in range(S) for j in (1, 2)] + [(S, 1), (S, 2)]
        return out + ([(S, 0)] if self.with_a else [])


class PreZeroForm(nn.Module):
    """Case 3 written without N_pre and y: Post-Norm with scaled branches."""

    def __init__(self, sia):
        super().__init__()
        self.sia = sia

    def forward(self, e):
        m, self.h = self.sia, []
        v = m.post[0](e)
        for i, F in enumerate(m.blocks):
            h = m.inp[i](v)
            self.h.append(h)
            x = v + F(h) / m.scales[i]
            v = m.post[i + 1](x) if i + 1 < S else x
        return m.nf(m.na(v))

    def used(self):
        return [(i, j) for i in range(S) for j in (0, 2)] + [(S, 0), (S, 2)]


def form_run(form, sia64, e, G):
    """torch_run for a form: its output, de, block gradients, h_i and the grads of the norms
    it uses, keyed like the harness."""
    e = e.clone().requires_grad_(True)
    sia64.zero_grad(set_to_none=True)
    out = form(e)
    (out * G).sum().backward()
    res = {"out": out.detach(), "de": e.grad.detach()}
    res.update({("h", i): h.detach() for i, h in enumerate(form.h)})
    by_key = {(i, j): m for i, j, m in sia64.norms_by_stage()}
    for i, j in form.used():
        m = by_key[(i, j)]
        res[("gamma", i, j)] = m.weight.grad.detach()
        if getattr(m, "bias", None) is not None:
            res[("beta", i, j)] = m.bias.grad.detach()
    for b, blk in enumerate(sia64.blocks):
        for name, p in blk.named_parameters():
            res[("block", b, name)] = p.grad.detach()
    return res


class SpecialCases(unittest.TestCase):
    def setup_case(self, kind, seed, zero):
        """A SiameseNorm reference with random parameters, then the norms picked by zero(model)
        zeroed; returns (model32, e, G, lib results, full f64 results, model64)."""
        scales = [official_scale(i) for i in range(S)]
        model, e, G = build("siamese", kind, EPS[kind], scales, seed)
        zero(model)
        model64 = copy.deepcopy(model).double()
        full64 = torch_run(model64, e.double(), G.double())
        lib, _ = library_run(model, "siamese", kind, EPS[kind], None, e, G, keep_h=True)
        return model, e, G, lib, full64, model64

    def compare(self, form_cls, zero, zeroed_keys, kind, seed, **form_kw):
        model, e, G, lib, full64, model64 = self.setup_case(kind, seed, zero)
        form = form_cls(model64, **form_kw)
        ref = form_run(form, model64, e.double(), G.double())
        worst = 0.0
        for k, r in ref.items():
            # the library against the reduced single-stream formulation
            err = rel_err(lib[k], r)
            worst = max(worst, err)
            self.assertLessEqual(err, TOL, k)
            # the reduction itself, both sides float64 (block inputs are not in full64)
            if k in full64:
                self.assertLessEqual(rel_err(full64[k], r), 1e-12, k)
        # the zeroed gains' own gradients: nonzero, and exact against the full formulation
        for k in zeroed_keys(lib):
            self.assertLessEqual(rel_err(lib[k], full64[k]), TOL, k)
            self.assertGreater(float(full64[k].abs().max()), 1e-3, k)
        print(f"{form_cls.__name__} {form_kw} {kind} seed={seed}: {len(ref)} tensors, "
              f"worst lib vs reduced f64 form {worst:.2e}")

    def test_post_gains_zero_recover_pre_norm_stream(self):
        def zero(m):
            for n in m.post:
                zero_norm(n)
        for kind in ("layernorm", "rmsnorm"):
            for seed in (0, 1):
                with self.subTest(kind=kind, seed=seed):
                    self.compare(PostZeroForm, zero, self.keys_of([0]), kind, seed,
                                 with_a=True)

    def test_post_and_merge_a_zero_is_pre_norm(self):
        def zero(m):
            for n in list(m.post) + [m.na]:
                zero_norm(n)
        keys = lambda lib: self.keys_of([0])(lib) + [k for k in lib  # noqa: E731
                                                     if k[1:] == (S, 0)]
        for kind in ("layernorm", "rmsnorm"):
            for seed in (0, 1):
                with self.subTest(kind=kind, seed=seed):
                    self.compare(PostZeroForm, zero, keys, kind, seed, with_a=False)

    def test_pre_gains_zero_recover_post_norm_stream(self):
        def zero(m):
            for n in list(m.pre) + [m.nb]:
                zero_norm(n)
        keys = lambda lib: self.keys_of([1])(lib) + [k for k in lib  # noqa: E731
                                                     if k[1:] == (S, 1)]
        for kind in ("layernorm", "rmsnorm"):
            with self.subTest(kind=kind):
                self.compare(PreZeroForm, zero, keys, kind, 0)

    def test_layernorm_gammas_alone_do_not_suffice(self):
        """Zero N_post gammas with random betas: u_i = beta_i, not 0; far from Pre-Norm."""
        def zero(m):
            with torch.no_grad():
                for n in m.post:
                    n.weight.zero_()
        model, e, G, lib, full64, model64 = self.setup_case("layernorm", 0, zero)
        ref = form_run(PostZeroForm(model64, with_a=True), model64, e.double(), G.double())
        self.assertGreater(rel_err(full64["out"], ref["out"]), 1e-3)
        self.assertGreater(rel_err(lib["out"], ref["out"]), 1e-3)

    @staticmethod
    def keys_of(js):
        """Gradient keys of sub-layer norms j in js (the zeroed ones)."""
        return lambda lib: [k for k in lib if isinstance(k, tuple) and k[0] in ("gamma", "beta")
                            and 0 <= k[1] < S and k[2] in js]


if __name__ == "__main__":
    main()
