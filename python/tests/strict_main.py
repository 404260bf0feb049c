"""unittest entry point for the meson 'python' suite: a skipped test, an expected failure or a
file with no tests counts as a FAILURE (CI must really run every parity test)."""

import sys
import unittest


def main(module="__main__"):
    prog = unittest.main(module=module, exit=False, verbosity=2)
    res = prog.result
    problems = []
    if res.testsRun == 0:
        problems.append("no tests ran")
    if res.skipped:
        problems.append(f"{len(res.skipped)} test(s) skipped: skips are failures here")
    if res.expectedFailures or res.unexpectedSuccesses:
        problems.append("expected failures are not allowed")
    if not res.wasSuccessful():
        problems.append(f"{len(res.failures)} failure(s), {len(res.errors)} error(s)")
    if problems:
        print("FAILED: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
