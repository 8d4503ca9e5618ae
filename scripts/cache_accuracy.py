#!/usr/bin/env python3
"""The tables of scripts/cache-accuracy.sh: the held-out runs of HELDOUT_DB, each configuration
predicted from TRAIN_DB's probe and calibration by `CPPLAN run --dry-run --json` (the prediction a
run of it would record). Usage: cache_accuracy.py CPPLAN TRAIN_DB HELDOUT_DB.

1. Each cached configuration's whole denoising (cpplan run's cache.denoise_ms) and each uncached
   step: the prediction over the median of the configuration's runs, minus 1.
2. The cached step over the computed step, predicted and measured within each run (median over the
   runs): a run interleaves its computed and cached steps, so this share does not move with the
   machine's speed from one run to the next; and the denoising predicted from the run's own
   computed step at the predicted share.
Runs whose host lent more than 5% of its CPU time to other guests (host.steal_fraction) are left
out, as `cpplan calibrate` leaves them out."""
import collections
import json
import os
import sqlite3
import statistics as st
import subprocess
import sys

MAX_STEAL = 0.05
SIZES = (160, 224, 128, 192, 256)  # held out, then the training sizes
SCHEDULES = ((0, 2), (1, 3))       # (last blocks, every): F1B0 every 2, F1B1 every 3
RUN_COLUMNS = "id, model, width, height, steps, warmup, ring, ulysses"


def key_of(run):
    """(width, ulysses, last blocks, every): last blocks -1 and every 0 for an uncached run."""
    return (run["width"], run["ulysses"], int(run.get("cache.last_blocks", -1)), int(run.get("cache.every", 0)))


def held_out_runs(c):
    """The runs of the held-out database by configuration, and how many were left out for steal."""
    groups, left_out = collections.defaultdict(list), 0
    c.row_factory = sqlite3.Row
    for row in c.execute(f"select {RUN_COLUMNS}, step_ms from runs where status = 'ok' order by id"):
        run = dict(row)
        run.update(c.execute("select name, value from run_metrics where run_id = ? and step is null", (run["id"],)))
        if run.get("host.steal_fraction", 0) > MAX_STEAL:
            left_out += 1
            continue
        groups[key_of(run)].append(run)
    return groups, left_out


def run_flags(run):
    """The `cpplan run` flags of a recorded run's configuration."""
    flags = ["--model", run["model"], "--res", f"{run['width']}x{run['height']}", "--steps", str(run["steps"]),
             "--warmup", str(run["warmup"])]
    for axis in ("ring", "ulysses"):
        if run[axis] > 1:
            flags += [f"--{axis}", str(run[axis])]
    if "cache.every" in run:
        flags += ["--cache", "fixed", "--cache-fn", str(int(run["cache.first_blocks"])), "--cache-bn",
                  str(int(run["cache.last_blocks"])), "--cache-warmup", str(int(run["cache.warmup_steps"])),
                  "--cache-every", str(int(run["cache.every"]))]
    return flags


