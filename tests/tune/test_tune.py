"""cpplan tune end to end: the real cpplan binary launching docs/examples/tune_cpu.py through
torchrun (tests/cluster/torchrun.py, the launcher mended for Debian's torch 1.13) on 2 CPU ranks
over Gloo, recording into a real SQLite file."""
import json
import os
import signal
import sqlite3
import subprocess
import unittest

from tune_support import ROOT, TuneTestCase

CPPLAN = os.environ["CPPLAN_BINARY"]
EXAMPLE = os.path.join(ROOT, "docs", "examples", "tune_cpu.py")
CONFIG = os.path.join(ROOT, "docs", "examples", "tune_cpu_config.json")
FAULTY = os.path.join(ROOT, "tests", "tune", "faulty_pipeline.py")
QUERY = ["--gpus", "2", "--model-config", CONFIG, "--res", "256x256", "--steps", "4", "--device", "cpu"]
SCRIPT_ARGS = ["--", "--config", CONFIG, "--res", "256x256", "--steps", "4"]


class TuneTest(TuneTestCase):
    def command(self, script, *extra, script_args=SCRIPT_ARGS, top="4"):
        return [CPPLAN, "tune", script, *QUERY, "--top", top, "--db", self.db, *extra, *script_args]

    def tune(self, script=EXAMPLE, *extra, script_args=SCRIPT_ARGS, top="4"):
        return subprocess.run(self.command(script, *extra, script_args=script_args, top=top), env=self.env,
                              capture_output=True, text=True, timeout=600)

    def records(self):
        with sqlite3.connect(self.db) as db:
            return db.execute("select run_key, status, step_ms, error from runs where run_key like 'tune-%' "
                              "order by id").fetchall()

    def test_a_raise_a_timeout_and_no_record_are_recorded_and_the_others_measured(self):
        faults = ["--raise", "ring 2", "--hang", "tp 2", "--no-record", "pipefusion 2 (2 patches)"]
        r = self.tune(FAULTY, "--timeout-s", "30", script_args=["--", *faults, *SCRIPT_ARGS[1:]])
        self.assertEqual(r.returncode, 0, r.stderr)
        by_status = {}
        for key, status, step_ms, error in self.records():
            by_status.setdefault(status, []).append(error)
        self.assertEqual(len(by_status.get("ok", [])), 1, r.stdout)  # ulysses 2
        errors = sorted(by_status["failed"])
        self.assertEqual(len(errors), 3, r.stdout)
        self.assertTrue(any("RuntimeError: injected fault: the pipeline of ring 2 raised" in e for e in errors), errors)
        self.assertIn("timed out after 30 s", errors)
        self.assertTrue(any("exited without a record" in e for e in errors), errors)
        for status in ("failed", "timeout"):
            self.assertIn(f"  {status}\n", r.stdout)

    def test_an_allocation_that_fails_is_recorded_oom(self):
        r = self.tune(FAULTY, top="1", script_args=["--", "--oom", "ulysses 2", *SCRIPT_ARGS[1:]])
        self.assertEqual(r.returncode, 0, r.stderr)
        [(key, status, step_ms, error)] = self.records()
        self.assertEqual((status, step_ms), ("oom", None))
        self.assertIn("can't allocate memory", error)

    def test_ctrl_c_stops_the_launch_cleanly_and_keeps_what_was_measured(self):
        p = subprocess.Popen(self.command(EXAMPLE), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        launches = 0
        for line in p.stderr:
            launches += line.startswith("tune: [")
            if launches == 2:  # the second launch started: the first is recorded
                break
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the tune, torchrun and the ranks
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("cpplan tune: cancelled; what finished is recorded in", err)
        self.assertEqual(len(self.records()), 1)
        self.assertIn("cancelled", out)

    def test_a_killed_tune_rerun_measures_no_candidate_twice_and_hardware_local_then_predicts_within_10_percent(self):
        # One tune, killed after its first launch and rerun, then read back by a query: each
        # launch costs two ranks' start-up, so the two checks share the launches.
        probe = subprocess.run([CPPLAN, "probe", "--quick", "--db", self.db], env=self.env, capture_output=True,
                               text=True, timeout=600)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        p = subprocess.Popen(self.command(EXAMPLE, "--hardware", "local"), env=self.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        for line in p.stderr:  # one line per launch: "tune: [1/4] launching ...", then its outcome
            if line.startswith("tune: ") and not line.startswith("tune: ["):
                break
        os.killpg(p.pid, signal.SIGKILL)  # the tune, its torchrun and the ranks
        p.wait()
        p.stderr.close()
        first = self.records()
        self.assertEqual(len(first), 1, "the first launch is recorded before the tune is killed")

        r = self.tune(EXAMPLE, "--hardware", "local")
        self.assertEqual(r.returncode, 0, r.stderr)
        runs = self.records()
        keys = [key for key, *_ in runs]
        self.assertEqual(len(keys), len(set(keys)), f"a candidate measured twice: {runs}")
        self.assertEqual(runs[0], first[0], "the rerun keeps the first record as it was")
        self.assertIn("(earlier)", r.stdout)  # the first launch, read back
        self.assertIn("top-1 regret: ", r.stdout)
        self.assertIn("measured best: ", r.stdout)
        ok = [run for run in runs if run[1] == "ok"]
        self.assertGreaterEqual(len(ok), 2, r.stdout)  # ulysses, ring and tp run in the example
        self.assertIn("calibration: scale ", r.stdout)
        self.assertIn(f"cpplan --hardware local --db {self.db} uses it", r.stdout)

        again = self.tune(EXAMPLE, "--hardware", "local")  # everything measured: nothing launched
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(self.records(), runs)
        self.assertNotIn("launching", again.stderr)

        with sqlite3.connect(self.db) as db:
            measured = db.execute("select ring, ulysses, tp, step_ms from runs where run_key like 'tune-%' "
                                  "and status = 'ok'").fetchall()
        q = subprocess.run([CPPLAN, "--hardware", "local", "--db", self.db, *QUERY[:-2], "--framework", "cpplan",
                            "--json"], env=self.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(q.returncode, 0, q.stderr)
        report = json.loads(q.stdout)
        self.assertIn("step times x this machine's tune (", report["prediction_source"])
        for ring, ulysses, tp, step_ms in measured:
            plan = next(p for p in report["plans"] if (p["ring_degree"], p["ulysses_degree"], p["tp_degree"],
                                                        p["pipefusion_degree"], p["cp_variant"]) ==
                        (ring, ulysses, tp, 1, "ring" if ring > 1 else "ulysses" if ulysses > 1 else "none"))
            predicted = plan["predicted"]["step_ms"]
            self.assertLess(abs(predicted / step_ms - 1), 0.10, f"{plan['label']}: {predicted} ms predicted, "
                                                                   f"{step_ms} ms measured")

    def test_bad_input_is_one_line_and_nothing_is_recorded(self):
        for extra, script, message in (
                ([], "no/such/script.py", "cpplan tune: SCRIPT = no/such/script.py: no such file (the script to launch per candidate)"),
                (["--launcher", "pbs"], EXAMPLE, "cpplan tune: --launcher = pbs: must be torchrun, srun or mpirun"),
                (["--timeout-s", "0"], EXAMPLE, "cpplan tune: --timeout-s = 0: must be above 0")):
            r = self.tune(script, *extra)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertEqual(r.stderr.strip().splitlines()[-1], message)
            self.assertFalse(os.path.exists(self.db))


if __name__ == "__main__":
    unittest.main()
