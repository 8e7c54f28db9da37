#!/usr/bin/env python3
"""Tests of kernel_time.py on a hand-made trace (ctest: KernelTimeTest)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_time  # noqa: E402
import step_table  # noqa: E402

HEADER = ("start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,"
          "registers,name")
# Eager steps of Norm, Gemm and the step's Argmax; the second Gemm starts 20
# ns early (as PDL allows), 5 ns pass idle before the second Argmax, and an
# API row must not count.
ROWS = [
    "0,100,7,1,0,0,4,128,32,void dynsparse::cuda::NormKernel(float)",
    "100,400,7,2,0,0,8,128,32,void dynsparse::cuda::GemmKernel<1>(float)",
    "400,410,7,3,0,0,1,128,32,void dynsparse::cuda::ArgmaxKernel(float)",
    "450,550,7,4,0,0,4,128,32,void dynsparse::cuda::NormKernel(float)",
    "530,800,7,5,0,0,8,128,32,void dynsparse::cuda::GemmKernel<1>(float)",
    "805,815,7,6,0,0,1,128,32,void dynsparse::cuda::ArgmaxKernel(float)",
    "830,840,7,7,0,0,4,128,32,void dynsparse::cuda::NormKernel(float)",
    "460,470,0,8,0,0,0,0,0,api cudaLaunchKernel",
]


class KernelTimeTest(unittest.TestCase):
    def setUp(self):
        handle, self.path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(handle, "w") as f:
            f.write("\n".join([HEADER] + ROWS) + "\n")
        self.addCleanup(os.remove, self.path)

    def test_sums_by_name_over_the_last_step(self):
        kernels = kernel_time.window_kernels(step_table.load(self.path), 1,
                                             "ArgmaxKernel")
        self.assertEqual([k["correlation"] for k in kernels], [4, 5, 6])
        totals = kernel_time.totals_by_name(kernels)
        self.assertEqual(totals["NormKernel"][0], 1)
        self.assertAlmostEqual(totals["NormKernel"][1], 0.1)
        self.assertAlmostEqual(totals["GemmKernel<1>"][1], 0.27)
        # The Gemm's 20 ns beside the Norm go to the Norm; the idle 5 ns
        # before the Argmax to the Argmax.
        self.assertAlmostEqual(totals["GemmKernel<1>"][2], 0.25)
        self.assertAlmostEqual(totals["ArgmaxKernel"][2], 0.015)
        self.assertAlmostEqual(totals["ArgmaxKernel"][3], 0.005)
        self.assertEqual(totals["GemmKernel<1>"][3], 0.0)
        self.assertAlmostEqual(step_table.idle_us(kernels), 0.005)

    def test_too_few_markers_is_an_error(self):
        with self.assertRaises(SystemExit):
            kernel_time.window_kernels(step_table.load(self.path), 2,
                                       "ArgmaxKernel")


class EmptyWindowTest(unittest.TestCase):
    def test_no_kernel_between_the_markers_is_an_error(self):
        handle, path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(handle, "w") as f:
            f.write("\n".join([
                HEADER,
                "0,10,7,1,0,0,1,128,32,void dynsparse::cuda::ArgmaxKernel()",
                "10,20,7,2,0,0,1,128,32,void dynsparse::cuda::ArgmaxKernel()",
            ]) + "\n")
        self.addCleanup(os.remove, path)
        with self.assertRaises(SystemExit):
            kernel_time.window_kernels(step_table.load(path), 1,
                                       "ArgmaxKernel")


if __name__ == "__main__":
    unittest.main()
