"""cpplan tune on a real diffusers pipeline, the plan's step cache put on by plan.apply(pipe) with
the framework's own hook: the real cpplan binary launches tests/tune/diffusers_pipeline.py
(diffusers' FluxPipeline and FluxTransformer2DModel from flux_tiny_diffusers.json, on the CPU) through
torchrun on one rank, under the reference venv's python (diffusers 0.42.1, cache-dit 1.5.3, torch
2.x: scripts/reference-venv.sh), recording into a real SQLite file.

The pipeline runs --still: its output projection and timestep embedder are zero, so the latents
never move and the first block's residual is the same on every step. Of 10 steps, by hand:
- diffusers' FirstBlockCacheConfig(threshold=0.05) (no warm-up, no cap on cached steps in a row)
  computes step 0 and caches the 9 others: the residual's relative change is 0.
- cache-dit's DBCacheConfig(Fn_compute_blocks=1, Bn_compute_blocks=0, max_warmup_steps=4,
  max_continuous_cached_steps=3) computes steps 0-3 (warm-up), caches 4-6, computes 7 (three
  cached in a row), caches 8-9: 5 computed, 5 cached.
- diffusers' TaylorSeerCacheConfig(cache_interval=5, disable_cache_before_step=3) computes the
  attention modules on steps 0-2, then on the step after (taylorseer_cache.py: (i - 3 - 1) % 5 == 0):
  4 and 9, 5 of 10; it predicts the attention alone, so the recorder watches the middle block's
  attention (its query projection).
- diffusers' MagCacheConfig(threshold=0.06, max_skip_steps=3, num_inference_steps=10,
  mag_ratios=FLUX_MAG_RATIOS) decides on FLUX's published magnitude ratios, not on the weights: it
  computes steps 0 and 1 (retention_ratio 0.2 of 10, rounded), then 3, 6 and 9, 5 of 10 (diffusers
  0.42.1, measured with these and with random weights alike). Without mag_ratios, the script cpplan
  printed before raised ValueError.
- without --cache the plan has no cache, apply() puts none on, and all 10 steps run.
The recorder counts from the plan's warm-up: fbcache's, 4 steps (core/cache.h: hit rates 6/6 and
5/6); with --framework diffusers, its FirstBlockCache's own, none (9/10); MagCache's retention, 2
(5/8)."""
import json
import os
import sqlite3
import subprocess
import unittest

from tune_support import ROOT, TuneTestCase

CPPLAN = os.environ["CPPLAN_BINARY"]
SCRIPT = os.path.join(ROOT, "tests", "tune", "diffusers_pipeline.py")
CONFIG = os.path.join(ROOT, "tests", "tune", "flux_tiny_diffusers.json")
QUERY = ["--gpus", "1", "--model-config", CONFIG, "--res", "128x128", "--steps", "10"]


