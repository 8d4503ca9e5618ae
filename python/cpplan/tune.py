"""The plan of this launch, and its recording, for a script that `cpplan tune` launches.

    import cpplan
    plan = cpplan.current_plan(model_config=pipe.transformer.config, width=1024, height=1024)
    plan.apply(pipe)                                  # diffusers or cache-dit
    with cpplan.record(pipe, out="runs.jsonl") as rec:
        image = pipe(prompt, callback_on_step_end=rec.callback).images[0]

Under `cpplan tune` the environment holds the plan to run (CPPLAN_PLAN: the plan's JSON as
`cpplan --json` writes it, with a "tune" object naming the model, the image size, the steps, the
device and the file to record into); current_plan() reads it and ignores its arguments. Outside a
tune it plans itself with them (cpplan.plan(..., gpus=WORLD_SIZE)) and takes the fastest plan.
"""

import json
import os

PLAN_ENV = "CPPLAN_PLAN"


class TunedPlan:
    """A plan with what the launch needs to apply and record it; wraps a cpplan.Plan (its fields
    read as attributes) and `tune`, the launch's settings (model, width, height, frames, steps,
    runtime, device, out; {} outside a tune)."""

    def __init__(self, plan, tune):
        self.plan = plan
        self.tune = dict(tune)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("plan", "tune"):
            raise AttributeError(name)
        return getattr(self.plan, name)

    def __repr__(self):
        return f"<TunedPlan {self.plan.json.get('label')}>"

    def degrees(self):
        """The plan's degrees and anything flags as the recorder's `parallel=` takes them."""
        j = self.plan.json
        variant = j.get("cp_variant", "")
        return dict(ring_degree=j["ring_degree"], ulysses_degree=j["ulysses_degree"], tp_degree=j["tp_degree"],
                    cfg_degree=j["cfg_degree"], dp_degree=j["dp_degree"],
                    ulysses_anything="ulysses_anything" in variant, ring_anything="ring_anything" in variant)

    def apply(self, pipe):
        """Sets `pipe` up as the plan says: cache-dit's enable_cache with a ParallelismConfig when
        cache_dit is imported, else diffusers' transformer.enable_parallelism with the plan's config
        class; returns the xDiT arguments (xdit_args()) for a pipe that has neither. The plan's
        format and step cache (--dtype, --cache) go on with the framework's own calls, the lines its
        script prints (the plan's python_hooks): diffusers' transformer.enable_cache(...) and
        torchao's quantize_(...), cache-dit's cache_config= and quantize_config=. Raises
        UnsupportedPlan with the framework's reason when it cannot run the plan."""
        import sys
        if "cache_dit" in sys.modules:
            return _apply_cache_dit(self, pipe, sys.modules["cache_dit"])
        transformer = getattr(pipe, "transformer", None)
        if transformer is not None and hasattr(transformer, "enable_parallelism"):
            return _apply_diffusers(self, pipe)
        return self.plan.xdit_args()


def _run_hooks(plan, framework, pipe):
    """Runs the plan's Python lines for `framework` (its python_hooks: the format's and the
    cache's, as its script prints them) on `pipe`: each import, then each statement; returns the
    keyword arguments the others give (cache-dit's cache_config=, quantize_config=)."""
    kwargs = {}
    for hook in (plan.plan.json.get("python_hooks") or {}).get(framework) or []:
        scope = {"pipe": pipe}
        exec(hook["import"], scope)  # the script's own import line, e.g. "from diffusers.hooks import ..."
        if hook["keyword"]:
            kwargs[hook["keyword"]] = eval(hook["code"], scope)
        else:
            exec(hook["code"], scope)
    return kwargs


def _apply_diffusers(plan, pipe):
    config_class = plan.plan.diffusers_config_class()  # raises UnsupportedPlan when diffusers cannot run it
    _run_hooks(plan, "diffusers", pipe)
    if config_class is None:  # one GPU: nothing to parallelise
        return None
    import diffusers
    config = getattr(diffusers, config_class)(**plan.plan.diffusers_config())
    pipe.transformer.enable_parallelism(config=config)
    return config


def _apply_cache_dit(plan, pipe, cache_dit):
    from . import UnsupportedPlan
    j = plan.plan.json
    if "cache-dit" not in (j.get("frameworks") or []):
        reason = (j.get("frameworks_unavailable") or {}).get("cache-dit", "cache-dit does not run this plan")
        raise UnsupportedPlan(reason, "cache-dit", j.get("label"))
    kwargs = {}
    for key, name in (("ulysses_degree", "ulysses_size"), ("ring_degree", "ring_size"), ("tp_degree", "tp_size")):
        if j[key] > 1:
            kwargs[name] = j[key]
    if plan.degrees()["ulysses_anything"]:
        kwargs["ulysses_anything"] = True
    config = cache_dit.ParallelismConfig(**kwargs) if kwargs else None
    cache_dit.enable_cache(pipe, parallelism_config=config, **_run_hooks(plan, "cache-dit", pipe))
    return config


def current_plan(**plan_arguments):
    """The plan of this launch: CPPLAN_PLAN's under `cpplan tune`, else the fastest plan of
    cpplan.plan(**plan_arguments) on WORLD_SIZE GPUs (gpus= overrides it)."""
    text = os.environ.get(PLAN_ENV)
    if text:
        try:
            j = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{PLAN_ENV}: not JSON ({e})") from None
        from . import Plan
        return TunedPlan(Plan(j), j.get("tune") or {})
    from . import plan as _plan
    plan_arguments.setdefault("gpus", int(os.environ.get("WORLD_SIZE", "1")))
    return TunedPlan(_plan(**plan_arguments)[0], {})


def record(pipe, out=None, plan=None, **recorder_arguments):
    """The recorder of python/cpplan_record.py (`with cpplan.record(pipe) as rec:`) for this
    launch's plan: the model, size, steps, runtime, device and plan come from current_plan() under
    a tune (its `out` too, unless given), and the cache warm-up from the plan's cache (the hit rate's
    first step); any of record()'s keyword arguments overrides them."""
    import importlib
    import sys
    _record = importlib.import_module(__package__ + ".record").record  # needs torch
    # Importing the submodule cpplan.record set the package's `record` to it: this function again.
    setattr(sys.modules[__package__], "record", record)
    plan = plan or current_plan()
    settings = {k: v for k, v in plan.tune.items() if k in ("model", "runtime", "width", "height", "frames",
                                                            "steps", "device")}
    settings.update(recorder_arguments)
    settings.setdefault("runtime", "diffusers")
    # The hit rate counts from the end of the plan's cache warm-up, as core/cache.h's does.
    settings.setdefault("cache_warmup", (plan.plan.json.get("cache") or {}).get("warmup_steps", 0))
    out = out or plan.tune.get("out")
    if not out:
        raise ValueError("out = None: record() needs a file to append to outside cpplan tune")
    return _record(out, pipe, parallel=plan.degrees(), **settings)
