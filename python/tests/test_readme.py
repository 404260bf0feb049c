"""The README's Python example (between <!-- python-example --> markers) runs as written."""

import contextlib
import io
import os
import re
import unittest

from strict_main import main

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


class ReadmeExample(unittest.TestCase):
    def test_example_runs(self):
        text = open(README, encoding="utf-8").read()
        m = re.search(r"<!-- python-example -->\s*```python\n(.*?)```\s*<!-- /python-example -->",
                      text, re.S)
        self.assertIsNotNone(m, "README.md has no python-example block")
        code = m.group(1)
        self.assertLessEqual(len(code.strip().splitlines()), 14)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, "README.md:python-example", "exec"), {})
        self.assertRegex(buf.getvalue(), r"^\(8, 64\) \d+ norm parameters")


if __name__ == "__main__":
    main()
