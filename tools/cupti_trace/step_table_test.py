#!/usr/bin/env python3
"""Tests of step_table.py on a hand-made trace (ctest: StepTableTest)."""
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_table  # noqa: E402

HEADER = ("start_ns,end_ns,stream,correlation,graph,graph_node,grid,block,"
          "registers,name")
# Two graph launches (correlations 5 and 6) and one eager kernel. Launch 5:
# a norm, a GEMV starting 500 ns early (PDL), a side kernel inside the GEMV,
# then 1000 ns with nothing running before the last kernel.
ROWS = [
    "1000,2000,7,5,1,1,1,1024,40,void dynsparse::(anonymous namespace)::"
    "NormKernel<true; true>(dynsparse::NormArgs)",
    "1500,5000,7,5,1,2,500,128,40,void dynsparse::cuda::(anonymous "
    "namespace)::GemvVectorKernel<__half; 1>(float const*)",
    "2500,4000,9,5,1,3,1,1024,40,void dynsparse::TopKSelectKernel<1>(float)",
    "6000,7000,7,5,1,4,36,256,40,void dynsparse::ReduceSplitsKernel(float)",
    "20000,21000,7,6,1,1,1,1024,40,void dynsparse::NormKernel<true; true>()",
    "30000,30500,7,0,0,0,1,32,20,void dynsparse::EmbedKernel()",
]


class StepTableTest(unittest.TestCase):
    def setUp(self):
        handle, self.path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(handle, "w") as f:
            f.write("\n".join([HEADER] + ROWS) + "\n")
        self.addCleanup(os.remove, self.path)

    def test_groups_graph_launches_and_shortens_names(self):
        steps = step_table.steps_of(step_table.load(self.path))
        self.assertEqual([len(s) for s in steps], [4, 1])
        self.assertEqual(steps[0][0]["short"], "NormKernel<true; true>")
        self.assertEqual(steps[0][1]["short"], "GemvVectorKernel<__half; 1>")

    def test_extensions_add_up_to_the_span(self):
        step = step_table.steps_of(step_table.load(self.path))[0]
        step_table.annotate(step)
        self.assertEqual([k["extends_us"] for k in step], [1.0, 3.0, 0.0, 2.0])
        self.assertAlmostEqual(sum(k["extends_us"] for k in step),
                               step_table.span_us(step))
        self.assertEqual(step[1]["gap_us"], -0.5)  # Started before the norm ended.
        self.assertEqual(step[3]["gap_us"], 1.0)
        self.assertAlmostEqual(step_table.idle_us(step), 1.0)

    def test_main_prints_the_median_step(self):
        sys.argv = ["step_table.py", self.path, "--skip", "0"]
        out = io.StringIO()
        with redirect_stdout(out):
            step_table.main()
        text = out.getvalue()
        self.assertIn("2 graph launches", text)
        self.assertIn("| GemvVectorKernel<__half; 1> | 1 | 3.5 | 3.50 | 3.0 |",
                      text)

    def test_a_trace_without_graph_launches_is_an_error(self):
        with open(self.path, "w") as f:
            f.write(HEADER + "\n" + ROWS[-1] + "\n")
        sys.argv = ["step_table.py", self.path, "--skip", "0"]
        with self.assertRaises(SystemExit) as e:
            step_table.main()
        self.assertIn("no graph launches", str(e.exception.code))

    def test_a_malformed_row_names_file_line_and_field(self):
        with open(self.path, "w") as f:
            f.write(HEADER + "\n" + ROWS[0].replace("1000,2000", "1000,x", 1)
                    + "\n")
        with self.assertRaises(SystemExit) as e:
            step_table.load(self.path)
        self.assertIn(f"{self.path}:2: field 'end_ns' is not an integer",
                      str(e.exception.code))
        with open(self.path, "w") as f:
            f.write("start_ns,end_ns\n1,2\n")
        with self.assertRaises(SystemExit) as e:
            step_table.load(self.path)
        self.assertIn(":2: field 'stream' is missing", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
