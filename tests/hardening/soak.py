#!/usr/bin/python3
"""Soak test (suite 'soak'): runs the example trainer sn-gpt-train for thousands of steps on its
embedded addition data and checks, while it runs and afterwards, that
  - it exits 0 (not 3, "diverged"),
  - every step's train loss and gradient norm in its CSV log is finite, and there is one row
    per step,
  - its resident memory is flat: sampled from /proc/PID/status (VmRSS) every 20 ms, the
    largest RSS over the second half of the run exceeds the largest over the first third
    (after start-up) by at most RSS_SLACK_KIB.
Usage: soak.py TRAINER [--steps N] [--norm NAME ...]
SN_SOAK_STEPS overrides --steps (long runs: SN_SOAK_STEPS=100000 meson test --suite soak)."""
import math
import os
import subprocess
import sys
import tempfile
import time

RSS_SLACK_KIB = 256


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def soak(trainer, steps, norm):
    with tempfile.TemporaryDirectory(prefix="sn-soak.") as tmp:
        log = os.path.join(tmp, "log.csv")
        cmd = [trainer, "--task", "addition", "--norm", norm, "--layers", "2", "--width", "32",
               "--heads", "2", "--digits", "2", "--batch", "8", "--steps", str(steps),
               "--eval-every", str(max(steps // 4, 1)), "--print-every", "0", "--val-size", "50",
               "--samples", "0", "--log", log]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        samples = []  # (seconds since start, KiB)
        while proc.poll() is None:
            kib = rss_kib(proc.pid)
            if kib:
                samples.append((time.monotonic() - t0, kib))
            time.sleep(0.02)
        out = proc.stdout.read().decode(errors="replace")
        wall = time.monotonic() - t0
        errors = []
        if proc.returncode != 0:
            errors.append(f"exit status {proc.returncode}\n{out}")
        rows = []
        with open(log) as f:
            header = f.readline().strip().split(",")
            for line in f:
                rows.append(dict(zip(header, line.strip().split(","))))
        if len(rows) != steps:
            errors.append(f"{len(rows)} CSV rows for {steps} steps")
        bad = [r["step"] for r in rows
               if not (math.isfinite(float(r["train_loss"])) and
                       math.isfinite(float(r["grad_norm"])))]
        if bad:
            errors.append(f"non-finite loss or gradient norm at steps {bad[:5]}")
        if len(samples) < 10:
            errors.append(f"only {len(samples)} RSS samples: the run is too short to judge")
            grow = 0
        else:
            n = len(samples)
            early = max(k for _, k in samples[n // 6: n // 3 + 1])
            late = max(k for _, k in samples[n // 2:])
            grow = late - early
            if grow > RSS_SLACK_KIB:
                errors.append(f"RSS grew by {grow} KiB (first third max {early} KiB, second "
                              f"half max {late} KiB): a leak?")
        final = rows[-1]["train_loss"] if rows else "?"
        print(f"soak {norm}: {len(rows)} steps in {wall:.1f} s, final loss {final}, "
              f"{len(samples)} RSS samples, max {max((k for _, k in samples), default=0)} KiB, "
              f"growth {grow} KiB (limit {RSS_SLACK_KIB})")
        return errors


def main(argv):
    trainer = argv[1]
    steps, norms = 3000, []
    i = 2
    while i < len(argv):
        if argv[i] == "--steps":
            steps = int(argv[i + 1])
        elif argv[i] == "--norm":
            norms.append(argv[i + 1])
        i += 2
    steps = int(os.environ.get("SN_SOAK_STEPS", steps))
    failed = False
    for norm in norms or ["siamese"]:
        for e in soak(trainer, steps, norm):
            print(f"soak {norm}: FAIL: {e}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
