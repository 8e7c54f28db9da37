#!/usr/bin/env python3
"""pdl_load_order.py on hand-made SASS: the deep GEMV's hoisted x loads
(the shape of run 175's build) are found, the fixed order passes."""
import io
import os
import sys
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pdl_load_order  # noqa: E402

HEADER = "\t\tFunction : _ZN9dynsparse4cuda13GemvMmaKernelI6__halfLi4ELb1EEEv\n"
TOP_WAIT = "        /*0210*/                   ACQBULK ;\n"
WEIGHT = "        /*0770*/  @!P4 LDG.E.NA.128.CONSTANT R12, desc[UR6][R118.64] ;\n"
X_NC = "        /*09a0*/  @!P0 LDG.E.128.CONSTANT R60, desc[UR6][R120.64] ;\n"
X_CA = "        /*0be0*/  @!P0 LDG.E.128.STRONG.SM R60, desc[UR6][R120.64] ;\n"
LOOP_WAIT = "        /*0d20*/                   ACQBULK ;\n"


def run(sass, kernels="Gemv"):
    sys.stdin = io.StringIO(sass)
    out = io.StringIO()
    with redirect_stdout(out):
        code = pdl_load_order.main(["--kernels", kernels])
    return code, out.getvalue()


class PdlLoadOrderTest(unittest.TestCase):
    def test_hoisted_x_load_is_found(self):
        code, out = run(HEADER + TOP_WAIT + WEIGHT + X_NC + LOOP_WAIT + X_CA)
        self.assertEqual(code, 1)
        self.assertIn("1 load(s) before its PDL wait", out)
        self.assertIn("R120.64", out)

    def test_x_after_the_wait_passes(self):
        code, out = run(HEADER + TOP_WAIT + WEIGHT + LOOP_WAIT + X_CA + X_NC)
        self.assertEqual(code, 0, out)

    def test_one_wait_has_no_early_path(self):
        code, _ = run(HEADER + TOP_WAIT + X_NC + WEIGHT)
        self.assertEqual(code, 0)

    def test_no_matching_kernel_is_an_error(self):
        code, _ = run(HEADER + TOP_WAIT, kernels="Attention")
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
