"""cpplan from Python: rank the multi-GPU parallel configurations of a diffusion transformer.

    import cpplan
    best = cpplan.plan(model_config=pipe.transformer.config, gpus=4, width=1024, height=1024)[0]
    pipe.transformer.enable_parallelism(config=ContextParallelConfig(**best.diffusers_config()))

cpplan.plan runs the planner of `cpplan --json` in this process (the extension module _cpplan);
each Plan holds one plan of that JSON report (plan.json), its fields as attributes, the
prediction's too (plan.step_ms is plan.json["predicted"]["step_ms"]). Bad input raises
InvalidInput with the CLI's one-line message.
"""

import json as _json
import warnings as _warnings
import os as _os
from collections.abc import Mapping as _Mapping

from ._cpplan import InvalidInput
from ._cpplan import Options as _Options
from ._cpplan import recommend as _recommend
from ._cpplan import query_fields as _query_fields

__all__ = ["plan", "recommend", "query_fields", "current_plan", "record", "Plan", "Recommendation", "InvalidInput", "UnsupportedPlan"]


class UnsupportedPlan(Exception):
    """A framework cannot run the plan: the text is its reason (the plan's frameworks_unavailable)."""

    def __init__(self, reason, framework=None, label=None):
        super().__init__(reason)
        self.reason = reason
        self.framework = framework
        self.label = label


class Plan:
    """One plan of the report: plan.json is the dict of `cpplan --json`; its keys, and those of its
    "predicted" object, read as attributes (plan.label, plan.ulysses_degree, plan.step_ms); an
    invalid plan's plan.violations list each broken rule with its "rule_id"."""

    __slots__ = ("json",)

    def __init__(self, plan_json):
        self.json = plan_json

    def __getattr__(self, name):
        # Only reached for names that are not methods or slots; dunder lookups (copy, pickle) must
        # not find plan fields.
        if name.startswith("__") or name == "json":
            raise AttributeError(name)
        j = self.json
        if name in j:
            return j[name]
        predicted = j.get("predicted")
        if isinstance(predicted, dict) and name in predicted:
            return predicted[name]
        if predicted is None and not j.get("valid", True):
            raise AttributeError(f"plan {j.get('label')!r} is invalid, so it has no {name!r}: {self._invalid_reasons()}")
        raise AttributeError(f"a plan has no field {name!r}; fields: {', '.join(sorted(self._fields()))}")

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | self._fields())

    def __repr__(self):
        j = self.json
        label = j.get("label")
        predicted = j.get("predicted")
        if not j.get("valid") or not isinstance(predicted, dict):
            return f"<Plan {label}: invalid: {self._invalid_reasons()}>"
        frameworks = ", ".join(j.get("frameworks") or []) or "no framework"
        # Its format and cache, when not the checkpoint's BF16 without a cache (dtype="any", cache="any").
        cache = (j.get("cache") or {}).get("policy")
        if j.get("dtype", "bf16") != "bf16" or cache:
            label = f"{label} ({j.get('dtype', 'bf16')}, {cache or 'none'})"
        return (f"<Plan {label}: {predicted['step_ms']:.1f} ms/step, {predicted['image_ms'] / 1000:.2f} s/image, "
                f"peak {predicted['peak_mem_bytes'] / 2**30:.1f} GiB; runs in {frameworks}>")

    def diffusers_config(self):
        """The keyword arguments of diffusers' ContextParallelConfig or TensorParallelConfig
        (diffusers_config_class() says which), in diffusers' order, e.g. {'ulysses_degree': 4}; {}
        for a plan on one GPU. Raises UnsupportedPlan with diffusers' reason when diffusers cannot
        run the plan."""
        return dict(self._diffusers()["kwargs"])  # [name, value] pairs, in order

    def diffusers_config_class(self):
        """"ContextParallelConfig" or "TensorParallelConfig" (None for a plan on one GPU); raises
        UnsupportedPlan as diffusers_config()."""
        return self._diffusers()["class"]

    def xdit_args(self):
        """xDiT's command-line arguments for the plan (["--ulysses_degree", "4", ...]); raises
        UnsupportedPlan with xDiT's reason when xDiT cannot run it."""
        args = self.json.get("xdit_args")
        if args is None:
            raise self._unsupported("xdit")
        return list(args)

    def sglang_args(self):
        """SGLang Diffusion's parallel flags for the plan (["--num-gpus", "4", "--ulysses-degree", "4",
        ...]; its per-model support is unconfirmed); raises UnsupportedPlan with its reason when
        SGLang Diffusion cannot run it."""
        args = self.json.get("sglang_args")
        if args is None:
            raise self._unsupported("sglang")
        return list(args)

    def vllm_omni_args(self):
        """vLLM-Omni's parallel flags of `vllm serve REPO --omni` for the plan (["--usp", "4",
        "--ring", "1", ...]); raises UnsupportedPlan with its reason when vLLM-Omni cannot run it."""
        args = self.json.get("vllm_omni_args")
        if args is None:
            raise self._unsupported("vllm-omni")
        return list(args)

    def _diffusers(self):
        config = self.json.get("diffusers_config")
        if config is None:
            raise self._unsupported("diffusers")
        return config

    def _unsupported(self, framework):
        j = self.json
        reason = (j.get("frameworks_unavailable") or {}).get(framework)
        if reason is None:
            if not j.get("valid", True):
                reason = f"plan {j.get('label')!r} is invalid: {self._invalid_reasons()}"
            else:
                reason = f"{framework} has no configuration for plan {j.get('label')!r}"
        return UnsupportedPlan(reason, framework, j.get("label"))

    def _invalid_reasons(self):
        return "; ".join(self.json.get("reasons") or []) or "no reason given"

    def _fields(self):
        predicted = self.json.get("predicted")
        return set(self.json) | (set(predicted) if isinstance(predicted, dict) else set())


