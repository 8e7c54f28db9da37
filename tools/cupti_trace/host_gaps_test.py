#!/usr/bin/env python3
"""Tests of host_gaps.py on a hand-made trace (ctest: HostGapsTest)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_gaps  # noqa: E402
import step_table  # noqa: E402

HEADER = ("start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,"
          "registers,name")
# Host: a launch (correlation 1) at 100-110; a runtime launch (2) at 150-170
# with a driver call nested inside (3) at 155-165; a sync (4) at 200-300.
# Device: the kernels of 1 and 2.
ROWS = [
    "100,110,0,1,0,0,0,0,0,api cudaLaunchKernel",
    "150,170,0,2,0,0,0,0,0,api cudaLaunchKernel",
    "155,165,0,3,0,0,0,0,0,api cuLaunchKernel",
    "200,300,0,4,0,0,0,0,0,api cudaStreamSynchronize",
    "120,180,7,1,0,0,4,128,32,void dynsparse::cuda::NormKernel(float)",
    "180,260,7,2,0,0,8,128,32,void dynsparse::cuda::GemvKernel<1>(float)",
]


class HostGapsTest(unittest.TestCase):
    def setUp(self):
        handle, self.path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(handle, "w") as f:
            f.write("\n".join([HEADER] + ROWS) + "\n")
        self.addCleanup(os.remove, self.path)

    def test_charges_gaps_and_calls_to_what_they_launch(self):
        totals, window = host_gaps.charge(step_table.load(self.path), 0.0)
        self.assertEqual(totals["NormKernel"], [1, 0, 10])
        self.assertEqual(totals["GemvKernel<1>"], [1, 40, 20])  # nested once
        self.assertEqual(totals["api cudaStreamSynchronize"], [1, 30, 100])
        self.assertNotIn("api cuLaunchKernel", totals)
        self.assertEqual(window, 200)

    def test_window_starts_at_the_fraction(self):
        totals, _ = host_gaps.charge(step_table.load(self.path), 0.45)
        self.assertEqual(list(totals), ["api cudaStreamSynchronize"])
        self.assertEqual(totals["api cudaStreamSynchronize"][1], 30)
        by_time, _ = host_gaps.charge(step_table.load(self.path), 0.0,
                                      last_ms=110e-6)  # from 190 ns
        self.assertEqual(by_time, totals)


if __name__ == "__main__":
    unittest.main()
