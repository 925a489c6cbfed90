#!/usr/bin/python3
"""bench/pinning.py, without running anything: a core per poller while there
are cores (in order, the main lcores on a spare core or the first poller's),
scheduler-bound past that; the marks on a figure's record; the cost model's
figure and its summary.md lines; a missing cost_bench named, never raised.
Also the line-rate harness's worker cores (bench/linerate/run).

usage: pinning_test.py BENCH_DIR
"""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import unittest

BENCH = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)
import pinning  # noqa: E402

COST = {"command": "cost_bench ...", "tsc_hz": 2.6e9, "error": None, "benchmarks": {
    "BM_DiadWrite": {"cycles_per_packet": 1498.0, "cycles_per_op": 4494.0,
                     "gbps_per_core": 18.96, "mpps_per_core": 1.74, "us_per_op": 1.73},
    "BM_DiadRead": {"cycles_per_packet": 2362.0, "cycles_per_op": 2362.0,
                    "gbps_per_core": 0.0704, "mpps_per_core": 1.10, "us_per_op": 0.908}}}


class PlanTest(unittest.TestCase):
    def test_a_core_per_poller_and_a_spare_for_main(self):
        p = pinning.plan(["gen", "impair", "A", "B"], [2, 3, 4, 5, 6])
        self.assertFalse(p["scheduler_bound"])
        self.assertEqual(p["assignment"], {"gen": 2, "impair": 3, "A": 4, "B": 5})
        self.assertEqual(p["main_core"], 6)
        self.assertIn("pinned: 4 busy pollers on 5 cores", pinning.describe(p))

    def test_exactly_enough_cores_main_shares_the_first_pollers(self):
        p = pinning.plan(["gen", "A", "B"], [0, 1, 2])
        self.assertFalse(p["scheduler_bound"])
        self.assertEqual(p["main_core"], 0)

    def test_more_pollers_than_cores_is_scheduler_bound(self):
        p = pinning.plan(["gen", "A", "B"], [0, 1])
        self.assertTrue(p["scheduler_bound"])
        self.assertEqual((p["pollers"], p["cores"]), (3, 2))
        self.assertIsNone(p["assignment"])
        self.assertIn("scheduler-bound: 3 busy pollers", pinning.describe(p))

    def test_default_cores_are_this_process_affinity(self):
        self.assertEqual(pinning.plan(["x"])["usable_cores"], pinning.usable_cores())


class MarkTest(unittest.TestCase):
    def test_marks_only_when_bound(self):
        rec = {"goodput_MBps": 32.0}
        pinning.mark(rec, pinning.plan(["gen", "A"], [0, 1]), COST, "BM_DiadWrite")
        self.assertNotIn("scheduler_bound", rec)
        pinning.mark(rec, pinning.plan(["gen", "A", "B"], [0, 1]), COST, "BM_DiadWrite")
        self.assertTrue(rec["scheduler_bound"])
        self.assertEqual((rec["pollers"], rec["cores"]), (3, 2))
        self.assertEqual(rec["cost_model"]["benchmark"], "BM_DiadWrite")
        self.assertEqual(rec["cost_model"]["cycles_per_packet"], 1498.0)

    def test_figure_says_why_there_is_none(self):
        self.assertIn("no cost-model path", pinning.figure(COST, None)["error"])
        self.assertIn("not run", pinning.figure(None, "BM_DiadWrite")["error"])
        self.assertIn("not reported", pinning.figure(COST, "BM_RoceWrite")["error"])

    def test_cells_and_markdown(self):
        cell = pinning.cell(pinning.figure(COST, "BM_DiadWrite"))
        self.assertEqual(cell, "1498 cycles/pkt, 19 Gb/s/core, 1.74 Mpps/core "
                               "(`BM_DiadWrite`)")
        self.assertEqual(pinning.cell(pinning.figure(COST, "BM_DiadRead"), latency=True),
                         "2362 cycles = 0.91 us of CPU (`BM_DiadRead`)")
        bound = pinning.plan(["gen", "A", "B"], [0, 1])
        text = "\n".join(pinning.markdown(bound, COST))
        self.assertIn("**Scheduler-bound: 3 busy pollers on 2 cores**", text)
        self.assertIn("| `BM_DiadWrite` | 1498 | 19 | 1.74 |", text)
        self.assertIn("| `BM_DiadRead` | 2362 | 0.0704 | 1.10 |", text)
        free = "\n".join(pinning.markdown(pinning.plan(["gen"], [0, 1]), None))
        self.assertNotIn("Scheduler-bound", free)
        self.assertIn("Pinning: pinned", free)

    def test_top_fields(self):
        t = pinning.top(pinning.plan(["gen", "A", "B"], [0, 1]), COST)
        self.assertEqual((t["scheduler_bound"], t["pollers"], t["cores"]), (True, 3, 2))
        self.assertIs(t["cost_model"], COST)


class CostModelTest(unittest.TestCase):
    def test_missing_binary_is_an_error_not_an_exception(self):
        with tempfile.TemporaryDirectory() as build:
            c = pinning.cost_model(build, ["BM_DiadWrite"])
        self.assertIn("cost model missing", c["error"])
        self.assertIn("ninja -C", c["error"])
        self.assertEqual(c["benchmarks"], {})
        rec = {}
        pinning.mark(rec, pinning.plan(["a", "b", "c"], [0]), c, "BM_DiadWrite")
        self.assertIn("cost model missing", rec["cost_model"]["error"])
        self.assertIn("cost model missing", pinning.cell(rec["cost_model"]))


class LinerateWorkersTest(unittest.TestCase):
    def test_worker_cores(self):
        sys.path.insert(0, os.path.join(BENCH, "linerate"))
        loader = importlib.machinery.SourceFileLoader(
            "linerate_run", os.path.join(BENCH, "linerate", "run"))
        spec = importlib.util.spec_from_loader("linerate_run", loader)
        run = importlib.util.module_from_spec(spec)
        loader.exec_module(run)

        class A:
            cores = [0, 1, 2, 3]
        self.assertEqual(run.worker_cores(A, 1), [1])
        self.assertEqual(run.worker_cores(A, 3), [1, 2, 3])
        self.assertEqual(run.worker_cores(A, 4), [1, 2, 3, 0])  # shares the generator's
        self.assertEqual(run.pollers(2), ["spinnic-gen", "HPU 1", "HPU 2"])


if __name__ == "__main__":
    unittest.main()
