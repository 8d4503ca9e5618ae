"""Tests of the Python module cpplan over the built extension and the real profiles, checked
against the real cpplan binary: ctest runs them with Debian's python3, PYTHONPATH=<build>/python
and CPPLAN_BINARY=<build>/cli/cpplan (python/CMakeLists.txt)."""

import ast
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock
import warnings

import cpplan

BINARY = os.environ.get("CPPLAN_BINARY", "")

# The public FLUX.1-dev transformer/config.json (black-forest-labs/FLUX.1-dev), its model fields.
FLUX_DEV_CONFIG = {
    "_class_name": "FluxTransformer2DModel",
    "attention_head_dim": 128,
    "guidance_embeds": True,
    "in_channels": 64,
    "joint_attention_dim": 4096,
    "num_attention_heads": 24,
    "num_layers": 19,
    "num_single_layers": 38,
    "patch_size": 1,
    "pooled_projection_dim": 768,
}


def cli(*args):
    """The cpplan binary's exit code, stdout and stderr for args."""
    if not BINARY:
        raise unittest.SkipTest("CPPLAN_BINARY is not set (ctest sets it to the built cpplan)")
    r = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def cli_error(*args):
    """The one-line message cpplan prints for bad input (exit 3), without its "cpplan: " prefix."""
    rc, _, err = cli(*args)
    assert rc == 3, (rc, err)
    lines = [l for l in err.splitlines() if l.startswith("cpplan: ")]
    assert len(lines) == 1, err
    return lines[0][len("cpplan: "):]


def no_gpu_nvidia_smi(directory):
    """PATH with `directory` first, holding an nvidia-smi that finds no GPU as the real one says on a
    machine without one (exit 6): the planner's hardware guess then has no local GPU anywhere."""
    script = os.path.join(directory, "nvidia-smi")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    os.chmod(script, 0o755)
    return directory + os.pathsep + os.environ.get("PATH", "")


