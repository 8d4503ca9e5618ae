#!/usr/bin/env python3
"""Times a diffusion pipeline call for cpplan's calibration: one JSON line per run.

Needs only torch and the standard library. Around a diffusers-style call:

    from cpplan_record import record
    with record("runs.jsonl", pipe, model="flux.1-dev", runtime="diffusers", width=1024, height=1024,
                steps=28, parallel=pipe.transformer._parallel_config) as rec:   # or ulysses_degree=4, ...
        image = pipe(prompt, width=1024, height=1024, num_inference_steps=28,
                     callback_on_step_end=rec.callback).images[0]

diffusers calls `callback_on_step_end(pipe, step_index, timestep, callback_kwargs)` at the end of
every denoising step and takes the returned dict back; `rec.callback` marks the step's end there
and chains to `record(..., callback=your_callback)` when given (its time is not counted in the
step). A loop of your own marks the end of each step with `rec.step()`:

    with record("runs.jsonl", pipe, model="wan2.1-t2v-14b", runtime="compiled", width=1280,
                height=720, frames=81, steps=50, ring_degree=2, ulysses_degree=4) as rec:
        embeds = pipe.encode_prompt(prompt)          # timed when pipe has encode_prompt
        for t in timesteps:
            latents = step(latents, t, embeds)
            rec.step()
        video = pipe.vae.decode(latents)             # timed when pipe.vae has decode

The first step starts at the end of the (last) text encoding, or on entering the context when no
encode_prompt was timed; each next step starts when the previous one's callback returns. On CUDA
every time is taken with CUDA events on the current stream (`device="cuda"`, the default when
CUDA is available), else with time.perf_counter() and no synchronisation. While the context is
open, `pipe.encode_prompt` and `pipe.vae.decode` are wrapped (restored on leaving it, also on an
exception). On leaving without an exception it appends one JSON line (docs/calibration.md,
"Pipeline runs") to the file, on rank 0 only, in one write; a run that raised records nothing.
Import the file with `cpplan import-runs FILE`.

The line also holds each phase's memory (`phase_mem`: load, encode, denoise, decode), as cpplan
run records its own: the most bytes held during the phase and the bytes held when it began. On
CUDA the caching allocator's allocated bytes (its peak reset as each phase begins); on the CPU the
process's resident set (its peak, VmHWM, reset through /proc/self/clear_refs on Linux), whose
growth over the phase's start is the phase's own. Encoding and decoding are the wrapped calls,
denoising the rest of the context from the first timed step's start to the last one's end.
Loading is measured when the pipeline is loaded inside `load_phase()` and the result passed on:

    with cpplan_record.load_phase() as load:
        pipe = FluxPipeline.from_pretrained(...).to("cuda")
    with record("runs.jsonl", pipe, load=load, ...) as rec:
        ...

A phase that did not happen (or a CPU without a resettable peak) is null.

The line also counts the steps a step cache (FBCache, DBCache, TeaCache, MagCache, ...) computed:
a forward hook on one block in the middle of the transformer (the block at len // 2 of its
longest block list: `single_transformer_blocks` of FLUX, `blocks` of Wan) marks each step on which
that block ran. No first-blocks (Fn) or last-blocks (Bn) policy runs it on a cached step. The hook
sits on the block's first layer with parameters (a norm's or attention's Linear), not on the block
itself: diffusers' cache hooks (apply_first_block_cache, MagCache) replace the block's forward
and return without running it, which a hook on the block would still count; cache-dit's cached
blocks and a loop of your own skip the call altogether. `cache_computed_steps` and
`cache_cached_steps` count the steps, `cache_hit_rate` is the share of the steps after the
warm-up (`cache_warmup=`, the plan's under `cpplan tune`) that did not run it (core/cache.h's
hit rate), `cache_probe` names the module watched: the block itself when the layer never ran (a
fused forward that calls none of its layers as modules). Pass `cache_probe=block` to watch another
block, `cache_probe=False` to watch none (the four are then null, as when no block list is found).

`python3 cpplan_record.py --selftest --out runs.jsonl` times a small real torch pipeline on the
CPU (a text encoder, a transformer loop calling back as diffusers does, a conv decoder) and
appends its line.
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import socket
import statistics
import sys
import time

import torch

SCHEMA_VERSION = 1
RUNTIMES = ("diffusers", "xdit", "compiled", "cpplan")
TEXT_ENCODERS = ("replicated", "offloaded", "sequential", "sharded")
VAES = ("single", "parallel")
DEGREES = ("ring_degree", "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree")
ANYTHING_FLAGS = ("ulysses_anything", "ring_anything")


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def _rank_and_world_size():
    """torch.distributed's when initialised, else RANK / WORLD_SIZE from the environment, else 0 / 1."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1


