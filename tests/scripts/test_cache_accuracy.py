"""scripts/cache_accuracy.py on a hand-made held-out database (a real SQLite file with the columns of
cpplan's runs and run_metrics that the script reads) and hand-made predictions (the JSON objects of
`cpplan run --dry-run --json`'s "predicted", which tests/executor/test_run_cache.cpp checks against
the prediction a run records); its argument errors as a process.

By hand: 160x160 on one rank under F1B0 every 2, three runs measuring 100, 90 and 125 ms of
denoising (median 100), predicted 104: +4.0%. A fourth run with 10% steal is left out. Each run
measures its cached step at 3.3 ms against a computed step of 12 (share 0.275), predicted 3 against
12 (0.25): -9.1%. Its denoising from its own computed step: (16 + 14 x 0.25) x 12 = 234 ms, over
the 100, 90 and 125 it measured: +134%, +160% and +87.2%, median +134.0%. The uncached one-rank run
measures 20 ms a step, predicted 18: -10.0%, and its flags are the configuration's."""
import contextlib
import importlib.util
import io
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "cache_accuracy.py")
spec = importlib.util.spec_from_file_location("cache_accuracy", SCRIPT)
cache_accuracy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cache_accuracy)


def make_held_out(path):
    c = sqlite3.connect(path)
    c.execute("create table runs (id integer primary key, status text, model text, width int, height int, steps int, "
              "warmup int, ring int, ulysses int, step_ms real)")
    c.execute("create table run_metrics (run_id int, step int, name text, value real)")
    cached = {"cache.first_blocks": 1, "cache.last_blocks": 0, "cache.warmup_steps": 2, "cache.every": 2,
              "cache.cached_step_ms": 3.3, "cache.computed_step_ms": 12, "cache.computed_steps": 16,
              "cache.cached_steps": 14}
    for rid, denoise, steal in ((1, 100, 0.0), (2, 90, 0.0), (3, 125, 0.0), (4, 50, 0.10)):
        c.execute("insert into runs values (?, 'ok', 'flux-tiny', 160, 160, 30, 3, 1, 1, 12)", (rid,))
        metrics = dict(cached, **{"host.steal_fraction": steal, "cache.denoise_ms": denoise})
        c.executemany("insert into run_metrics values (?, null, ?, ?)", [(rid, k, v) for k, v in metrics.items()])
    c.execute("insert into runs values (5, 'ok', 'flux-tiny', 160, 160, 30, 3, 1, 1, 20)")
    c.execute("insert into run_metrics values (5, null, 'host.steal_fraction', 0)")
    c.execute("insert into run_metrics values (5, 3, 'step_ms', 99)")  # a per-step metric, not the run's
    c.execute("insert into runs values (6, 'failed', 'flux-tiny', 160, 160, 30, 3, 1, 1, null)")
    c.commit()
    c.close()


PREDICTED = {(160, 1, 0, 2): {"cache": {"denoise_ms": 104, "cached_step_ms": 3, "computed_step_ms": 12}},
             (160, 1, -1, 0): {"step_ms": 18}}


class CacheAccuracy(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.dir.name, "heldout.db")
        make_held_out(self.db)

    def tearDown(self):
        self.dir.cleanup()

    def groups(self):
        return cache_accuracy.held_out_runs(sqlite3.connect(self.db))

    def printed(self, table):
        groups, _ = self.groups()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            table(groups, PREDICTED)
        return out.getvalue()

    def test_runs_by_configuration_without_the_contended_and_failed(self):
        groups, left_out = self.groups()
        self.assertEqual(left_out, 1)
        self.assertEqual(sorted(groups), [(160, 1, -1, 0), (160, 1, 0, 2)])
        self.assertEqual([r["id"] for r in groups[(160, 1, 0, 2)]], [1, 2, 3])
        self.assertEqual(groups[(160, 1, -1, 0)][0]["step_ms"], 20)

    def test_each_configuration_against_the_median_of_its_runs(self):
        out = self.printed(cache_accuracy.whole_runs)
        self.assertIn("| 160x160 | +4.0% | n/a | n/a | n/a | -10.0% (1 runs) / n/a |", out)
        self.assertIn("held-out sizes: 1 of 1 within 10%, MAPE 4.0%, the worst +4.0%", out)

    def test_the_share_and_the_denoising_from_the_runs_own_computed_step(self):
        out = self.printed(cache_accuracy.shares)
        self.assertIn("| 160x160 | 1 rank | F1B0 every 2 | 3 | 0.250 | 0.275 | -9.1% | +134.0% |", out)

    def test_the_flags_of_a_recorded_configuration(self):
        groups, _ = self.groups()
        self.assertEqual(cache_accuracy.run_flags(groups[(160, 1, 0, 2)][0]),
                         ["--model", "flux-tiny", "--res", "160x160", "--steps", "30", "--warmup", "3", "--cache",
                          "fixed", "--cache-fn", "1", "--cache-bn", "0", "--cache-warmup", "2", "--cache-every", "2"])
        uncached = dict(groups[(160, 1, -1, 0)][0], ulysses=2)
        self.assertEqual(cache_accuracy.run_flags(uncached)[-2:], ["--ulysses", "2"])

    def test_bad_arguments_get_one_line_and_exit_2(self):
        none = os.path.join(self.dir.name, "none.db")
        for args, line in (((self.db,), "usage: cache_accuracy.py CPPLAN TRAIN_DB HELDOUT_DB"),
                           ((none, self.db, self.db), f"CPPLAN = {none}: not an executable"),
                           ((sys.executable, none, self.db), f"TRAIN_DB = {none}: not a cpplan database with runs")):
            out = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn(line, out.stderr)
            self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
        self.assertFalse(os.path.exists(none))


if __name__ == "__main__":
    unittest.main()
