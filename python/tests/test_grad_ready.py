"""When may a data-parallel trainer start reducing the norm block's gradients? The guide
(docs/integrating.md, "Data-parallel training") says: stage i's norm gradients are final once
sn_net_enter_backward(i) returns, the merge's once sn_net_merge_backward returns, and the
block is laid out stage 0, 1, ..., S-1, then the merge, then the split (Peri-LN's N_emb), so
that the stages i..S-1 and the merge are one contiguous range [offset(i), end of merge) that is
final after enter_backward(i). This checks both claims for every placement and norm kind: a
snapshot of the stage's gradient slice taken right after its call equals the slice at the end of
the backward pass, byte for byte, and the stages' slices tile the block in that order
(Hyper-Connections: a stage's slice holds its norms and then its connection weights)."""

import unittest

import numpy as np

from siamesenorm.net import Net, PLACEMENTS
from strict_main import main

S, D, R = 6, 8, 5


def stage_range(net, i):
    """[lo, hi) of stage i's norms in the block (and of Hyper-Connections' connection weights,
    which follow them), or None when it has none."""
    norms = net.stage_norms(i)
    if not norms:
        return None
    nm, off = norms[-1]
    if net.hc_rate and 0 <= i < net.n_sublayers:
        conn, count = net.conn_at(i)
        assert conn == off + nm.query(D)[0], (i, conn)
        return norms[0][1], conn + count
    return norms[0][1], off + nm.query(D)[0]


class GradientsReady(unittest.TestCase):
    def check(self, placement, kind):
        rng = np.random.default_rng(0)
        net = Net(placement, S, D, kind=kind)
        net.params[:] = 1 + 0.3 * rng.standard_normal(net.n_params).astype(np.float32)
        W = [0.5 * rng.standard_normal((D, D)).astype(np.float32) for _ in range(S)]
        net.split(rng.standard_normal((R, D)).astype(np.float32))
        hs = []
        for i in range(S):  # block i: z = tanh(h W_i)
            h = net.enter(i)
            hs.append(h.copy())
            net.exit(i, np.tanh(h @ W[i]))
        net.merge()
        net.zero_grad()
        net.merge_backward(rng.standard_normal((R, D)).astype(np.float32))
        snap = {S: net.grads.copy()}
        for i in reversed(range(S)):
            dz = net.exit_backward(i)
            th = np.tanh(hs[i] @ W[i])
            net.enter_backward(i, ((dz * (1 - th * th)) @ W[i].T).astype(np.float32))
            snap[i] = net.grads.copy()
        net.split_backward()
        final = net.grads
        for i in range(S + 1):
            r = stage_range(net, i)
            if r:
                self.assertTrue(np.array_equal(snap[i][r[0]:r[1]], final[r[0]:r[1]]),
                                f"{placement} {kind}: stage {i} changed after its call")
        # the layout: stages 0..S-1, the merge, then the split, back to back
        ranges = [r for r in (stage_range(net, i) for i in list(range(S + 1)) + [-1]) if r]
        self.assertEqual(ranges[0][0], 0)
        for a, b in zip(ranges, ranges[1:]):
            self.assertEqual(a[1], b[0], f"{placement} {kind}: stages not contiguous")
        self.assertEqual(ranges[-1][1], net.n_params)
        self.assertGreater(np.abs(final).sum(), 0)

    def test_every_placement(self):
        for placement in PLACEMENTS:
            for kind in ("layernorm", "rmsnorm"):
                with self.subTest(placement=placement, kind=kind):
                    self.check(placement, kind)


if __name__ == "__main__":
    main()