PHASES = ("load", "encode", "denoise", "decode")
CACHE_KEYS = ("cache_probe", "cache_computed_steps", "cache_cached_steps", "cache_warmup_steps", "cache_hit_rate")


def find_cache_probe(pipe):
    """(name, block): the block at len // 2 of the longest list of two or more blocks (a
    torch.nn.ModuleList; the first of equal lengths) in the pipe's transformer (`pipe.transformer`,
    or `pipe` itself when it is a torch module); (None, None) when there is none."""
    root = pipe if isinstance(pipe, torch.nn.Module) else getattr(pipe, "transformer", None)
    if not isinstance(root, torch.nn.Module):
        return None, None
    lists = [(name, m) for name, m in root.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m) >= 2]
    if not lists:
        return None, None
    name, blocks = max(lists, key=lambda item: len(item[1]))
    return f"{name}.{len(blocks) // 2}", blocks[len(blocks) // 2]


def _probe_layer(block):
    """(name, module) whose run marks the block's: its first layer with parameters of its own and
    no children, so that a hook replacing the block's forward without running it is not counted;
    the block itself when it has none."""
    for name, m in block.named_modules():
        if not list(m.children()) and any(True for _ in m.parameters(recurse=False)):
            return name, m
    return "", block


def _rss_bytes():
    """The process's resident set now (Linux /proc/self/statm), else None."""
    try:
        with open("/proc/self/statm") as f:
            return float(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        return None


def _peak_rss_bytes():
    """The resident set's peak since it was last reset (VmHWM), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return float(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _reset_peak_rss():
    """Starts the resident set's peak over (Linux >= 4.0: clear_refs 5); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PhaseMemory:
    """The memory of one phase, from its construction to end(): `start_bytes` (held then) and
    `peak_bytes` (the most held meanwhile, None where the CPU's peak cannot be reset)."""

    def __init__(self, device):
        self.device = device
        self.start_bytes = self.peak_bytes = None
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.start_bytes = float(torch.cuda.memory_allocated())
        else:
            self._resettable = _reset_peak_rss()
            self.start_bytes = _rss_bytes()

    def end(self):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self.peak_bytes = float(torch.cuda.max_memory_allocated())
        elif self._resettable:
            self.peak_bytes = _peak_rss_bytes()
        return self

    def as_dict(self):
        return {"peak_bytes": self.peak_bytes, "start_bytes": self.start_bytes}


@contextlib.contextmanager
def load_phase(device=None):
    """Measures loading the pipeline inside the `with` block; pass what it yields as record(load=...)."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    _check_choice("device", device, ("cuda", "cpu"))
    meter = PhaseMemory(device)
    try:
        yield meter
    finally:
        meter.end()


def _parallel_degrees(parallel, overrides):
    """Degrees and anything flags from a dict or an object with those attributes (diffusers'
    ContextParallelConfig), then `overrides` (keyword arguments) on top. Missing or None: 1 / False."""
    out = {name: 1 for name in DEGREES}
    out.update({name: False for name in ANYTHING_FLAGS})
    for name in DEGREES + ANYTHING_FLAGS:
        if parallel is None:
            value = None
        elif isinstance(parallel, dict):
            value = parallel.get(name)
        else:
            value = getattr(parallel, name, None)
        if value is not None:
            out[name] = value
    if isinstance(parallel, dict):
        unknown = sorted(set(parallel) - set(DEGREES + ANYTHING_FLAGS))
        if unknown:
            raise ValueError(f"parallel: unknown key {unknown[0]!r}: must be one of {', '.join(DEGREES + ANYTHING_FLAGS)}")
    for name, value in overrides.items():
        if name not in DEGREES + ANYTHING_FLAGS:
            raise TypeError(f"record() got an unexpected keyword argument {name!r}")
        if value is not None:
            out[name] = value
    return out


def _check_int(name, value, lowest):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} = {value!r}: must be an integer")
    if value < lowest:
        raise ValueError(f"{name} = {value}: must be at least {lowest}")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} = {value!r}: must be one of {', '.join(choices)}")


class Recorder:
    """The context manager record() returns. Attributes: `callback` (for callback_on_step_end),
    `step()` (a custom loop's end of step) and, after a run that did not raise, `result` (the
    dict appended, also on ranks that do not write)."""

    def __init__(self, out, pipe, *, model, runtime, width, height, steps=None, frames=1, batch=1,
                 text_encoder="replicated", vae="single", hardware=None, parallel=None, callback=None,
                 device=None, load=None, cache_probe=None, cache_warmup=0, **degrees):
        if not isinstance(model, str) or not model:
            raise ValueError(f"model = {model!r}: must name a cpplan model profile, e.g. 'flux.1-dev'")
        _check_choice("runtime", runtime, RUNTIMES)
        _check_int("width", width, 1)
        _check_int("height", height, 1)
        _check_int("frames", frames, 1)
        if steps is not None:
            _check_int("steps", steps, 1)
        _check_int("batch", batch, 1)
        _check_choice("text_encoder", text_encoder, TEXT_ENCODERS)
        _check_choice("vae", vae, VAES)
        if hardware is not None and (not isinstance(hardware, str) or not hardware):
            raise ValueError(f"hardware = {hardware!r}: must be a cpplan hardware profile name or None")
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        _check_choice("device", device, ("cuda", "cpu"))
        self._degrees = _parallel_degrees(parallel, degrees)
        for name in DEGREES:
            _check_int(name, self._degrees[name], 1)
        for name in ANYTHING_FLAGS:
            if not isinstance(self._degrees[name], bool):
                raise ValueError(f"{name} = {self._degrees[name]!r}: must be True or False")
        if callback is not None and not callable(callback):
            raise ValueError(f"callback = {callback!r}: must be callable")
        if load is not None and not isinstance(load, PhaseMemory):
            raise ValueError(f"load = {load!r}: must be what cpplan_record.load_phase() yields, or None")
        if cache_probe is not None and cache_probe is not False and not isinstance(cache_probe, torch.nn.Module):
            raise ValueError(f"cache_probe = {cache_probe!r}: must be a torch module (a transformer block), False "
                             "or None (the middle block found)")
        _check_int("cache_warmup", cache_warmup, 0)
        self._cache_probe, self._cache_warmup = cache_probe, cache_warmup
        self._load = load
        self._out = os.fspath(out)
        self._pipe = pipe
        self._config = dict(model=model, runtime=runtime, hardware=hardware, width=width, height=height,
                            frames=frames, steps=steps, batch=batch, text_encoder=text_encoder, vae=vae)
        self._device = device
        self._user_callback = callback
        self._wrapped = []  # (object, attribute name, had its own attribute, its own value)
        self._active = False
        self.result = None

    # -- clocks: a marker is a recorded CUDA event, or perf_counter() seconds on the CPU --
    def _mark(self):
        if self._device == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def _elapsed_ms(self, start, end):
        if self._device == "cuda":
            return float(start.elapsed_time(end))
        return (end - start) * 1e3

    # -- the step boundaries --
    def step(self):
        """Marks the end of a denoising step (and the start of the next)."""
        if not self._active:
            raise RuntimeError("cpplan_record: step() outside the `with record(...)` block")
        end = self._mark()
        self._steps.append((self._step_start, end))
        self._step_start = end
        self._end_cache_step()

    def callback(self, pipe, step_index, timestep, callback_kwargs):
        """diffusers' callback_on_step_end: ends the step, calls the user's callback, returns its dict."""
        if not self._active:
            raise RuntimeError("cpplan_record: callback called outside the `with record(...)` block")
        self._steps.append((self._step_start, self._mark()))
        self._end_cache_step()
        if self._user_callback is not None:
            callback_kwargs = self._user_callback(pipe, step_index, timestep, callback_kwargs)
        self._step_start = self._mark()
        return callback_kwargs

    # -- the step cache: whether the watched block ran in each step --
    def _end_cache_step(self):
        self._phase_steps += 1
        for kind in ("layer", "block"):
            self._ran[kind].append(self._running[kind])
            self._running[kind] = False

    def _watch_probe(self):
        if self._cache_probe is False:
            return
        if self._cache_probe is None:
            name, block = find_cache_probe(self._pipe)
        else:
            name, block = type(self._cache_probe).__name__, self._cache_probe
        if block is None:
            return
        layer_name, layer = _probe_layer(block)
        self._probe_names = {"layer": f"{name}.{layer_name}" if layer_name else name, "block": name}
        for kind, module in (("layer", layer), ("block", block)):
            def ran(module, inputs, output, kind=kind):
                self._running[kind] = True
            self._probe_hooks.append(module.register_forward_hook(ran))

    def _unwatch_probe(self):
        while self._probe_hooks:
            self._probe_hooks.pop().remove()

    def _cache_counts(self):
        """The line's cache keys: the steps the watched module ran in and not, and the hit rate. The
        layer's runs when it ran at all; else the block's (a block whose fused forward calls none
        of its layers as modules, e.g. torch's TransformerEncoderLayer on its fast path)."""
        if self._probe_names is None:
            return dict.fromkeys(CACHE_KEYS)
        kind = "layer" if any(self._ran["layer"]) else "block"
        ran = self._ran[kind]
        warm = min(self._cache_warmup, len(ran))
        after = ran[warm:]
        return {"cache_probe": self._probe_names[kind], "cache_computed_steps": sum(ran),
                "cache_cached_steps": len(ran) - sum(ran), "cache_warmup_steps": warm,
                "cache_hit_rate": after.count(False) / len(after) if after else 0.0}

    # -- wrapping encode_prompt and vae.decode for the context's duration --
    # -- the phases' memory: encode and decode are the wrapped calls, denoise what holds the steps --
    def _open_phase(self, name):
        self._close_phase()
        self._phase = (name, PhaseMemory(self._device))
        self._phase_steps = 0

    def _close_phase(self):
        if self._phase is None:
            return
        name, meter = self._phase
        self._phase = None
        meter.end()
        if meter.peak_bytes is not None:
            self._overall_peak = max(self._overall_peak or 0.0, meter.peak_bytes)
        if name == "denoise" and self._phase_steps == 0:
            return  # no step ran in it: not the denoising loop
        kept = self._phases.get(name)
        if kept is None or (meter.peak_bytes or 0.0) > (kept.peak_bytes or 0.0):
            self._phases[name] = meter

    def _wrap(self, obj, name, spans, starts_steps):
        if obj is None or not callable(getattr(obj, name, None)) or not hasattr(obj, "__dict__"):
            return
        original = getattr(obj, name)
        own = vars(obj)
        self._wrapped.append((obj, name, name in own, own.get(name)))

        phase = "encode" if starts_steps else "decode"

        def timed(*args, **kwargs):
            self._open_phase(phase)
            start = self._mark()
            result = original(*args, **kwargs)
            end = self._mark()
            spans.append((start, end))
            self._open_phase("denoise")
            if starts_steps:
                self._step_start = end
            return result

        setattr(obj, name, timed)

    def _unwrap(self):
        while self._wrapped:
            obj, name, had_own, own_value = self._wrapped.pop()
            if had_own:
                setattr(obj, name, own_value)
            else:
                delattr(obj, name)

    def __enter__(self):
        if self._device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self._started_at = _utc_now()
        self._wall_start = time.perf_counter()
        self._steps, self._encodes, self._decodes = [], [], []
        self._phases, self._phase, self._phase_steps, self._overall_peak = {}, None, 0, None
        self._ran, self._running = {"layer": [], "block": []}, {"layer": False, "block": False}
        self._probe_names, self._probe_hooks = None, []
        self._open_phase("denoise")
        self._step_start = self._mark()
        try:
            self._wrap(self._pipe, "encode_prompt", self._encodes, True)
            self._wrap(getattr(self._pipe, "vae", None), "decode", self._decodes, False)
            self._watch_probe()
        except BaseException:
            self._unwrap()
            self._unwatch_probe()
            raise
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self._active = False
        self._unwrap()
        self._unwatch_probe()
        self._close_phase()
        if exc_type is not None:
            return False  # a run that raised is not recorded
        if self._device == "cuda":
            torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - self._wall_start) * 1e3
        self.result = self._build(wall_ms)
        rank, _ = _rank_and_world_size()
        if rank == 0:
            self._append(self.result)
        return False

    def _build(self, wall_ms):
        c = self._config
        step_ms = [self._elapsed_ms(a, b) for a, b in self._steps]
        if not step_ms:
            raise ValueError("cpplan_record: no denoising step was timed: pass callback_on_step_end=rec.callback "
                             "to the pipeline, or call rec.step() after each step")
        if c["steps"] is not None and c["steps"] != len(step_ms):
            raise ValueError(f"cpplan_record: steps = {c['steps']}, but {len(step_ms)} steps were timed")

        def total(spans):
            return sum(self._elapsed_ms(a, b) for a, b in spans) if spans else None

        if self._device == "cuda":
            index = torch.cuda.current_device()
            gpu_name, gpu_count = torch.cuda.get_device_name(index), torch.cuda.device_count()
            # The phases reset the allocator's peak: the run's is the largest of theirs.
            peak = max(float(torch.cuda.max_memory_allocated()), self._overall_peak or 0.0)
            peak_kind = "cuda_allocated"
        else:
            gpu_name, gpu_count = _cpu_name(), os.cpu_count() or 1
            peak, peak_kind = None, None
            try:
                import resource  # Unix only; Linux reports KiB (the phases may have reset it: their peaks too)
                peak = max(float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, self._overall_peak or 0.0)
                peak_kind = "cpu_maxrss"
            except (ImportError, OSError):
                pass
        phases = dict(self._phases)
        if self._load is not None:
            phases["load"] = self._load
        phase_mem = {name: phases[name].as_dict() if name in phases else None for name in PHASES}
        _, world_size = _rank_and_world_size()
        d = self._degrees
        return {
            "cpplan_record": SCHEMA_VERSION, "model": c["model"], "runtime": c["runtime"], "hardware": c["hardware"],
            "device": self._device, "gpu_name": gpu_name, "gpu_count": gpu_count, "world_size": world_size,
            "torch": str(torch.__version__), "cuda": torch.version.cuda, "host": socket.gethostname(),
            "started_at": self._started_at, "finished_at": _utc_now(),
            "width": c["width"], "height": c["height"], "frames": c["frames"], "steps": len(step_ms),
            "batch": c["batch"],
            "ring_degree": d["ring_degree"], "ulysses_degree": d["ulysses_degree"], "tp_degree": d["tp_degree"],
            "cfg_degree": d["cfg_degree"], "dp_degree": d["dp_degree"],
            "ulysses_anything": d["ulysses_anything"], "ring_anything": d["ring_anything"],
            "text_encoder": c["text_encoder"], "vae": c["vae"],
            "step_ms": step_ms, "text_encode_ms": total(self._encodes), "vae_decode_ms": total(self._decodes),
            "image_ms": wall_ms / c["batch"], "peak_mem_bytes": peak, "peak_mem_kind": peak_kind,
            "phase_mem": phase_mem, **self._cache_counts(),
        }

    def _append(self, result):
        # One write of the whole line in append mode: concurrent writers interleave whole lines.
        line = (json.dumps(result, separators=(",", ":"), allow_nan=False) + "\n").encode()
        fd = os.open(self._out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
        finally:
            os.close(fd)
        if written != len(line):
            raise OSError(f"{self._out}: wrote {written} of {len(line)} bytes of the run's line")


def record(out, pipe=None, **kwargs):
    """A Recorder appending to `out`; see the module's documentation. Keyword arguments: model,
    runtime, width, height, steps (None: as many as were timed, else checked), frames=1, batch=1,
    text_encoder='replicated', vae='single', hardware=None, parallel (dict or object with the
    degrees), callback (the user's callback_on_step_end), device (None: cuda when available),
    load (what load_phase() yielded: the loading phase's memory), cache_probe (the block whose
    runs count the computed steps: None finds the middle block, False watches none), cache_warmup
    (the steps before the hit rate counts, default 0), and ring_degree, ulysses_degree, tp_degree, cfg_degree, dp_degree, ulysses_anything,
    ring_anything (override `parallel`). Bad values raise ValueError naming the field."""
    return Recorder(out, pipe, **kwargs)


# ---- --selftest: a small real torch pipeline on the CPU, called back as diffusers does ----

class _TextEncoder(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.embed = torch.nn.Embedding(256, dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, tokens):
        return self.proj(torch.nn.functional.gelu(self.embed(tokens)))


class _Transformer(torch.nn.Module):
    """Patchified latents and text tokens through joint self-attention blocks (MMDiT-like)."""

    def __init__(self, channels, dim, layers):
        super().__init__()
        self.patch_in = torch.nn.Linear(channels * 4, dim)
        self.time = torch.nn.Linear(1, dim)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=4 * dim, batch_first=True)
            for _ in range(layers))
        self.patch_out = torch.nn.Linear(dim, channels * 4)

    def forward(self, latents, text, t):
        b, c, h, w = latents.shape
        x = latents.reshape(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, h * w // 4, c * 4)
        x = self.patch_in(x) + self.time(t.reshape(1, 1, 1).expand(b, 1, 1))
        joint = torch.cat([text, x], dim=1)
        for block in self.blocks:
            joint = block(joint)
        x = self.patch_out(joint[:, text.shape[1]:])
        return x.reshape(b, h // 2, w // 2, c, 2, 2).permute(0, 3, 1, 4, 2, 5).reshape(b, c, h, w)


class _Vae(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.decoder = torch.nn.Sequential(
            torch.nn.Conv2d(channels, 32, 3, padding=1), torch.nn.SiLU(),
            torch.nn.Upsample(scale_factor=2), torch.nn.Conv2d(32, 16, 3, padding=1), torch.nn.SiLU(),
            torch.nn.Upsample(scale_factor=4), torch.nn.Conv2d(16, 3, 3, padding=1))

    def decode(self, latents):
        return self.decoder(latents)


class TinyPipeline:
    """What the selftest times: encode_prompt, a flow-matching Euler loop over a small
    transformer that calls callback_on_step_end(pipe, i, t, {"latents": ...}) after each step and
    takes the latents back from the returned dict, as diffusers does, and vae.decode."""

    def __init__(self, dim=64, channels=4, layers=2):
        torch.manual_seed(0)
        self.channels = channels
        self.text_encoder = _TextEncoder(dim).eval()
        self.transformer = _Transformer(channels, dim, layers).eval()
        self.vae = _Vae(channels).eval()

    def encode_prompt(self, prompt):
        tokens = torch.tensor([list(prompt.encode()[:64]) or [0]])
        return self.text_encoder(tokens)

    @torch.no_grad()
    def __call__(self, prompt, width=128, height=128, num_inference_steps=4, callback_on_step_end=None):
        text = self.encode_prompt(prompt)
        latents = torch.randn(1, self.channels, height // 8, width // 8, generator=torch.Generator().manual_seed(0))
        timesteps = torch.linspace(1.0, 0.0, num_inference_steps + 1)
        for i in range(num_inference_steps):
            t = timesteps[i]
            velocity = self.transformer(latents, text, t)
            latents = latents + (timesteps[i + 1] - t) * velocity
            if callback_on_step_end is not None:
                outputs = callback_on_step_end(self, i, t, {"latents": latents})
                latents = outputs.pop("latents", latents)
        return self.vae.decode(latents)


def selftest(out, steps, width, height):
    with load_phase("cpu") as load:
        pipe = TinyPipeline()
    with record(out, pipe, model="flux-tiny", runtime="diffusers", width=width, height=height, steps=steps,
                device="cpu", load=load) as rec:
        image = pipe("a photo of a cat", width=width, height=height, num_inference_steps=steps,
                     callback_on_step_end=rec.callback)
    r = rec.result
    print(f"cpplan_record selftest: {r['steps']} steps of a {tuple(image.shape)} image, "
          f"median {statistics.median(r['step_ms']):.3f} ms/step, text {r['text_encode_ms']:.3f} ms, "
          f"vae {r['vae_decode_ms']:.3f} ms, image {r['image_ms']:.3f} ms; appended to {out}")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"{self.prog}: {message}\n")


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def main(argv=None):
    parser = _Parser(prog="cpplan_record.py",
                     description="Times diffusion pipeline calls for cpplan (import with `cpplan import-runs`). "
                                 "As a library: `with cpplan_record.record(...) as rec`; see the module's docstring.")
    parser.add_argument("--selftest", action="store_true",
                        help="time a small real torch pipeline on the CPU and append its line to --out")
    parser.add_argument("--out", help="JSONL file to append to (with --selftest)")
    parser.add_argument("--steps", type=_positive, default=4, help="denoising steps of the selftest (default 4)")
    parser.add_argument("--width", type=_positive, default=128, help="selftest width, a multiple of 16 (default 128)")
    parser.add_argument("--height", type=_positive, default=128, help="selftest height, a multiple of 16 (default 128)")
    args = parser.parse_args(argv)
    if not args.selftest:
        parser.error("nothing to do: pass --selftest --out FILE (or import this file as a library)")
    if not args.out:
        parser.error("--selftest needs --out FILE")
    for name in ("width", "height"):
        if getattr(args, name) % 16:
            parser.error(f"--{name} {getattr(args, name)}: must be a multiple of 16")
    try:
        selftest(args.out, args.steps, args.width, args.height)
    except OSError as e:
        print(f"cpplan_record.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