# The keyword argument of plan() and recommend() that moves each lever of a broken rule (the
# "lever" of a Recommendation.rejected entry); None where no argument moves it.
LEVER_ARGUMENTS = {
    "resolution": "width/height",
    "text_tokens": None,
    "model_heads": "model",
    "attention_backend": None,
    "gpu_count": "gpus",
    "degree": None,
    "variant": None,
    "batch": "batch",
    "steps": "steps",
    "model": "model",
    "none": None,
}


class Recommendation:
    """One query's recommendation, as `cpplan` prints it: the ranked rows (one per computation;
    "Ulysses/Anything" when both forms are one), the rejected plans grouped by the rule they break
    first (its "rule_id", e.g. "even-split-image-tokens", and the keyword argument that moves its
    lever), each framework's choice with its
    script lines, the prediction source, and every plan (Plan objects)."""

    def __init__(self, report, top=None):
        self.json = report
        self.plans = [Plan(p) for p in report["plans"]]
        rows = report["rows"]
        self.rows = rows[:top] if top is not None else rows
        self.rejected = [dict(g, argument=LEVER_ARGUMENTS.get(g["lever"])) for g in report["rejected"]]
        self.framework_choices = [c for c in report["framework_choices"] if c["shown"]]
        self.prediction_source = report["prediction_source"]
        self.notes = report["notes"]

    def __repr__(self):
        best = self.rows[0]["label"] if self.rows else "no valid plan"
        return f"<cpplan.Recommendation {best}; {len(self.rows)} rows, {len(self.rejected)} rejection groups>"


def recommend(model=None, *, width=None, height=None, top=None, cluster=None, db=None, **flags):
    """The whole recommendation of one inference (a Recommendation); the arguments are plan()'s.
    top: at most this many rows (plan() takes at most this many plans)."""
    o = _options(model, width, height, top, cluster, db, flags)
    text, notes = _recommend(o)
    for note in notes.splitlines():  # e.g. "note: no local GPU found by nvidia-smi; planning for h100-sxm"
        _warnings.warn(note.removeprefix("note: "), stacklevel=3)
    return Recommendation(_json.loads(text), top)


