#!/usr/bin/python3
"""Train a small two-stream (SiameseNorm) model on CPU through libsiamesenorm's PyTorch adapter.

The task: at every position of a random token sequence, name the token seen most often so far
(ties: the smallest), with a tiny causal model whose sub-layers alternate a causal token mixer and an MLP. The norm placement
(split, fuse, shared block apply, merge) runs in the C library; the blocks are plain PyTorch.

    SIAMESENORM_LIBRARY=build/src/libsiamesenorm.so PYTHONPATH=python \
        /usr/bin/python3 examples/python/train_two_stream.py --steps 200
"""

import argparse
import sys

import torch
from torch import nn

from siamesenorm.torch_adapter import SiameseNorm

VOCAB, CLASSES = 7, 7


class CausalMix(nn.Module):
    """A minimal causal token mixer: each position averages the values of itself and its past."""

    def __init__(self, d, seq):
        super().__init__()
        self.seq = seq
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        mask = torch.tril(torch.ones(seq, seq))
        self.register_buffer("avg", mask / mask.sum(1, keepdim=True))

    def forward(self, h):  # h: (batch * seq, d)
        v = self.v(h).view(-1, self.seq, h.shape[1])
        return self.o(torch.matmul(self.avg, v).reshape(h.shape))


def mlp(d):
    return nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))


class TwoStreamModel(nn.Module):
    def __init__(self, d=64, layers=4, seq=16):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(0.02 * torch.randn(seq, d))
        blocks = []
        for _ in range(layers):  # sub-layer 2l: token mixing, 2l + 1: MLP
            blocks += [CausalMix(d, seq), mlp(d)]
        self.trunk = SiameseNorm(blocks, d, kind="layernorm", eps=1e-5)
        self.head = nn.Linear(d, CLASSES)

    def forward(self, tokens):  # (batch, seq) -> (batch, seq, classes)
        e = self.embed(tokens) + self.pos
        return self.head(self.trunk(e))


def batch(gen, n, seq):
    tokens = torch.randint(0, VOCAB, (n, seq), generator=gen)
    counts = torch.cumsum(nn.functional.one_hot(tokens, VOCAB), 1)  # (n, seq, VOCAB)
    return tokens, counts.argmax(-1)  # argmax returns the first (smallest) maximal token


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the loss of the last 10 steps is well below the first 10")
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    seq = 16
    model = TwoStreamModel(seq=seq)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses = []
    for step in range(args.steps):
        tokens, target = batch(gen, 32, seq)
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, CLASSES), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}", flush=True)
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    print(f"mean loss: first 10 steps {first:.4f}, last 10 steps {last:.4f}")
    if args.check and not last < 0.9 * first:
        print("FAILED: the loss did not go down", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
