"""scripts/published-order.py run as a process on hand-made runs. Rows a, b, c of one source, GPU kind,
size and unit, measured 100, 200 and 300 ms; d on another GPU kind (no pair with the others). By hand:
pairs (a, b), (a, c), (b, c); a baseline that predicts 110, 190, 400 orders all three right."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "published-order.py")


def row(where, measured_ms, predicted_ms, hardware="h100-sxm"):
    return {"where": where, "source": "s", "hardware": hardware, "box": None, "resolution": "1024x1024",
            "per_image": False, "gpus": 1, "plan": where, "measured_ms": measured_ms, "fitted_ms": predicted_ms}


def run_rows(predicted, d_predicted=50.0):
    a, b, c = predicted
    return {"rows": [row("a", 100, a), row("b", 200, b), row("c", 300, c), row("d", 150, d_predicted, "l20")]}


class PublishedOrder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.baseline = os.path.join(self.dir.name, "baseline.json")

    def tearDown(self):
        self.dir.cleanup()

    def write_run(self, name, content):
        path = os.path.join(self.dir.name, name + ".json")
        with open(path, "w") as f:
            json.dump(content, f)
        return f"{name}={path}"

    def script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, self.baseline, *args], capture_output=True, text=True, timeout=60)

    def record(self, predicted):
        out = self.script("--write", "abc1234", self.write_run("shipped", run_rows(predicted)))
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def test_baseline_lists_the_pairs_ordered_right(self):
        # 110 < 250 > 240: (a, b) and (a, c) right, (b, c) wrong.
        self.assertIn("shipped: 2 of 3 pairs ordered right at abc1234", self.record((110, 250, 240)))
        pairs = json.load(open(self.baseline))["ordered"]["shipped"]
        self.assertEqual(sorted(map(tuple, pairs)), [("a", "b"), ("a", "c")])

    def test_a_pair_that_turns_misordered_fails_naming_it(self):
        self.record((110, 190, 400))
        out = self.script(self.write_run("shipped", run_rows((110, 320, 310))))  # (b, c) now wrong
        self.assertEqual(out.returncode, 1)
        self.assertIn("misordered now, ordered right at abc1234: s h100-sxm 1024x1024: b", out.stdout)
        self.assertIn("2 of the 3 pairs ordered right at abc1234 still are", out.stdout)

    def test_a_pair_wrong_at_the_baseline_may_stay_wrong(self):
        self.record((110, 250, 240))
        out = self.script(self.write_run("shipped", run_rows((110, 250, 240))))
        self.assertEqual(out.returncode, 0, out.stdout)

    def test_a_run_the_baseline_lacks_is_an_error(self):
        self.record((110, 190, 400))
        out = self.script(self.write_run("other", run_rows((110, 190, 400))))
        self.assertEqual(out.returncode, 2)
        self.assertIn("other: the baseline has no such run", out.stderr)

    def test_a_baseline_row_missing_from_the_run_is_an_error(self):
        self.record((110, 190, 400))
        rows = run_rows((110, 190, 400))
        rows["rows"] = [r for r in rows["rows"] if r["where"] != "c"]
        out = self.script(self.write_run("shipped", rows))
        self.assertEqual(out.returncode, 2)
        self.assertIn("is not in the run", out.stderr)

    def test_a_new_file_added_at_its_commit_is_checked_with_the_pairs_before(self):
        # The baseline records a, b, c at abc1234; the families file's rows e (100 ms) and f (200 ms)
        # are added at f56ab3e, when predicted 90 and 210 (ordered right). Only the file's own pair is
        # added: (a, b), (a, c), (b, c) stay the old commit's.
        self.record((110, 190, 400))
        fam = "profiles/reference/published-xdit-families.json"
        e, f = (dict(row(f"{fam}: points[{i}]", m, p), source="t") for i, (m, p) in enumerate([(100, 90), (200, 210)]))
        run = run_rows((110, 190, 400))
        run["rows"] += [e, f]
        out = self.script("--add", "f56ab3e", "--file", fam, self.write_run("shipped", run))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(f"shipped: 1 of 1 pairs of {fam} ordered right at f56ab3e; 1 added to the baseline", out.stdout)
        baseline = json.load(open(self.baseline))
        self.assertEqual(baseline["added"][0]["ordered"]["shipped"], [[e["where"], f["where"]]])
        self.assertEqual(len(baseline["ordered"]["shipped"]), 3)
        out = self.script(self.write_run("shipped", run))
        self.assertEqual(out.returncode, 0, out.stdout)
        self.assertIn("4 of the 4 pairs ordered right at abc1234, f56ab3e still are", out.stdout)
        # f now predicted faster than e: the added pair fails, naming the commit it was recorded at.
        run["rows"][-1]["fitted_ms"] = 80
        out = self.script(self.write_run("shipped", run))
        self.assertEqual(out.returncode, 1)
        self.assertIn("misordered now, ordered right at f56ab3e: t h100-sxm 1024x1024", out.stdout)
        # A run of the old rows alone lacks the added file's rows: an error, not a pass.
        out = self.script(self.write_run("shipped", run_rows((110, 190, 400))))
        self.assertEqual(out.returncode, 2)
        self.assertIn("is not in the run", out.stderr)


if __name__ == "__main__":
    unittest.main()
