#!/usr/bin/env python3
"""diffusers' own verdict on a context-parallel split against `cpplan check --framework diffusers`.

For the classes with a `_cp_plan` and a published config in tests/data/diffusers, and the splits
ulysses 2/4/8 and ring 2/4, diffusers accepts a split when: the class has a `_cp_plan`;
`ContextParallelConfig(ring_degree=r, ulysses_degree=u)` constructs; Ulysses' all-to-all can
reshape the heads (attention_dispatch.py TemplatedUlyssesAttention: H // u heads per rank, so u
must divide num_attention_heads); and every tensor the `_cp_plan` splits has a length divisible by
the mesh (hooks/context_parallel.py asserts `size % mesh.size() == 0`): the image/video tokens, and
the text tokens where the plan splits encoder_hidden_states. Ring runs with cpplan's default
attention backend (flash, which returns the LSE diffusers' ring merges with).

usage (in the reference venv): cp_check.py CPPLAN      exit 1 on a disagreement
"""
import json
import subprocess
import sys
from pathlib import Path

import diffusers
from diffusers import ContextParallelConfig
from diffusers.models._modeling_parallel import ContextParallelInput

ROOT = Path(__file__).resolve().parents[2]
SPLITS = [(1, 2), (1, 4), (1, 8), (2, 1), (4, 1)]  # (ring, ulysses)
# name, config, width, height, frames, text tokens, VAE (spatial, temporal), the pipeline packs 2x2
CASES = [
    ("flux.1-dev", 1024, 1024, 1, 512, (8, 1)),
    ("flux.1-dev", 1008, 1008, 1, 512, (8, 1)),
    ("flux.1-dev", 1024, 1024, 1, 77, (8, 1)),      # the text split too: 77 tokens over 2, 4, 8
    ("flux.2-dev", 1024, 1024, 1, 512, (8, 1)),
    ("qwen-image", 1328, 1328, 1, 256, (8, 1)),
    ("wan2.1-t2v-1.3b", 832, 480, 81, 512, (8, 4)),
    ("wan2.1-t2v-14b", 1280, 720, 81, 512, (8, 4)),
    ("wan2.1-t2v-14b", 1280, 720, 81, 77, (8, 4)),  # Wan's plan keeps the text whole
    ("wan2.2-ti2v-5b", 1280, 704, 121, 512, (16, 4)),
    ("ltx-video-2b", 704, 480, 161, 128, (32, 8)),
]


def split_inputs(plan):
    """The names of the tensors the plan splits (its ContextParallelInput entries)."""
    names = set()
    for entry in plan.values():
        if isinstance(entry, dict):
            for k, v in entry.items():
                if isinstance(v, ContextParallelInput):
                    names.add(k)
    return names


def image_tokens(cfg, w, h, frames, vae):
    sp, tp = vae
    lf = (frames - 1) // tp + 1
    p = cfg.get("patch_size", 1)
    if isinstance(p, list):
        pt, p = p[0], p[1]
    else:
        pt = cfg.get("patch_size_t", 1) or 1
    if cfg["_class_name"] in ("FluxTransformer2DModel", "Flux2Transformer2DModel", "QwenImageTransformer2DModel"):
        p = 2  # the pipeline's 2x2 packing (patch_size 1 in FLUX's config)
    return (lf // pt) * (h // sp // p) * (w // sp // p)


def diffusers_verdict(cfg, r, u, tokens, text):
    cls = getattr(diffusers, cfg["_class_name"])
    plan = getattr(cls, "_cp_plan", None)
    if not plan:
        return False, f"{cls.__name__} has no _cp_plan"
    try:
        ContextParallelConfig(ring_degree=r, ulysses_degree=u)
    except (ValueError, NotImplementedError) as e:
        return False, f"ContextParallelConfig: {e}"
    heads = cfg["num_attention_heads"]
    if u > 1 and heads % u:
        return False, f"Ulysses: {heads} heads do not reshape into {u} groups"
    n = r * u
    if tokens % n:
        return False, f"_cp_plan splits {tokens} image tokens over {n}"
    if "encoder_hidden_states" in split_inputs(plan) and text % n:
        return False, f"_cp_plan splits {text} text tokens over {n}"
    return True, "accepted"


def cpplan_verdict(cpplan, config, w, h, frames, text, r, u):
    argv = [cpplan, "check", "--json", "--framework", "diffusers", "--hardware", "h100-sxm", "--gpus", str(r * u),
            "--model-config", str(config), "--res", f"{w}x{h}", "--text-tokens", str(text)]
    if frames > 1:
        argv += ["--frames", str(frames)]
    argv += ["--ring", str(r)] if r > 1 else ["--ulysses", str(u)]
    out = subprocess.run(argv, capture_output=True, text=True)
    j = json.loads(out.stdout)
    ok = bool(j["valid"]) and j["diffusers_config"] is not None
    why = "; ".join(j.get("reasons") or []) or (j.get("frameworks_unavailable") or {}).get("diffusers", "") or "valid"
    return ok, why


def main():
    cpplan = sys.argv[1]
    disagree = 0
    print(f"diffusers {diffusers.__version__}: split verdicts (ring, ulysses) against cpplan check --framework diffusers")
    for name, w, h, frames, text, vae in CASES:
        config = ROOT / "tests/data/diffusers" / name / "config.json"
        cfg = json.loads(config.read_text())
        tokens = image_tokens(cfg, w, h, frames, vae)
        for r, u in SPLITS:
            d_ok, d_why = diffusers_verdict(cfg, r, u, tokens, text)
            c_ok, c_why = cpplan_verdict(cpplan, config, w, h, frames, text, r, u)
            mark = "agree" if d_ok == c_ok else "DISAGREE"
            disagree += d_ok != c_ok
            split = f"ring {r}" if r > 1 else f"ulysses {u}"
            print(f"{mark:8} {name:16} {w}x{h}x{frames} text {text:3} {split:10} diffusers {'accepts' if d_ok else 'rejects'}"
                  f" ({d_why}); cpplan {'accepts' if c_ok else 'rejects'} ({c_why[:160]})")
    print(f"{disagree} disagreements")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
