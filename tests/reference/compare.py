#!/usr/bin/env python3
"""cpplan's transformer against diffusers' own (ctest label `reference`).

For every case of tests/reference/cases.json (one per diffusers class cpplan plans; a class's
published config from tests/data/diffusers, else the config of its constructor defaults written
from profiles/classes/<Class>.toml), runs diffusers_meta.py in the reference venv
(scripts/reference-venv.sh) and `cpplan check --json` at the same resolution, frames and text
length, and compares the "transformer" object: FLOPs of one forward within 2%, parameter bytes
within 1%. A class diffusers cannot build or run on meta is listed with diffusers' reason; a case
marked `known` (a gap that needs a cost-model change) is listed with its reason and does not fail.

usage: compare.py CPPLAN VENV_PYTHON [--only CLASS ...] [--json OUT]
"""
import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLOPS_TOL, BYTES_TOL = 0.02, 0.01


def defaults_config(cls):
    """The config from_config builds from the class name alone: the class file's [defaults], its
    `none` fields null (tests/core/test_diffusers_classes.cpp's defaults_config)."""
    spec = tomllib.loads((ROOT / "profiles/classes" / f"{cls}.toml").read_text())
    cfg = dict(spec.get("defaults", {}))
    for n in spec.get("none", []):
        cfg[n] = None
    cfg["_class_name"] = cls
    return cfg


def latent(case):
    if "width" not in case:
        return {}
    sp, tp = case["vae"]
    frames = case.get("frames", 1)
    return {"latent_height": case["height"] // sp, "latent_width": case["width"] // sp,
            "latent_frames": (frames - 1) // tp + 1}


def cpplan_transformer(cpplan, config, case):
    argv = [cpplan, "check", "--json", "--gpus", "1", "--hardware", "h100-sxm", "--model-config", str(config)]
    if "width" in case:
        argv += ["--res", f"{case['width']}x{case['height']}", "--text-tokens", str(case["text"])]
    if case.get("frames", 1) > 1:
        argv += ["--frames", str(case["frames"])]
    r = subprocess.run(argv, capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["transformer"], None
    except (json.JSONDecodeError, KeyError):
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]


def rel(a, b):
    return (a - b) / b if b else float("inf")


def compare_cell(theirs, mine, label, unit, widths, tol):
    """One quantity's table cell (diffusers, cpplan, relative difference; '-' where diffusers has no
    figure) and, beyond the tolerance, its failure."""
    if theirs is None:
        return f"{'-':>{widths[0]}} {mine / unit:{widths[1]}.3f} {'-':>7}", []
    e = rel(mine, theirs)
    cell = f"{theirs / unit:{widths[0]}.3f} {mine / unit:{widths[1]}.3f} {e:+7.2%}"
    return cell, [f"{label} {e:+.2%}"] if abs(e) > tol else []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cpplan")
    ap.add_argument("python")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json")
    a = ap.parse_args()
    cases = json.loads((ROOT / "tests/reference/cases.json").read_text())["cases"]
    if a.only:
        cases = [c for c in cases if c["class"] in a.only or c["name"] in a.only]
    skipped = [c for c in cases if c.get("skip")]
    cases = [c for c in cases if not c.get("skip")]
    tmp = Path(tempfile.mkdtemp(prefix="cpplan-reference-"))
    ref_cases = []
    for c in cases:
        if c.get("config"):
            config = ROOT / c["config"]
        else:
            config = tmp / f"{c['name']}.json"
            config.write_text(json.dumps({**defaults_config(c["class"]), **c.get("overrides", {})}))
        c["_config"] = config
        ref_cases.append({"name": c["name"], "config": str(config), "text_tokens": c.get("text"), **latent(c)})
    (tmp / "cases.json").write_text(json.dumps(ref_cases))
    subprocess.run([a.python, str(ROOT / "tests/reference/diffusers_meta.py"), str(tmp / "cases.json"),
                    str(tmp / "diffusers.json"), "/"], check=True)
    ref = {r["name"]: r for r in json.loads((tmp / "diffusers.json").read_text())["cases"]}
    versions = json.loads((tmp / "diffusers.json").read_text())
    print(f"reference: diffusers {versions['diffusers']}, torch {versions['torch']}, meta device, batch 1")
    print(f"{'case':34} {'diffusers TFLOP':>15} {'cpplan TFLOP':>13} {'err':>7}  "
          f"{'diffusers GB':>12} {'cpplan GB':>10} {'err':>7}  fwd/step  verdict")
    failed, not_run, rows, known = [], [], [], []
    for c in cases:
        r = ref[c["name"]]
        mine, why = cpplan_transformer(a.cpplan, c["_config"], c)
        row = {"name": c["name"], "class": c["class"], "diffusers": r, "cpplan": mine}
        rows.append(row)
        if mine is None:
            failed.append(f"{c['name']}: cpplan refused: {why}")
            print(f"{c['name']:34} cpplan refused: {why}")
            continue
        cells, bad = [], []
        for key, label, unit, widths, tol in (("forward_flops", "FLOPs", 1e12, (15, 13), FLOPS_TOL),
                                              ("param_bytes", "param bytes", 1e9, (12, 10), BYTES_TOL)):
            cell, miss = compare_cell(r.get(key), mine[key], label, unit, widths, tol)
            cells.append(cell)
            bad += miss
        verdict = "ok"
        if bad and c.get("known"):
            verdict = f"KNOWN ({', '.join(bad)}): {c['known']}"
            known.append(c["name"])
        elif bad:
            verdict = "FAIL: " + ", ".join(bad)
            failed.append(f"{c['name']}: {', '.join(bad)}")
        if "error" in r:
            verdict += f"; diffusers: {r['error']}"
            not_run.append(f"{c['name']} ({c['class']}): {r['error']}")
        # forwards of one sample per denoising step (true CFG: 2, batched by the pipeline)
        print(f"{c['name']:34} {cells[0]}  {cells[1]}  {mine['passes_per_step']:8}  {verdict}")
    print(f"\n{len(cases)} cases, {len(cases) - len(failed) - len(known)} within tolerance (FLOPs {FLOPS_TOL:.0%}, "
          f"parameter bytes {BYTES_TOL:.0%}), {len(known)} known gaps ({', '.join(known)}), {len(failed)} failed")
    for c in skipped:
        not_run.append(f"{c['name']} ({c['class']}): not compared: {c['skip']}")
    if not_run:
        print(f"not built or not run by diffusers ({len(not_run)}):")
        for line in not_run:
            print("  " + line)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
    for line in failed:
        print("FAIL " + line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