class TuneDiffusersTest(TuneTestCase):
    def tune(self, *query, framework="diffusers", probe="block"):
        r = subprocess.run([CPPLAN, "tune", SCRIPT, *QUERY, *query, "--device", "cpu", "--top", "1", "--db", self.db,
                            "--", "--config", CONFIG, "--res", "128x128", "--steps", "10", "--still",
                            "--framework", framework, "--probe", probe],
                           env=self.env, capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        return r

    def counts(self):
        with sqlite3.connect(self.db) as db:
            return dict(db.execute("select m.name, m.value from run_metrics m join runs r on r.id = m.run_id "
                                   "where r.run_key like 'tune-%' and m.name like 'cache.%'").fetchall())

    def test_diffusers_first_block_cache_put_on_by_apply_caches_every_step_after_the_first(self):
        r = self.tune("--cache", "fbcache")
        self.assertEqual(self.counts(), {"cache.computed_steps": 1, "cache.cached_steps": 9,
                                         "cache.warmup_steps": 4, "cache.hit_rate": 1.0})
        # 6 of 6 counted steps cached, the rate kept at --cache-hit-rate's bound, 0.99.
        self.assertIn("cache: fbcache hit rate measured 0.99 over 1 run (6 of 6 steps after the warm-up cached; "
                      "assumed 0.50)", r.stdout)

    def test_diffusers_named_prices_its_first_block_cache_with_no_warm_up(self):
        # --framework diffusers: the plan's cache is FirstBlockCacheConfig's own schedule, no warm-up
        # and no cap, so the recorder counts from step 0: 9 of 10 cached, and a later query with the
        # measured rate computes the one step the hook did.
        r = self.tune("--cache", "fbcache", "--framework", "diffusers")
        self.assertEqual(self.counts(), {"cache.computed_steps": 1, "cache.cached_steps": 9,
                                         "cache.warmup_steps": 0, "cache.hit_rate": 0.9})
        self.assertIn("cache: fbcache hit rate measured 0.90 over 1 run (9 of 10 steps after the warm-up cached; "
                      "assumed 0.50)", r.stdout)
        plan = self.plan_of("--cache", "fbcache", "--framework", "diffusers", "--db", self.db)
        self.assertEqual((plan["cache"]["warmup_steps"], plan["cache"]["computed_steps"]), (0, 1))

    def test_without_a_cache_in_the_plan_apply_puts_none_on_and_every_step_runs(self):
        self.tune()
        self.assertEqual(self.counts(), {"cache.computed_steps": 10, "cache.cached_steps": 0,
                                         "cache.warmup_steps": 0, "cache.hit_rate": 0.0})

    def plan_of(self, *query):
        q = subprocess.run([CPPLAN, *QUERY, *query, "--json"], env=self.env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(q.returncode, 0, q.stderr)
        return json.loads(q.stdout)["plans"][0]

    def test_diffusers_taylorseer_computes_the_steps_cpplans_schedule_counts(self):
        self.tune("--cache", "taylorseer", probe="attention")
        self.assertEqual(self.counts(), {"cache.computed_steps": 5, "cache.cached_steps": 5,
                                         "cache.warmup_steps": 3, "cache.hit_rate": 5 / 7})
        plan = self.plan_of("--cache", "taylorseer")
        self.assertEqual((plan["cache"]["warmup_steps"], plan["cache"]["every"]), (3, 5))
        self.assertEqual((plan["cache"]["computed_steps"], plan["predicted"]["cached_steps"]), (5, 5))

    def test_diffusers_magcache_runs_on_fluxs_ratios_and_a_later_query_prices_its_rate(self):
        r = self.tune("--cache", "magcache")
        # cpplan's magcache computes diffusers' retention, int(0.2 x 10 + 0.5) = 2 steps, first: 5 of
        # the other 8 cached.
        self.assertEqual(self.counts(), {"cache.computed_steps": 5, "cache.cached_steps": 5,
                                         "cache.warmup_steps": 2, "cache.hit_rate": 5 / 8})
        self.assertIn("cache: magcache hit rate measured 0.62 over 1 run", r.stdout)
        plan = self.plan_of("--cache", "magcache", "--db", self.db)
        self.assertEqual((plan["cache"]["computed_steps"], plan["cache"]["max_continuous_cached"]), (5, 3))

    def test_cache_dit_dbcache_caches_as_cpplans_schedule_prices_it(self):
        r = self.tune("--cache", "fbcache", framework="cache-dit")
        self.assertEqual(self.counts(), {"cache.computed_steps": 5, "cache.cached_steps": 5,
                                         "cache.warmup_steps": 4, "cache.hit_rate": 5 / 6})
        self.assertIn("cache: fbcache hit rate measured 0.83 over 1 run", r.stdout)
        # A later query prices the measured rate with cpplan's schedule: the same 5 computed steps.
        plan = self.plan_of("--cache", "fbcache", "--db", self.db)
        self.assertEqual((plan["cache"]["computed_steps"], plan["predicted"]["cached_steps"]), (5, 5))


if __name__ == "__main__":
    unittest.main()
