#!/usr/bin/env python3
"""The tables of scripts/cache-accuracy.sh from its database: runs after run id LAST are the
held-out ones. Usage: cache_accuracy.py DB LAST.

1. Each cached run's whole denoising (cpplan run's cache.denoise_ms) and each uncached step, the
   prediction the run recorded over the median of the configuration's runs, minus 1.
2. The cached step over the computed step, predicted (the run's predicted.* figures) and measured
   within each run (median over the runs): a run interleaves its computed and cached steps, so this
   share does not move with the machine's speed from one run to the next; and the denoising
   predicted from the run's own computed step at that share.
Runs whose host lent more than 5% of its CPU time to other guests (host.steal_fraction) are left
out, as `cpplan calibrate` leaves them out."""
import collections
import sqlite3
import statistics as st
import sys

MAX_STEAL = 0.05
SIZES = (160, 224, 128, 192, 256)  # held out, then the training sizes
SCHEDULES = ((0, 2), (1, 3))       # (last blocks, every): F1B0 every 2, F1B1 every 3


def runs_by_configuration(c, last):
    groups, left_out = collections.defaultdict(list), 0
    for rid, width, ulysses, step, predicted in c.execute(
            "select id, width, ulysses, step_ms, predicted_step_ms from runs where status = 'ok' and id > ?", (last,)):
        m = dict(c.execute("select name, value from run_metrics where run_id = ? and step is null", (rid,)))
        if m.get("host.steal_fraction", 0) > MAX_STEAL:
            left_out += 1
            continue
        m["step_ms"], m["predicted_step_ms"] = step, predicted
        groups[(width, ulysses, int(m.get("cache.last_blocks", -1)), int(m.get("cache.every", 0)))].append(m)
    return groups, left_out


def cell(e):
    return "n/a" if e is None else f"{e[0]:+.1%}" + ("" if e[1] >= 3 else f" ({e[1]} runs)")


def whole_runs(groups):
    print("| size | 1 rank F1B0 | 1 rank F1B1 | Ulysses 2 F1B0 | Ulysses 2 F1B1 | uncached step, 1 rank / Ulysses 2 |")
    print("|---|---|---|---|---|---|")
    tallies = collections.defaultdict(list)
    for w in SIZES:
        cells = []
        for u in (1, 2):
            for last_blocks, every in SCHEDULES:
                rs = groups.get((w, u, last_blocks, every))
                e = (rs[0]["predicted.denoise_ms"] / st.median(r["cache.denoise_ms"] for r in rs) - 1, len(rs)) if rs else None
                cells.append(cell(e))
                if e:
                    tallies["held-out sizes" if w in (160, 224) else "training sizes"].append(e[0])
        uncached = []
        for u in (1, 2):
            rs = groups.get((w, u, -1, 0))
            uncached.append(cell(None) if not rs else cell(
                (rs[0]["predicted_step_ms"] / st.median(r["step_ms"] for r in rs) - 1, len(rs))))
        print(f"| {w}x{w} | " + " | ".join(cells) + " | " + " / ".join(uncached) + " |")
    for name, v in tallies.items():
        print(f"{name}: {sum(abs(x) <= 0.10 for x in v)} of {len(v)} within 10%, "
              f"MAPE {st.mean(abs(x) for x in v):.1%}, the worst {max(v, key=abs):+.1%}")


def shares(groups):
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
                p = rs[0]["predicted.cached_step_ms"] / rs[0]["predicted.computed_step_ms"]
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


def main():
    if len(sys.argv) != 3:
        fail("usage: cache_accuracy.py DB LAST (the runs after run id LAST are the held-out ones)")
    db, last = sys.argv[1], sys.argv[2]
    if not last.isdigit():
        fail(f"LAST = {last}: must be a run id, a whole number")
    try:  # read-only: a missing file is an error, not a new empty database
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        c.execute("select 1 from runs limit 1")
    except sqlite3.Error as e:
        fail(f"DB = {db}: not a cpplan database with runs ({e})")
    groups, left_out = runs_by_configuration(c, int(last))
    print(f"held-out runs: {sum(len(v) for v in groups.values()) + left_out}, "
          f"left out for more than 5% steal: {left_out}")
    whole_runs(groups)
    print()
    shares(groups)


if __name__ == "__main__":
    main()
