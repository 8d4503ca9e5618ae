"""cpplan tune with a step cache, end to end: the real cpplan binary launching
tests/tune/cached_pipeline.py (a first-block cache of its own, caching the steps the test chooses)
through torchrun (tests/cluster/torchrun.py) on one CPU rank, recording into a real SQLite file; then
queries against the same database, which price fbcache with the hit rate the tune measured.

fbcache's defaults (core/cache.h): F1B0, 4 warm-up steps, at most 3 cached steps in a row. Of 10
steps, the pipeline caches steps 5 and 7 (0-based): 2 of the 6 steps after the warm-up, a hit rate
of 1/3, 8 steps computed. The stated hit rate 0.5 caches floor(0.5 x 6) = 3 steps, 7 computed."""
import json
import os
import sqlite3
import subprocess
import unittest

from tune_support import ROOT, TuneTestCase

CPPLAN = os.environ["CPPLAN_BINARY"]
SCRIPT = os.path.join(ROOT, "tests", "tune", "cached_pipeline.py")
CONFIG = os.path.join(ROOT, "docs", "examples", "tune_cpu_config.json")
QUERY = ["--gpus", "1", "--model-config", CONFIG, "--res", "256x256", "--steps", "10"]
SCRIPT_ARGS = ["--", "--config", CONFIG, "--res", "256x256", "--steps", "10"]
CACHED = ["--cached", "5,7"]


class TuneCacheTest(TuneTestCase):
    def setUp(self):
        super().setUp()
        self.rates = self.db + ".tune/hit-rates.json"

    def run_cpplan(self, *argv):
        return subprocess.run([CPPLAN, *argv], env=self.env, capture_output=True, text=True, timeout=600)

    def tune(self, *extra, pipeline_args=CACHED):
        r = self.run_cpplan("tune", SCRIPT, *QUERY, "--device", "cpu", "--top", "1", "--db", self.db, *extra,
                            *SCRIPT_ARGS, *pipeline_args)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        return r

    def query(self, *extra):
        r = self.run_cpplan(*QUERY, "--cache", "fbcache", "--json", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = json.loads(r.stdout)
        return report, report["plans"][0]

    def metrics(self):
        with sqlite3.connect(self.db) as db:
            return dict(db.execute("select m.name, m.value from run_metrics m join runs r on r.id = m.run_id "
                                   "where r.run_key like 'tune-%' and m.name like 'cache.%'").fetchall())

    def test_the_measured_hit_rate_is_recorded_reported_and_prices_a_later_query(self):
        r = self.tune("--cache", "fbcache")
        self.assertEqual(self.metrics(), {"cache.computed_steps": 8, "cache.cached_steps": 2,
                                          "cache.warmup_steps": 4, "cache.hit_rate": 2 / 6})
        self.assertIn("0.33 (0.50)", r.stdout)  # the launch's measured hit rate, the assumed one
        self.assertIn("cache: fbcache hit rate measured 0.33 over 1 run (2 of 6 steps after the warm-up cached; "
                      f"assumed 0.50), written to {self.rates}", r.stdout)
        with open(self.rates) as f:
            [entry] = json.load(f)["entries"]
        self.assertEqual((entry["policy"], entry["cached_steps"], entry["counted_steps"], entry["runs"]),
                         ("fbcache", 2, 6, 1))

        as_json = json.loads(self.tune("--cache", "fbcache", "--json").stdout)  # resumed: nothing launched
        [row] = as_json["rows"]
        self.assertEqual(row["cache"], {"computed_steps": 8, "cached_steps": 2, "warmup_steps": 4, "hit_rate": 2 / 6})
        self.assertEqual((row["assumed_hit_rate"], as_json["cache"]["measured_hit_rate"]), (0.5, 2 / 6))
        # The predicted mean step at the measured rate: (8 computed + 2 cached steps) / 10.
        self.assertAlmostEqual(row["predicted_step_ms"], self.mean_step_ms(self.query("--db", self.db)[1]))

        report, measured = self.query("--db", self.db)
        self.assertIn(f", fbcache hit rate 0.33 measured by cpplan tune over 1 run ({self.rates})",
                      report["prediction_source"])
        self.assertEqual((measured["cache"]["computed_steps"], measured["predicted"]["cached_steps"]), (8, 2))
        _, hand = self.query("--cache-hit-rate", "0.34")  # floor(0.34 x 6) = 2 cached, as measured
        self.assertEqual(measured["predicted"]["image_ms"], hand["predicted"]["image_ms"])
        _, stated = self.query()  # no --db: the stated 0.5, 3 cached
        self.assertEqual(stated["predicted"]["cached_steps"], 3)
        self.assertLess(stated["predicted"]["image_ms"], measured["predicted"]["image_ms"])
        report, given = self.query("--db", self.db, "--cache-hit-rate", "0.5")  # the user's rate wins
        self.assertEqual(given["predicted"]["cached_steps"], 3)
        self.assertNotIn("measured by cpplan tune", report["prediction_source"])

    @staticmethod
    def mean_step_ms(plan):
        p, steps = plan["predicted"], 10
        return ((steps - p["cached_steps"]) * p["step_ms"] + p["cached_steps"] * p["cached_step_ms"]) / steps

    def test_a_record_without_block_counts_keeps_the_stated_hit_rate_with_a_note(self):
        r = self.tune("--cache", "fbcache", pipeline_args=[*CACHED, "--no-probe"])
        self.assertIn("the record has no cache step counts", r.stderr)
        self.assertIn("cache: fbcache hit rate not measured (assumed 0.50; the notes say why)", r.stdout)
        self.assertEqual(self.metrics(), {})
        self.assertFalse(os.path.exists(self.rates))

    def test_a_cache_the_query_does_not_name_is_noted_and_no_hit_rate_kept(self):
        r = self.tune()
        self.assertIn("the pipeline skipped its middle block on 2 of 10 steps, but the query has no --cache", r.stderr)
        self.assertEqual(self.metrics()["cache.cached_steps"], 2)  # the record keeps what was counted
        self.assertFalse(os.path.exists(self.rates))
        self.assertNotIn("hit (assumed)", r.stdout)


if __name__ == "__main__":
    unittest.main()
