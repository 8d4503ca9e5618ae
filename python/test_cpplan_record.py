"""Unit tests of cpplan_record.py on the CPU: run with `python3 -m unittest test_cpplan_record` in
python/ (ctest does, with an interpreter that has torch)."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

import torch

import cpplan_record
from cpplan_record import record

KEYS = ["cpplan_record", "model", "runtime", "hardware", "device", "gpu_name", "gpu_count", "world_size", "torch",
        "cuda", "host", "started_at", "finished_at", "width", "height", "frames", "steps", "batch", "ring_degree",
        "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree", "ulysses_anything", "ring_anything",
        "text_encoder", "vae", "step_ms", "text_encode_ms", "vae_decode_ms", "image_ms", "peak_mem_bytes",
        "peak_mem_kind", "phase_mem", "cache_probe", "cache_computed_steps", "cache_cached_steps",
        "cache_warmup_steps", "cache_hit_rate"]

# A pipeline loaded, encoded, denoised and decoded in a process of its own, on the CPU, each phase
# measured: TinyPipeline(dim=512, layers=4) holds 13,027,443 fp32 parameters (below), 52,109,772 B.
PHASES_SCRIPT = """
import json, sys
import cpplan_record
with cpplan_record.load_phase("cpu") as load:
    pipe = cpplan_record.TinyPipeline(dim=512, layers=4)
with cpplan_record.record(sys.argv[1], pipe, model="flux-tiny", runtime="diffusers", width=128, height=128,
                          steps=2, device="cpu", load=load) as rec:
    pipe("a cat", width=128, height=128, num_inference_steps=2, callback_on_step_end=rec.callback)
"""


class Vae:
    def decode(self, latents):
        return latents * 2


class Pipe:
    """The diffusers calling convention, with no torch work: encode, N steps calling back, decode."""

    def __init__(self):
        self.vae = Vae()

    def encode_prompt(self, prompt):
        return len(prompt)

    def __call__(self, prompt, steps, callback_on_step_end=None):
        self.encode_prompt(prompt)
        latents = torch.zeros(2)
        for i in range(steps):
            latents = latents + 1
            if callback_on_step_end is not None:
                out = callback_on_step_end(self, i, 1000 - i, {"latents": latents})
                latents = out.pop("latents", latents)
        return self.vae.decode(latents)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(4)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class CachedTransformer(torch.nn.Module):
    """Two block lists (as FLUX: 2 joint, 5 single) and a first-block cache of its own: on the steps
    of `cached`, the first block runs and the others' residual of the last computed step is reused."""

    def __init__(self, cached):
        super().__init__()
        self.joint_blocks = torch.nn.ModuleList(Block() for _ in range(2))
        self.single_blocks = torch.nn.ModuleList(Block() for _ in range(5))
        self.cached, self.step, self.residual = set(cached), 0, None

    def forward(self, x):
        blocks = list(self.joint_blocks) + list(self.single_blocks)
        x = blocks[0](x)
        if self.step in self.cached:
            out = x + self.residual
        else:
            out = x
            for block in blocks[1:]:
                out = block(out)
            self.residual = out - x
        self.step += 1
        return out