def function_parameters(path, name):
    """The parameter names of the top-level function `name` in the Python file at `path`, read
    without importing it (its imports need torch)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return [a.arg for a in function.args.args]


class FormatsAndCaches(unittest.TestCase):
    """dtype="any" and cache="any", as `cpplan --dtype any --cache any` (issue 56)."""

    QUERY = dict(gpus=8, width=1024, height=1024, hardware="h100-sxm", dtype="any", cache="any")
    FLAGS = ("--gpus", "8", "--res", "1024x1024", "--hardware", "h100-sxm", "--dtype", "any", "--cache", "any")

    def test_the_plans_are_the_cli_json_plans_with_their_format_and_cache(self):
        plans = cpplan.plan(**self.QUERY)
        _, out, _ = cli(*self.FLAGS, "--json")
        report = json.loads(out)
        self.assertEqual([p.json for p in plans], report["plans"])
        # Every plan says the format and the cache it was ranked with; an H100 has no FP4 tensor cores.
        self.assertEqual({p.dtype for p in plans}, {"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8", "int8-weight-only"})
        # TaylorSeer and MagCache are diffusers' hooks, which reduce nothing across ranks: ranked
        # (the query's caches), but no plan of 8 GPUs runs them.
        self.assertEqual([c["policy"] if c else "none" for c in report["caches"]],
                         ["none", "fbcache", "dbcache", "teacache", "taylorseer", "magcache"])
        policies = {p.cache["policy"] if p.cache else "none" for p in plans}
        self.assertEqual(policies, {"none", "fbcache", "dbcache", "teacache"})
        self.assertRegex(repr(plans[0]), r"^<Plan [^(]+ \([a-z0-9-]+, [a-z]+\): ")

    def test_the_rows_and_framework_choices_name_their_format_and_cache(self):
        rec = cpplan.recommend(**self.QUERY)
        top = rec.plans[0]
        self.assertEqual(rec.rows[0]["label"], top.label)
        self.assertEqual(rec.rows[0]["dtype"], top.dtype)
        self.assertEqual(rec.rows[0]["cache"], top.cache["policy"] if top.cache else "none")
        for choice in rec.framework_choices:
            if choice["plan"] is not None:
                self.assertIn(choice["dtype"], {"bf16", "fp8", "fp8-row", "fp8-weight-only", "int8", "int8-weight-only"})

    def test_bad_axes_raise_the_clis_one_line(self):
        for flags, keywords in [(("--cache", "fbcache,lru"), dict(cache="fbcache,lru")),
                                (("--dtype", "any,fp8"), dict(dtype="any,fp8")),
                                (("--dtype", "bf16,nvfp4"), dict(dtype="bf16,nvfp4"))]:
            with self.subTest(flags=flags):
                with self.assertRaises(cpplan.InvalidInput) as e:
                    cpplan.plan(gpus=8, hardware="h100-sxm", **keywords)
                self.assertEqual(str(e.exception), cli_error("--gpus", "8", "--hardware", "h100-sxm", *flags))


class Planning(unittest.TestCase):
    def test_the_acceptance_line_prints_ulysses_4_with_ulysses_anything(self):
        r = subprocess.run([sys.executable, "-c", 'import cpplan; print(cpplan.plan(model="flux.1-dev", gpus=4, '
                            'width=1008, height=1008)[0].diffusers_config())'],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "{'ulysses_degree': 4, 'ulysses_anything': True}\n")

    def test_the_top_plan_is_a_context_parallel_config(self):
        best = cpplan.plan(model="flux.1-dev", gpus=4, width=1008, height=1008)[0]
        self.assertEqual(best.diffusers_config_class(), "ContextParallelConfig")
        self.assertEqual(best.diffusers_config(), {"ulysses_degree": 4, "ulysses_anything": True})
        # The keyword arguments in the order of the snippet's expression.
        kwargs = ", ".join(f"{k}={v!r}" for k, v in best.diffusers_config().items())
        self.assertEqual(f"ContextParallelConfig({kwargs})", best.json["diffusers_config"]["expression"])

    def test_the_plans_are_the_cli_json_plans(self):
        plans = cpplan.plan(model="flux.1-dev", gpus=4, width=1008, height=1008, hardware="h100-sxm")
        _, out, _ = cli("--model", "flux.1-dev", "--gpus", "4", "--res", "1008x1008", "--hardware", "h100-sxm",
                        "--json")
        report = json.loads(out)
        self.assertEqual(len(plans), report["valid_plans"])
        self.assertEqual([p.json for p in plans], report["plans"])

    def test_all_lists_the_invalid_plans_after_the_valid_ones(self):
        plans = cpplan.plan(gpus=8, width=1024, height=1024, hardware="h100-sxm", all=True)
        _, out, _ = cli("--gpus", "8", "--res", "1024x1024", "--hardware", "h100-sxm", "--json", "--all")
        report = json.loads(out)
        self.assertEqual(len(plans), report["valid_plans"] + report["invalid_plans"])
        valid = [p.valid for p in plans]
        self.assertEqual(valid, sorted(valid, reverse=True))
        self.assertFalse(plans[-1].valid)
        self.assertIn("invalid", repr(plans[-1]))

    def test_top_keeps_the_fastest_plans(self):
        every = cpplan.plan(gpus=8, width=1024, height=1024, hardware="h100-sxm")
        top = cpplan.plan(gpus=8, width=1024, height=1024, hardware="h100-sxm", top=3)
        self.assertEqual([p.json for p in top], [p.json for p in every[:3]])
        step_ms = [p.step_ms for p in every]
        self.assertLessEqual(step_ms[0], step_ms[-1])

    def test_fields_of_the_plan_and_of_its_prediction_are_attributes(self):
        best = cpplan.plan(gpus=4, width=1008, height=1008, hardware="h100-sxm")[0]
        self.assertEqual(best.label, best.json["label"])
        self.assertEqual(best.ulysses_degree, 4)
        self.assertEqual(best.step_ms, best.json["predicted"]["step_ms"])
        self.assertEqual(best.image_ms, best.json["predicted"]["image_ms"])
        self.assertIn("step_ms", dir(best))
        with self.assertRaises(AttributeError) as e:
            best.no_such_field
        self.assertIn("no_such_field", str(e.exception))
        self.assertRegex(repr(best), r"^<Plan ulysses 4: [0-9.]+ ms/step, [0-9.]+ s/image, peak [0-9.]+ GiB; runs in ")

    def test_numbers_reach_the_options_as_the_cli_flags(self):
        plans = cpplan.plan(model="wan2.1-t2v-1.3b", gpus=2, width=832, height=480, frames=33, steps=10,
                            hardware="h100-sxm", top=1)
        _, out, _ = cli("--model", "wan2.1-t2v-1.3b", "--gpus", "2", "--res", "832x480", "--frames", "33",
                        "--steps", "10", "--hardware", "h100-sxm", "--json")
        self.assertEqual(plans[0].json, json.loads(out)["plans"][0])


# The 33 query flags of `cpplan` (cpplan --help), each with a value off its default: the keyword
# Python takes for it is the flag without its dashes, '-' written '_'.
QUERY_FLAG_VALUES = {
    "--gpus": "2", "--res": "512x512", "--frames": "1", "--model": "sd3.5-medium", "--model-config": None,
    "--hardware": "h200-sxm", "--steps": "10", "--attention-backend": "cudnn", "--dtype": "fp8",
    "--cache": "fbcache", "--cache-fn": "2", "--cache-bn": "1", "--cache-warmup": "2", "--cache-every": "3",
    "--cache-hit-rate": "0.3", "--cache-max-cached": "2", "--batch": "2",
    "--text-tokens": "256", "--runtime": "xdit", "--text-encoder": "offloaded", "--vae": "tiled",
    "--offload-text-encoders": True, "--offload-idle-transformer": True, "--host-mem": "64", "--profiles": None,
    "--framework": "xdit", "--framework-version": "xdit-2025", "--topology": "4x-a100-pcie",
    "--topology-file": None, "--nodes": "2", "--num-pipeline-patch": "8", "--pipefusion-warmup-steps": "2",
    "--all": True,
}
SOURCE_PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiles")


class QueryFlags(unittest.TestCase):
    def test_python_takes_every_query_flag(self):
        keys = {f["key"] for f in cpplan.query_fields()}
        expected = {flag[2:].replace("-", "_") for flag in QUERY_FLAG_VALUES}
        self.assertEqual(keys, expected)
        flags = {f["flag"] for f in cpplan.query_fields()}
        self.assertEqual(flags, set(QUERY_FLAG_VALUES))

    def test_each_query_flag_reaches_the_query_as_the_clis(self):
        """Each flag set alone on a base query: Python's plans are the CLI's, or its error the CLI's."""
        base = ["--model", "flux.1-dev", "--gpus", "4", "--hardware", "h100-sxm"]
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            with open(config, "w") as f:
                json.dump(FLUX_DEV_CONFIG, f)
            values = dict(QUERY_FLAG_VALUES)
            values["--model-config"] = config
            values["--profiles"] = tmp  # an empty directory of extra profiles
            values["--topology-file"] = os.path.join(SOURCE_PROFILES, "topologies", "4x-a100-pcie.toml")
            for flag, value in values.items():
                with self.subTest(flag=flag):
                    args = list(base)
                    if flag in ("--model", "--model-config", "--gpus", "--hardware"):
                        i = args.index(flag) if flag in args else None
                        if flag == "--model-config":
                            del args[0:2]  # --model-config replaces --model
                        elif i is not None:
                            del args[i:i + 2]
                    if flag in ("--topology", "--topology-file", "--nodes"):
                        del args[args.index("--hardware"):args.index("--hardware") + 2]
                    kwargs = {args[i][2:].replace("-", "_"): args[i + 1] for i in range(0, len(args), 2)}
                    key = flag[2:].replace("-", "_")
                    kwargs[key] = value
                    args += [flag] if value is True else [flag, value]
                    rc, out, err = cli(*args, "--json")
                    if rc == 0:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            plans = cpplan.plan(**kwargs)
                        self.assertEqual([p.json for p in plans[:3]], json.loads(out)["plans"][:3])
                    else:
                        self.assertEqual(rc, 3, err)
                        with self.assertRaises(cpplan.InvalidInput) as e:
                            cpplan.plan(**kwargs)
                        self.assertEqual(str(e.exception), cli_error(*args, "--json"))

    def test_a_keyword_that_is_no_query_flag_is_a_type_error(self):
        with self.assertRaises(TypeError) as e:
            cpplan.plan(gpus=4, colour="red")
        self.assertIn("colour", str(e.exception))