def predict(cpplan, train_db, run):
    out = subprocess.run([cpplan, "run", *run_flags(run), "--db", train_db, "--dry-run", "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{cpplan} run --dry-run: {out.stderr.strip()}")
    predicted = json.loads(out.stdout)["predicted"]
    if not predicted or not predicted.get("calibrated"):
        fail(f"TRAIN_DB = {train_db}: no calibrated model of this machine to predict from (cpplan probe, calibrate)")
    return predicted


def cell(e):
    return "n/a" if e is None else f"{e[0]:+.1%}" + ("" if e[1] >= 3 else f" ({e[1]} runs)")


def whole_runs(groups, predicted):
    print("| size | 1 rank F1B0 | 1 rank F1B1 | Ulysses 2 F1B0 | Ulysses 2 F1B1 | uncached step, 1 rank / Ulysses 2 |")
    print("|---|---|---|---|---|---|")
    tallies = collections.defaultdict(list)
    for w in SIZES:
        cells = []
        for u in (1, 2):
            for last_blocks, every in SCHEDULES:
                k = (w, u, last_blocks, every)
                rs = groups.get(k)
                e = (predicted[k]["cache"]["denoise_ms"] / st.median(r["cache.denoise_ms"] for r in rs) - 1,
                     len(rs)) if rs else None
                cells.append(cell(e))
                if e:
                    tallies["held-out sizes" if w in (160, 224) else "training sizes"].append(e[0])
        uncached = []
        for u in (1, 2):
            rs = groups.get((w, u, -1, 0))
            uncached.append(cell(None) if not rs else cell(
                (predicted[(w, u, -1, 0)]["step_ms"] / st.median(r["step_ms"] for r in rs) - 1, len(rs))))
        print(f"| {w}x{w} | " + " | ".join(cells) + " | " + " / ".join(uncached) + " |")
    for name, v in tallies.items():
        print(f"{name}: {sum(abs(x) <= 0.10 for x in v)} of {len(v)} within 10%, "
              f"MAPE {st.mean(abs(x) for x in v):.1%}, the worst {max(v, key=abs):+.1%}")


def shares(groups, predicted):
    print("| size | plan | schedule | runs | cached / computed step, predicted | measured (median of runs) | error "
          "| denoising from the run's own computed step |")
    print("|---|---|---|---|---|---|---|---|")
    share_errors, denoise_errors = [], []
    for w in SIZES:
        for u in (1, 2):
            for last_blocks, every in SCHEDULES:
                rs = groups.get((w, u, last_blocks, every))
                if not rs:
                    continue
                k = predicted[(w, u, last_blocks, every)]["cache"]
                p = k["cached_step_ms"] / k["computed_step_ms"]
                m = st.median(r["cache.cached_step_ms"] / r["cache.computed_step_ms"] for r in rs)
                d = st.median((r["cache.computed_steps"] + r["cache.cached_steps"] * p) * r["cache.computed_step_ms"]
                              / r["cache.denoise_ms"] - 1 for r in rs)
                share_errors.append(p / m - 1)
                denoise_errors.append(d)
                plan = "1 rank" if u == 1 else "Ulysses 2"
                print(f"| {w}x{w} | {plan} | F1B{last_blocks} every {every} | {len(rs)} | {p:.3f} | {m:.3f} "
                      f"| {p / m - 1:+.1%} | {d:+.1%} |")
    print(f"share: {sum(abs(e) <= 0.10 for e in share_errors)} of {len(share_errors)} within 10%, the worst "
          f"{max(share_errors, key=abs):+.1%}; denoising from the run's computed step: "
          f"{sum(abs(e) <= 0.10 for e in denoise_errors)} of {len(denoise_errors)} within 10%, the worst "
          f"{max(denoise_errors, key=abs):+.1%}")


def fail(message):
    print(f"cache_accuracy: {message}", file=sys.stderr)
    sys.exit(2)


def open_database(name, db):
    try:  # read-only: a missing file is an error, not a new empty database
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        c.execute("select 1 from runs limit 1")
        return c
    except sqlite3.Error as e:
        fail(f"{name} = {db}: not a cpplan database with runs ({e})")


def main():
    if len(sys.argv) != 4:
        fail("usage: cache_accuracy.py CPPLAN TRAIN_DB HELDOUT_DB")
    cpplan, train_db, heldout_db = sys.argv[1:]
    if not os.access(cpplan, os.X_OK):
        fail(f"CPPLAN = {cpplan}: not an executable (scripts/build.sh builds build/cli/cpplan)")
    open_database("TRAIN_DB", train_db).close()
    groups, left_out = held_out_runs(open_database("HELDOUT_DB", heldout_db))
    predicted = {k: predict(cpplan, train_db, rs[0]) for k, rs in groups.items()}
    print(f"held-out runs: {sum(len(v) for v in groups.values()) + left_out}, "
          f"left out for more than 5% steal: {left_out}")
    whole_runs(groups, predicted)
    print()
    shares(groups, predicted)


if __name__ == "__main__":
    main()