def plan(model=None, *, width=None, height=None, top=None, cluster=None, db=None, **flags):
    """The plans of one inference, fastest first: those that run, or with all=True every plan
    (the invalid ones last, with their reasons). Every query flag of `cpplan` is a keyword
    argument, its name without the dashes and with '_' for '-' (query_fields() lists them):

    model         a model profile name (`cpplan list models`); default flux.1-dev
    model_config  instead of model: a diffusers transformer config as a dict
                  (pipe.transformer.config), or the path of its config.json or pipeline folder
    gpus          GPUs for the job (required unless topology sets it)
    width, height output size in pixels (both or neither; default the model's), or res="WxH"
    frames, steps, batch, hardware, runtime, topology, nodes, text_encoder, vae, host_mem,
    attention_backend, text_tokens, topology_file, num_pipeline_patch, pipefusion_warmup_steps
                  as --frames, --steps, ... (numbers or text)
    all, offload_text_encoders, offload_idle_transformer
                  True or False, as the flags
    framework     only the plans this framework runs: "diffusers", "xdit", "cache-dit", "sglang" or
                  "vllm-omni" (--framework)
    dtype, cache  the DiT's number format and step cache (--dtype, --cache): one name, "any" (every
                  one that runs here: each plan is ranked with each, plan.dtype and plan.cache say
                  which), or names separated by commas; cache_fn, cache_bn, cache_warmup,
                  cache_every, cache_hit_rate, cache_max_cached as --cache-fn, ...
    profiles, framework_version
                  one value or a list of them (--profiles, --framework-version)
    cluster, db   as --cluster and --db
    top           at most this many plans

    Raises InvalidInput (a ValueError) with the CLI's one-line message on bad input, and TypeError
    for a keyword that is no query flag.
    """
    rec = recommend(model, width=width, height=height, top=top, cluster=cluster, db=db, **flags)
    return rec.plans[:top] if top is not None else rec.plans


def query_fields():
    """The query flags plan() and recommend() take, as cpplan declares them: a list of dicts with
    key (the keyword), flag, kind, lo, hi, choices, default and help."""
    return _query_fields()


def _options(model, width, height, top, cluster, db, flags):
    """plan()'s arguments as the CLI's options, checked as the CLI checks its flags."""
    model_config = flags.pop("model_config", None)
    if model is not None and model_config is not None:
        raise InvalidInput(f"model = {model!r} and model_config: give one of them, not both")
    if (width is None) != (height is None):
        given, missing = ("width", "height") if height is None else ("height", "width")
        raise InvalidInput(f"{given} = {width if height is None else height!r}: needs {missing} too (both or neither)")
    if width is not None and flags.get("res") is not None:
        raise InvalidInput(f"res = {flags['res']!r} and width/height: give one of them, not both")
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise InvalidInput(f"top = {top!r}: must be a positive integer")

    o = _Options()
    if model is not None:
        o.set("model", _text(model))
    if model_config is not None:
        if isinstance(model_config, _Mapping):
            o.model_config_json = _config_json(model_config)
        elif isinstance(model_config, (str, _os.PathLike)):
            o.set("model_config", _os.fspath(model_config))
        else:
            raise InvalidInput(f"model_config = {type(model_config).__name__}: must be a dict "
                               "(pipe.transformer.config) or the path of a config.json or pipeline folder")
    if width is not None:
        o.set("res", f"{_text(width)}x{_text(height)}")
    for name, value in (("cluster", cluster), ("db", db)):
        if value is not None:
            setattr(o, name, _text(value))
    fields = {f["key"]: f for f in _query_fields()}
    for name, value in flags.items():
        field = fields.get(name)
        if field is None:
            raise TypeError(f"plan() got an unexpected keyword argument {name!r} (cpplan.query_fields() lists them)")
        if value is None:
            continue
        if field["kind"] == "flag":
            o.set(name, "true" if value else "false")
        elif field["kind"] == "list":
            for item in [value] if isinstance(value, (str, _os.PathLike)) else value:
                o.set(name, _text(item))
        else:
            o.set(name, _text(value))
    return o


def _text(value):
    """An option as the CLI would receive it: numbers as their digits, paths as strings."""
    return _os.fspath(value) if isinstance(value, _os.PathLike) else str(value)


def _config_json(config):
    """A diffusers config (a FrozenDict: a dict) as JSON text. Tuples become lists (json does
    that); numpy scalars and arrays their values; sets sorted lists; anything else its str."""

    def convert(value):
        if hasattr(value, "tolist"):
            return value.tolist()
        if isinstance(value, (set, frozenset)):
            return sorted(value, key=str)
        if isinstance(value, _Mapping):
            return dict(value)
        return str(value)

    return _json.dumps(dict(config), default=convert)


# Under `cpplan tune`: the plan of this launch and its recorder (cpplan/tune.py; record needs torch).
from .tune import current_plan, record  # noqa: E402