class Frameworks(unittest.TestCase):
    def test_xdit_args_of_the_top_plan_set_ulysses_4(self):
        best = cpplan.plan(gpus=4, width=1024, height=1024, hardware="h100-sxm")[0]
        args = best.xdit_args()
        self.assertIn("--ulysses_degree", args)
        self.assertEqual(args[args.index("--ulysses_degree") + 1], "4")
        self.assertTrue(all(isinstance(a, str) for a in args))

    def test_xdit_args_of_an_anything_plan_raise_xdits_reason(self):
        best = cpplan.plan(gpus=4, width=1008, height=1008, hardware="h100-sxm")[0]
        with self.assertRaises(cpplan.UnsupportedPlan) as e:
            best.xdit_args()
        self.assertEqual(str(e.exception), best.frameworks_unavailable["xdit"])
        self.assertEqual(e.exception.framework, "xdit")

    def test_sglang_and_vllm_omni_args_of_a_qwen_image_plan_carry_its_degrees(self):
        # qwen-image at 1024x1024 on 4 GPUs, plan ulysses 2 x ring 2: SGLang Diffusion's flags and
        # vLLM-Omni's (its table: "Qwen-Image family ...: all five").
        plans = cpplan.plan(model="qwen-image", gpus=4, width=1024, height=1024, hardware="h100-sxm", all=True)
        p = next(p for p in plans if p.label == "ring 2 x ulysses 2" and p.valid
                 and p.text_encoder == "replicated" and p.vae == "single")
        self.assertEqual(p.sglang_args(), ["--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree", "2"])
        self.assertEqual(p.vllm_omni_args(), ["--usp", "2", "--ring", "2", "--cfg-parallel-size", "1",
                                              "--tensor-parallel-size", "1"])

    def test_vllm_omni_args_of_a_plan_it_cannot_run_raise_its_reason(self):
        # FLUX.1-dev: vLLM-Omni's table gives it "CFG, TP, HSDP", no sequence parallelism.
        best = cpplan.plan(gpus=4, width=1024, height=1024, hardware="h100-sxm")[0]
        with self.assertRaises(cpplan.UnsupportedPlan) as e:
            best.vllm_omni_args()
        self.assertEqual(e.exception.framework, "vllm-omni")
        self.assertEqual(str(e.exception), "vLLM-Omni offers no sequence parallelism for this model")

    def test_a_plan_diffusers_refuses_raises_diffusers_reason(self):
        plans = cpplan.plan(gpus=8, width=1024, height=1024, hardware="h100-sxm")
        refused = [p for p in plans if "diffusers" in (p.frameworks_unavailable or {})]
        self.assertTrue(refused, "no plan at 8 GPUs that diffusers cannot run")
        p = refused[0]
        reason = p.json["frameworks_unavailable"]["diffusers"]
        with self.assertRaises(cpplan.UnsupportedPlan) as e:
            p.diffusers_config()
        self.assertEqual(str(e.exception), reason)
        self.assertEqual(e.exception.label, p.label)
        with self.assertRaises(cpplan.UnsupportedPlan) as e:
            p.diffusers_config_class()
        self.assertEqual(str(e.exception), reason)

    def test_framework_keeps_the_plans_it_runs(self):
        # qwen-image on 4 GPUs: the fastest plan (ulysses 2 x cfg 2) runs nowhere; diffusers' is ulysses 4.
        plans = cpplan.plan(model="qwen-image", gpus=4, width=1328, height=1328, hardware="h100-sxm",
                            framework="diffusers")
        self.assertEqual(plans[0].label, "ulysses 4")
        self.assertTrue(all("diffusers" in p.frameworks for p in plans))
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(gpus=4, framework="deepspeed")
        self.assertEqual(str(e.exception), "--framework = deepspeed: must be diffusers, xdit, cache-dit, sglang, vllm-omni, cpplan or any")

    def test_xdit_runs_cogvideox_with_the_vae_on_one_gpu(self):
        # xDiT's cogvideox_usp_example.py runs ulysses 2 x cfg 2 and refuses the parallel VAE
        # (shared/reference/frameworks.md): the plan is xDiT's with the VAE on one GPU.
        plans = cpplan.plan(model="cogvideox-5b", gpus=4, hardware="l40", framework="xdit")
        self.assertEqual(plans[0].label, "ulysses 2 x cfg 2")
        self.assertEqual(plans[0].vae, "single")
        self.assertIn("--use_cfg_parallel", plans[0].xdit_args())
        # A CogVideoX-2b transformer config (THUDM/CogVideoX-2b, tests/data/diffusers) gets xDiT too.
        here = os.path.dirname(os.path.abspath(__file__))
        config = os.path.join(here, "..", "tests", "data", "diffusers", "cogvideox-2b", "config.json")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the template's encoders and VAE: no pipeline folder
            derived = cpplan.plan(model_config=config, gpus=4, hardware="l40", framework="xdit")
        self.assertTrue(derived)
        self.assertTrue(all("xdit" in p.frameworks for p in derived))

    def test_the_clis_notes_are_warnings(self):
        with tempfile.TemporaryDirectory() as d, \
                unittest.mock.patch.dict(os.environ, {"PATH": no_gpu_nvidia_smi(d)}):
            with self.assertWarns(UserWarning) as w:
                cpplan.plan(gpus=4, width=1008, height=1008)
        self.assertEqual(str(w.warning), "no local GPU found by nvidia-smi; planning for h100-sxm (set --hardware)")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cpplan.plan(gpus=4, width=1008, height=1008, hardware="h100-sxm")  # nothing to note

    def test_the_pipeline_recorder_is_in_the_package(self):
        # Read, not imported: the recorder imports torch, which this python3 need not have.
        recorder = os.path.join(os.path.dirname(cpplan.__file__), "record.py")
        self.assertEqual(function_parameters(recorder, "record")[:2], ["out", "pipe"])

    def test_an_invalid_plan_raises_its_reasons(self):
        plans = cpplan.plan(gpus=8, width=1024, height=1024, hardware="h100-sxm", all=True)
        invalid = next(p for p in plans if not p.valid)
        with self.assertRaises(cpplan.UnsupportedPlan) as e:
            invalid.diffusers_config()
        self.assertIn(invalid.reasons[0], str(e.exception))
        with self.assertRaises(AttributeError) as e:
            invalid.step_ms
        self.assertIn("invalid", str(e.exception))

    def test_an_invalid_plans_violations_and_rejection_groups_carry_rule_ids(self):
        # 1008x1008: 3969 image tokens, odd; Ring 4 breaks the even split (the spec's worked example).
        plans = cpplan.plan(gpus=4, width=1008, height=1008, hardware="h100-sxm", all=True)
        ring4 = next(p for p in plans if p.label == "ring 4" and not p.valid)  # not Ring Anything
        self.assertEqual([v["rule_id"] for v in ring4.violations], ["even-split-image-tokens"])
        self.assertEqual(ring4.violations[0]["lever"], "resolution")
        rec = cpplan.recommend(gpus=4, width=1008, height=1008, hardware="h100-sxm")
        self.assertEqual(rec.rejected[0]["rule_id"], "even-split-image-tokens")
        self.assertEqual(rec.rejected[0]["argument"], "width/height")

    def test_a_tensor_parallel_plan_is_a_tensor_parallel_config(self):
        plans = cpplan.plan(gpus=4, width=1024, height=1024, hardware="h100-sxm")
        tp = next(p for p in plans if p.tp_degree == 4)
        self.assertEqual(tp.diffusers_config_class(), "TensorParallelConfig")
        self.assertEqual(tp.diffusers_config(), {"tp_degree": 4})

    def test_a_single_gpu_plan_needs_no_parallel_config(self):
        single = cpplan.plan(gpus=1, width=1024, height=1024, hardware="h100-sxm")[0]
        self.assertEqual(single.diffusers_config(), {})
        self.assertIsNone(single.diffusers_config_class())


