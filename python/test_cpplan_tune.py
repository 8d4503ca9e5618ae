"""cpplan.current_plan() and cpplan.record() as a script under `cpplan tune` uses them: the plan
from CPPLAN_PLAN (the JSON of `cpplan --json` with the launch's "tune" settings), or planned here."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import cpplan

CPPLAN = os.environ["CPPLAN_BINARY"]


def tune_plan_json(out):
    """A plan as `cpplan tune` passes it: `cpplan --json`'s first plan, and the launch's settings."""
    report = json.loads(subprocess.run([CPPLAN, "--gpus", "2", "--model", "flux-tiny", "--res", "128x128", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    plan = report["plans"][0]
    plan["tune"] = {"model": "flux-tiny", "runtime": "diffusers", "width": 128, "height": 128, "frames": 1,
                    "steps": 2, "device": "cpu", "out": out}
    return plan


class CurrentPlanTest(unittest.TestCase):
    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ("CPPLAN_PLAN", "WORLD_SIZE")}

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def test_under_tune_the_plan_is_the_environment_s(self):
        with tempfile.TemporaryDirectory() as d:
            j = tune_plan_json(os.path.join(d, "runs.jsonl"))
            os.environ["CPPLAN_PLAN"] = json.dumps(j)
            plan = cpplan.current_plan(model="ignored under tune")
            self.assertEqual(plan.label, j["label"])
            self.assertEqual(plan.tune["steps"], 2)
            self.assertEqual(plan.degrees()["ulysses_degree"], j["ulysses_degree"])

    def test_outside_tune_it_plans_on_world_size_gpus(self):
        os.environ.pop("CPPLAN_PLAN", None)
        os.environ["WORLD_SIZE"] = "4"
        plan = cpplan.current_plan(model="flux.1-dev", width=1008, height=1008)
        self.assertEqual(plan.label, "ulysses 4")  # README: Ulysses Anything over 4 GPUs at 1008x1008
        self.assertEqual(plan.diffusers_config(), {"ulysses_degree": 4, "ulysses_anything": True})
        self.assertEqual(plan.tune, {})

    def test_a_pipe_without_diffusers_or_cache_dit_gets_xdits_arguments(self):
        os.environ.pop("CPPLAN_PLAN", None)
        plan = cpplan.current_plan(model="flux.1-dev", gpus=2, width=1024, height=1024, framework="xdit")
        self.assertEqual(plan.apply(object()), plan.xdit_args())

    def test_record_writes_the_plan_s_line_into_the_tune_s_file(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "runs.jsonl")
            os.environ["CPPLAN_PLAN"] = json.dumps(tune_plan_json(out))
            with cpplan.record(None) as rec:
                rec.step()
                rec.step()
            line = json.loads(open(out).read())
            self.assertEqual((line["model"], line["width"], line["steps"], line["device"]), ("flux-tiny", 128, 2, "cpu"))
            self.assertEqual(line["ulysses_degree"] * line["ring_degree"] * line["tp_degree"], 2)
            self.assertTrue(callable(cpplan.record), "importing cpplan.record (the recorder) left cpplan.record the function")

    def test_record_outside_tune_needs_a_file(self):
        os.environ.pop("CPPLAN_PLAN", None)
        plan = cpplan.current_plan(model="flux.1-dev", gpus=2)
        with self.assertRaisesRegex(ValueError, "out = None: record"):
            cpplan.record(None, plan=plan, model="flux.1-dev", width=1024, height=1024)


if __name__ == "__main__":
    unittest.main()
