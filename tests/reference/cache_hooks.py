#!/usr/bin/env python3
"""diffusers' TaylorSeer hook against cpplan's pricing of `--cache taylorseer` under diffusers.

diffusers' TaylorSeerCacheConfig hooks the modules whose names fully match its identifiers
(hooks/taylorseer_cache.py _TRANSFORMER_BLOCK_IDENTIFIERS), read here from diffusers itself. For
every case of tests/reference/cases.json this builds the class from its config on the meta device
and names its attention modules (diffusers' Attention and AttentionModuleMixin classes) inside the
repeated blocks (the top-level lists whose name ends in "blocks"). The hook covers the class when
it attaches to at least one module and every block attention module is one of them or inside one;
then cpplan must price diffusers' run of the plan with cached steps, and with none when the hook
attaches to nothing. A class it covers in part (some block attention modules left out) is reported
by name and not failed: cpplan prices it as covered or as not hooked, neither exactly.

usage (in the reference venv): cache_hooks.py CPPLAN      exit 1 on a disagreement
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import diffusers
from diffusers.hooks.taylorseer_cache import _TRANSFORMER_BLOCK_IDENTIFIERS
from diffusers.models.attention_processor import Attention

sys.path.insert(0, str(Path(__file__).resolve().parent))
import diffusers_meta  # noqa: E402
from compare import defaults_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
try:
    from diffusers.models.attention import AttentionModuleMixin
    ATTENTION = (Attention, AttentionModuleMixin)
except ImportError:
    ATTENTION = (Attention,)


def coverage(model):
    """('all' | 'part' | 'none', the block attention modules the hook leaves out)."""
    names = [n for n, _ in model.named_modules()]
    hooked = [n for n in names if any(re.fullmatch(p, n) for p in _TRANSFORMER_BLOCK_IDENTIFIERS)]
    in_blocks = [n for n, m in model.named_modules() if isinstance(m, ATTENTION) and n.split(".")[0].endswith("blocks")]
    left = [n for n in in_blocks if not any(n == h or n.startswith(h + ".") for h in hooked)]
    if not hooked:
        return "none", left
    return ("part" if left else "all"), left


def cpplan_cached_steps(cpplan, config):
    """diffusers' cached steps of cpplan's top plan under --cache taylorseer; None if diffusers runs no plan."""
    argv = [cpplan, "--json", "--gpus", "1", "--hardware", "h100-sxm", "--model-config", str(config), "--cache",
            "taylorseer"]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    plans = json.loads(r.stdout)["plans"]
    for p in plans:
        run = p.get("framework_runs", {}).get("diffusers")
        if run is not None:
            return run["cached_steps"], ""
    return None, "diffusers runs no plan of it"


def main():
    if len(sys.argv) != 2:
        print("usage: cache_hooks.py CPPLAN", file=sys.stderr)
        return 2
    cpplan = sys.argv[1]
    cases = [c for c in json.loads((ROOT / "tests/reference/cases.json").read_text())["cases"] if not c.get("skip")]
    tmp = Path(tempfile.mkdtemp(prefix="cpplan-cache-hooks-"))
    failed, partial, checked = [], [], 0
    print(f"diffusers {diffusers.__version__}: TaylorSeer identifiers {list(_TRANSFORMER_BLOCK_IDENTIFIERS)}")
    for c in cases:
        if c.get("config"):
            cfg = json.loads((ROOT / c["config"]).read_text())
            config = ROOT / c["config"]
        else:
            cfg = {**defaults_config(c["class"]), **c.get("overrides", {})}
            config = tmp / f"{c['class']}.json"
            config.write_text(json.dumps(cfg))
        try:
            model = diffusers_meta.build(cfg)
        except Exception as e:  # a class diffusers cannot build says why, by name
            print(f"{c['name']:44} diffusers cannot build it: {type(e).__name__}: {e}")
            continue
        covered, left = coverage(model)
        cached, why = cpplan_cached_steps(cpplan, config)
        if cached is None:
            print(f"{c['name']:44} hook covers {covered:4}  cpplan: {why}")
            continue
        checked += 1
        verdict = "ok"
        if covered == "part":
            partial.append(f"{c['name']} ({c['class']}): the hook leaves out {', '.join(left[:3])}")
            verdict = "part: reported"
        elif (covered == "all") != (cached > 0):
            failed.append(f"{c['name']} ({c['class']}): the hook covers {covered}, cpplan prices {cached} cached steps")
            verdict = "DISAGREE"
        print(f"{c['name']:44} hook covers {covered:4}  cpplan: {cached:2} cached steps  {verdict}")
    print(f"{checked} cases checked, {len(failed)} disagree, {len(partial)} covered in part")
    for p in partial:
        print(f"covered in part: {p}")
    for f in failed:
        print(f"DISAGREE: {f}")
    return 1 if failed or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