class Errors(unittest.TestCase):
    def test_gpus_0_raises_the_clis_message(self):
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(model="flux.1-dev", gpus=0)
        self.assertEqual(str(e.exception), cli_error("--gpus", "0"))
        self.assertIsInstance(e.exception, ValueError)

    def test_an_unknown_model_raises_the_clis_message(self):
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(model="flux.9-nope", gpus=4)
        self.assertEqual(str(e.exception), cli_error("--model", "flux.9-nope", "--gpus", "4"))
        self.assertIn("flux.9-nope", str(e.exception))

    def test_a_bad_resolution_raises_the_clis_message(self):
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(gpus=4, width=1000, height=1000, hardware="h100-sxm")
        self.assertEqual(str(e.exception), cli_error("--gpus", "4", "--res", "1000x1000", "--hardware", "h100-sxm"))

    def test_model_and_model_config_together_are_refused(self):
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(model="flux.1-dev", model_config=FLUX_DEV_CONFIG, gpus=4)
        self.assertIn("model_config", str(e.exception))

    def test_width_without_height_names_height(self):
        with self.assertRaises(ValueError) as e:
            cpplan.plan(gpus=4, width=1024)
        self.assertIn("height", str(e.exception))
        with self.assertRaises(ValueError) as e:
            cpplan.plan(gpus=4, height=1024)
        self.assertIn("width", str(e.exception))

    def test_a_model_config_of_another_type_is_refused(self):
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(model_config=42, gpus=4)
        self.assertIn("model_config", str(e.exception))