class FusedBlock(torch.nn.Module):
    """A block whose forward uses its layer's weights without calling the layer (a fused kernel)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return x + torch.nn.functional.linear(x, self.proj.weight, self.proj.bias)


def skip_forward_on(block, steps, counter):
    """A hook as diffusers' apply_first_block_cache registers one: the block's forward replaced by
    one that returns its input, without running the block, on the steps of `steps`."""
    original = block.forward

    def forward(x):
        counter[0] += 1
        return x if counter[0] - 1 in steps else original(x)

    block.forward = forward


class CachedPipe(Pipe):
    def __init__(self, cached=()):
        super().__init__()
        self.transformer = CachedTransformer(cached)

    def __call__(self, prompt, steps, callback_on_step_end=None):
        latents = torch.zeros(1, 4)
        for i in range(steps):
            latents = self.transformer(latents)
            if callback_on_step_end is not None:
                callback_on_step_end(self, i, 1000 - i, {"latents": latents})
        return latents


def args(**overrides):
    a = dict(model="flux.1-dev", runtime="diffusers", width=1024, height=1024, device="cpu")
    a.update(overrides)
    return a


class RecorderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "runs.jsonl")
        self.env = mock.patch.dict(os.environ, {}, clear=False)
        self.env.start()
        for name in ("RANK", "WORLD_SIZE"):
            os.environ.pop(name, None)

    def tearDown(self):
        self.env.stop()
        self.dir.cleanup()

    def lines(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f.read().splitlines()]

    def test_one_line_with_every_key_in_order(self):
        pipe = Pipe()
        with record(self.out, pipe, **args(steps=3, ulysses_degree=4, ulysses_anything=True, batch=2)) as rec:
            pipe("a cat", 3, callback_on_step_end=rec.callback)
        with record(self.out, pipe, **args(steps=3)) as rec:
            pipe("a dog", 3, callback_on_step_end=rec.callback)
        lines = self.lines()
        self.assertEqual(len(lines), 2)
        first = lines[0]
        self.assertEqual(list(first), KEYS)
        self.assertEqual(first["cpplan_record"], 1)
        self.assertEqual(first["steps"], 3)
        self.assertEqual(len(first["step_ms"]), 3)
        self.assertEqual((first["ulysses_degree"], first["ring_degree"], first["ulysses_anything"]), (4, 1, True))
        self.assertEqual((first["device"], first["world_size"], first["batch"]), ("cpu", 1, 2))
        self.assertIsNone(first["hardware"])
        self.assertGreater(first["text_encode_ms"], 0)
        self.assertGreater(first["vae_decode_ms"], 0)
        self.assertEqual(first["peak_mem_kind"], "cpu_maxrss")
        self.assertRegex(first["started_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        # image_ms is per image: the whole call (at least steps + encode + decode) over batch 2.
        self.assertGreaterEqual(first["image_ms"] * 2, sum(first["step_ms"]) + first["text_encode_ms"])

    def test_callback_chains_to_the_users_and_returns_its_dict(self):
        seen = []

        def user(pipe, i, t, kwargs):
            seen.append((type(pipe).__name__, i, t, float(kwargs["latents"][0])))
            return {"latents": kwargs["latents"] * 10}

        pipe = Pipe()
        with record(self.out, pipe, callback=user, **args(steps=2)) as rec:
            image = pipe("x", 2, callback_on_step_end=rec.callback)
        # Step 0: 0 + 1 = 1, the user makes it 10; step 1: 11, made 110; decode doubles it.
        self.assertEqual(seen, [("Pipe", 0, 1000, 1.0), ("Pipe", 1, 999, 11.0)])
        self.assertEqual(float(image[0]), 220.0)
        self.assertEqual(len(rec.result["step_ms"]), 2)

    def test_callback_without_a_users_returns_the_kwargs_it_got(self):
        pipe = Pipe()
        with record(self.out, pipe, **args()) as rec:
            kwargs = {"latents": torch.ones(1)}
            self.assertIs(rec.callback(pipe, 0, 1, kwargs), kwargs)

    def test_encode_prompt_and_vae_decode_are_restored_after_an_exception(self):
        pipe = Pipe()
        own = lambda prompt: 0  # an instance attribute of its own, restored as the same object
        pipe.encode_prompt = own
        with self.assertRaises(RuntimeError):
            with record(self.out, pipe, **args()):
                self.assertIsNot(pipe.encode_prompt, own)
                self.assertIn("decode", vars(pipe.vae))
                raise RuntimeError("out of memory")
        self.assertIs(pipe.encode_prompt, own)
        self.assertNotIn("decode", vars(pipe.vae))
        self.assertIs(pipe.vae.decode.__func__, Vae.decode)
        self.assertFalse(os.path.exists(self.out))  # a run that raised records nothing

    def test_wrapped_methods_are_restored_after_a_run(self):
        pipe = Pipe()
        with record(self.out, pipe, **args(steps=1)) as rec:
            pipe("x", 1, callback_on_step_end=rec.callback)
        self.assertNotIn("encode_prompt", vars(pipe))
        self.assertIs(pipe.encode_prompt.__func__, Pipe.encode_prompt)

    def test_a_raised_exception_records_nothing_and_propagates(self):
        pipe = Pipe()
        with self.assertRaisesRegex(ValueError, "bad prompt"):
            with record(self.out, pipe, **args(steps=2)) as rec:
                pipe("x", 2, callback_on_step_end=rec.callback)
                raise ValueError("bad prompt")
        self.assertFalse(os.path.exists(self.out))
        self.assertIsNone(rec.result)

    def test_rank_other_than_zero_writes_nothing(self):
        os.environ["RANK"] = "1"
        os.environ["WORLD_SIZE"] = "2"
        pipe = Pipe()
        with record(self.out, pipe, **args(steps=2, cfg_degree=2)) as rec:
            pipe("x", 2, callback_on_step_end=rec.callback)
        self.assertFalse(os.path.exists(self.out))
        self.assertEqual(rec.result["world_size"], 2)
        os.environ["RANK"] = "0"
        with record(self.out, pipe, **args(steps=2, cfg_degree=2)) as rec:
            pipe("x", 2, callback_on_step_end=rec.callback)
        self.assertEqual(len(self.lines()), 1)
        self.assertEqual(self.lines()[0]["world_size"], 2)

    def test_a_custom_loop_marks_steps_with_step(self):
        pipe = Pipe()
        with record(self.out, pipe, **args(steps=3, frames=81, runtime="compiled", vae="parallel")) as rec:
            pipe.encode_prompt("x")
            for _ in range(3):
                torch.ones(64, 64) @ torch.ones(64, 64)
                rec.step()
            pipe.vae.decode(torch.ones(1))
        r = self.lines()[0]
        self.assertEqual((r["steps"], r["frames"], r["runtime"], r["vae"]), (3, 81, "compiled", "parallel"))
        self.assertTrue(all(ms > 0 for ms in r["step_ms"]))
        with self.assertRaisesRegex(RuntimeError, "outside"):
            rec.step()

    def test_steps_disagreeing_with_the_timed_ones_records_nothing(self):
        pipe = Pipe()
        with self.assertRaisesRegex(ValueError, "steps = 4, but 3 steps were timed"):
            with record(self.out, pipe, **args(steps=4)) as rec:
                pipe("x", 3, callback_on_step_end=rec.callback)
        with self.assertRaisesRegex(ValueError, "no denoising step was timed"):
            with record(self.out, pipe, **args()):
                pipe("x", 3)
        self.assertFalse(os.path.exists(self.out))

    def test_parallel_config_from_a_dict_an_object_and_keywords(self):
        pipe = Pipe()
        config = types.SimpleNamespace(ring_degree=2, ulysses_degree=None, ring_anything=True, other=7)
        with record(self.out, pipe, parallel=config, **args(dp_degree=2)) as rec:
            pipe("x", 1, callback_on_step_end=rec.callback)
        r = rec.result
        self.assertEqual([r[k] for k in cpplan_record.DEGREES], [2, 1, 1, 1, 2])
        self.assertEqual((r["ring_anything"], r["ulysses_anything"]), (True, False))
        with record(self.out, pipe, parallel={"tp_degree": 2, "ulysses_degree": 2}, **args(ulysses_degree=4)) as rec:
            pipe("x", 1, callback_on_step_end=rec.callback)
        self.assertEqual([rec.result[k] for k in cpplan_record.DEGREES], [1, 4, 2, 1, 1])

    def test_bad_configuration_is_refused_naming_the_field(self):
        cases = [
            (dict(ulysses_degree=0), "ulysses_degree = 0: must be at least 1"),
            (dict(ring_degree=True), "ring_degree = True: must be an integer"),
            (dict(runtime="torch"), "runtime = 'torch': must be one of diffusers, xdit, compiled, cpplan"),
            (dict(text_encoder="gpu"), "text_encoder = 'gpu'"),
            (dict(vae="tiled"), "vae = 'tiled'"),
            (dict(width=0), "width = 0: must be at least 1"),
            (dict(model=""), "model = ''"),
            (dict(parallel={"ulysses": 2}), "unknown key 'ulysses'"),
            (dict(ulysses_anything=1), "ulysses_anything = 1: must be True or False"),
        ]
        for overrides, message in cases:
            with self.subTest(overrides=overrides):
                with self.assertRaisesRegex(ValueError, message.replace("(", r"\(")):
                    record(self.out, Pipe(), **args(**overrides))
        self.assertFalse(os.path.exists(self.out))

    def test_a_pipe_without_encode_prompt_or_vae_records_null_times(self):
        with record(self.out, None, **args(steps=1)) as rec:
            rec.step()
        r = self.lines()[0]
        self.assertIsNone(r["text_encode_ms"])
        self.assertIsNone(r["vae_decode_ms"])

    def test_a_pipelines_four_phases_are_recorded_and_its_load_grows_by_its_weights(self):
        # TinyPipeline(dim=512, layers=4), by hand: text encoder Embedding(256, 512) 131,072 +
        # Linear(512, 512) 262,656; transformer patch_in Linear(16, 512) 8,704, time Linear(1, 512)
        # 1,024, 4 TransformerEncoderLayer(512, ff 2048) of in_proj 3 x 512^2 + 3 x 512 = 787,968,
        # out_proj 262,656, linear1 1,050,624, linear2 1,049,088, 2 norms 2,048 -> 3,152,384 each,
        # patch_out Linear(512, 16) 8,208; VAE convs 1,184 + 4,624 + 435. 13,027,443 x 4 B.
        weights = 13027443 * 4
        done = subprocess.run([sys.executable, "-c", PHASES_SCRIPT, self.out], capture_output=True, text=True,
                              timeout=300, cwd=os.path.dirname(os.path.abspath(cpplan_record.__file__)))
        self.assertEqual(done.returncode, 0, done.stderr)
        phases = self.lines()[0]["phase_mem"]
        self.assertEqual(list(phases), ["load", "encode", "denoise", "decode"])
        for name, phase in phases.items():
            with self.subTest(phase=name):
                self.assertIsNotNone(phase)
                self.assertGreaterEqual(phase["peak_bytes"], phase["start_bytes"])
        load = phases["load"]["peak_bytes"] - phases["load"]["start_bytes"]
        print(f"\nload phase: the resident set grew {load / 2**20:.2f} MiB for {weights / 2**20:.2f} MiB of weights")
        self.assertAlmostEqual(load / weights, 1.0, delta=0.2)
        # The weights stay: every later phase starts above the load's start by at least them.
        self.assertGreaterEqual(phases["denoise"]["start_bytes"] - phases["load"]["start_bytes"], 0.8 * weights)

    def test_a_load_that_is_not_load_phases_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"^load = 3: must be what cpplan_record.load_phase\(\) yields"):
            record(self.out, None, load=3, **args())

    def test_the_steps_a_cache_skipped_the_middle_block_on_are_counted(self):
        # 8 steps, 2 warm-up; the middle block is single_blocks[2]; cached steps 3, 5, 6: 3 of the 6
        # after the warm-up, a hit rate of 0.5.
        pipe = CachedPipe(cached=(3, 5, 6))
        with record(self.out, pipe, **args(steps=8, cache_warmup=2)) as rec:
            pipe("x", 8, callback_on_step_end=rec.callback)
        r = self.lines()[0]
        self.assertEqual(r["cache_probe"], "single_blocks.2.norm")
        self.assertEqual((r["cache_computed_steps"], r["cache_cached_steps"], r["cache_warmup_steps"]), (5, 3, 2))
        self.assertEqual(r["cache_hit_rate"], 0.5)

    def test_a_hook_that_replaces_the_blocks_forward_counts_as_a_cached_step(self):
        pipe = CachedPipe()
        middle = pipe.transformer.single_blocks[2]
        skip_forward_on(middle, steps={1, 2}, counter=[0])  # steps 1 and 2 skip it
        with record(self.out, pipe, **args(steps=4, cache_warmup=1)) as rec:
            pipe("x", 4, callback_on_step_end=rec.callback)
        r = self.lines()[0]
        self.assertEqual((r["cache_computed_steps"], r["cache_cached_steps"]), (2, 2))
        self.assertAlmostEqual(r["cache_hit_rate"], 2 / 3)

    def test_a_block_that_calls_none_of_its_layers_is_watched_itself(self):
        pipe = CachedPipe(cached=(2,))
        pipe.transformer.single_blocks = torch.nn.ModuleList(FusedBlock() for _ in range(5))
        with record(self.out, pipe, **args(steps=4)) as rec:
            pipe("x", 4, callback_on_step_end=rec.callback)
        r = self.lines()[0]
        self.assertEqual((r["cache_probe"], r["cache_computed_steps"], r["cache_cached_steps"]), ("single_blocks.2", 3, 1))

    def test_a_probe_given_or_none_found_or_refused(self):
        pipe = CachedPipe(cached=(1,))
        with record(self.out, pipe, **args(steps=3, cache_probe=pipe.transformer.joint_blocks[1])) as rec:
            pipe("x", 3, callback_on_step_end=rec.callback)
        with record(self.out, pipe, **args(steps=3, cache_probe=False)) as rec:
            pipe("x", 3, callback_on_step_end=rec.callback)
        plain = Pipe()  # no transformer: no block to watch
        with record(self.out, plain, **args(steps=2)) as rec:
            plain("x", 2, callback_on_step_end=rec.callback)
        given, refused, none = self.lines()
        self.assertEqual((given["cache_probe"], given["cache_cached_steps"], given["cache_hit_rate"]), ("Block.norm", 1, 1 / 3))
        for r in (refused, none):
            self.assertEqual([r[k] for k in cpplan_record.CACHE_KEYS], [None] * 5)
        for module in (pipe.transformer.joint_blocks[1], pipe.transformer.joint_blocks[1].norm):
            self.assertEqual(module._forward_hooks, {}, "the hooks are removed on leaving")
        with self.assertRaisesRegex(ValueError, r"^cache_probe = 3: must be a torch module"):
            record(self.out, pipe, cache_probe=3, **args())
        with self.assertRaisesRegex(ValueError, r"^cache_warmup = -1: must be at least 0"):
            record(self.out, pipe, cache_warmup=-1, **args())

    def test_the_command_line_refuses_bad_arguments_with_one_line_and_exit_2(self):
        for argv in (["--selftest", "--out", self.out, "--steps", "0"], [], ["--selftest"], ["--bogus"]):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit:
                    cpplan_record.main(argv)
                self.assertEqual(exit.exception.code, 2)
                self.assertEqual(len(err.getvalue().splitlines()), 1, err.getvalue())
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()