class ModelConfig(unittest.TestCase):
    def assert_same_ranking(self, plans, expected):
        self.assertEqual([p.label for p in plans], [p.label for p in expected])
        for got, want in zip(plans, expected):
            self.assertAlmostEqual(got.step_ms, want.step_ms, delta=1e-9 * want.step_ms)

    def test_the_flux_dev_config_dict_ranks_as_flux_1_dev(self):
        query = dict(gpus=4, width=1008, height=1008, hardware="h100-sxm")
        self.assert_same_ranking(cpplan.plan(model_config=FLUX_DEV_CONFIG, **query),
                                 cpplan.plan(model="flux.1-dev", **query))

    def test_a_frozen_dict_with_tuples_is_accepted(self):
        # diffusers' FrozenDict is an OrderedDict; configs hold tuples (axes_dims_rope).
        class FrozenDict(collections.OrderedDict):
            pass

        config = FrozenDict(FLUX_DEV_CONFIG, axes_dims_rope=(16, 56, 56), _diffusers_version="0.35.0")
        query = dict(gpus=4, width=1008, height=1008, hardware="h100-sxm")
        self.assert_same_ranking(cpplan.plan(model_config=config, **query), cpplan.plan(model="flux.1-dev", **query))

    def test_a_config_json_path_ranks_as_flux_1_dev(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "config.json")
            with open(path, "w") as f:
                json.dump(FLUX_DEV_CONFIG, f)
            query = dict(gpus=4, width=1008, height=1008, hardware="h100-sxm")
            self.assert_same_ranking(cpplan.plan(model_config=path, **query), cpplan.plan(model="flux.1-dev", **query))

    def test_a_config_without_heads_raises_one_line(self):
        config = {k: v for k, v in FLUX_DEV_CONFIG.items() if k != "num_attention_heads"}
        with self.assertRaises(cpplan.InvalidInput) as e:
            cpplan.plan(model_config=config, gpus=4)
        self.assertIn("num_attention_heads", str(e.exception))
        self.assertNotIn("\n", str(e.exception))


if __name__ == "__main__":
    unittest.main()
