#!/usr/bin/env python3
"""The published pairs a change must not misorder: a regression check of cpplan's predictions.

Usage:
  published-order.py BASELINE.json NAME=RUN.json [NAME=RUN.json ...]            check
  published-order.py BASELINE.json --write COMMIT NAME=RUN.json [...]          record a baseline
  published-order.py BASELINE.json --add COMMIT [--file FILE] NAME=RUN.json [...]   extend it

Each RUN.json is what `cpplan calibrate --import ... --json` printed: with --check, the shipped
profiles' predictions of the published rows; without, a fit's (its in-sample "fitted_ms"). A pair
is two rows of one source, box (or GPU kind), size and unit whose measured times differ; it is
ordered right when the prediction puts them in the measured order. The baseline lists, for each
NAME, the pairs ordered right at COMMIT (rows named by their "where"). The check fails (exit 1)
naming every baseline pair that is now misordered; a NAME the baseline lacks, or a baseline row
no run has, is an error too (exit 2): the check would otherwise pass by comparing nothing.

--add extends a baseline without recording its pairs anew: it appends, under "added", the pairs
ordered right at COMMIT by each NAME's run that the baseline does not list yet for NAME (with
--file, only pairs of rows of that published file, named as the rows' "where" names it): a new
published file, or a new run, gets its own commit while the pairs recorded before keep theirs.
The check holds every part of the baseline."""
import json
import sys

KEY = ("source", "hardware", "box", "resolution", "per_image")


def comparable(a, b):
    return all((a.get(k) or "") == (b.get(k) or "") for k in KEY) and a["measured_ms"] != b["measured_ms"]


def ordered(a, b):
    return (a["measured_ms"] < b["measured_ms"]) == (a["fitted_ms"] < b["fitted_ms"])


def pairs(rows):
    """Every comparable pair, as ((where_a, where_b), ordered right)."""
    out = []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if comparable(a, b):
                out.append(((a["where"], b["where"]), ordered(a, b)))
    return out


def label(rows_by_where, pair):
    a, b = (rows_by_where[w] for w in pair)
    return (f"{a['source']} {a['box'] or a['hardware']} {a['resolution']}: {a['plan']} ({a['gpus']} GPUs) "
            f"measured {a['measured_ms']:.4g} ms, predicted {a['fitted_ms']:.4g} ms vs {b['plan']} ({b['gpus']} GPUs) "
            f"measured {b['measured_ms']:.4g} ms, predicted {b['fitted_ms']:.4g} ms")


def runs(args):
    out = {}
    for arg in args:
        name, _, path = arg.partition("=")
        if not path:
            sys.exit(f"published-order: {arg}: must be NAME=RUN.json")
        out[name] = json.load(open(path))["rows"]
    return out


def write(baseline_path, commit, named):
    baseline = {"commit": commit, "about": "pairs of published rows each named run ordered right at this commit "
                "(scripts/published-order.py)", "ordered": {}}
    for name, rows in named.items():
        baseline["ordered"][name] = [list(p) for p, right in pairs(rows) if right]
        total = len(pairs(rows))
        print(f"published-order: {name}: {len(baseline['ordered'][name])} of {total} pairs ordered right at {commit}")
    with open(baseline_path, "w") as f:
        json.dump(baseline, f, indent=1)
        f.write("\n")


def parts(baseline):
    """The baseline's recorded pairs: (commit, {NAME: pairs}) for its own and each added part."""
    return [(baseline["commit"], baseline["ordered"])] + [(a["commit"], a["ordered"]) for a in baseline.get("added", [])]


def recorded(baseline, name):
    """Every pair the baseline holds for run NAME, each with the commit it was ordered right at."""
    return [(tuple(p), commit) for commit, ordered in parts(baseline) for p in ordered.get(name, [])]


def add(baseline_path, commit, only_file, named):
    baseline = json.load(open(baseline_path))
    part = {"commit": commit, "about": f"pairs ordered right at {commit}" + (f", rows of {only_file}" if only_file else ""),
            "ordered": {}}
    if only_file:
        part["file"] = only_file
    for name, rows in named.items():
        known = {p for p, _ in recorded(baseline, name)}
        mine = [(p, right) for p, right in pairs(rows)
                if not only_file or all(w.split(": ")[0] == only_file for w in p)]
        part["ordered"][name] = [list(p) for p, right in mine if right and p not in known]
        print(f"published-order: {name}: {sum(right for _, right in mine)} of {len(mine)} pairs"
              + (f" of {only_file}" if only_file else "") + f" ordered right at {commit}; "
              f"{len(part['ordered'][name])} added to the baseline")
    baseline.setdefault("added", []).append(part)
    with open(baseline_path, "w") as f:
        json.dump(baseline, f, indent=1)
        f.write("\n")


def check(baseline_path, named):
    baseline = json.load(open(baseline_path))
    failed = False
    for name, rows in named.items():
        held = recorded(baseline, name)
        if not any(name in ordered for _, ordered in parts(baseline)):
            known = sorted({n for _, ordered in parts(baseline) for n in ordered})
            sys.stderr.write(f"published-order: {name}: the baseline has no such run (it has {', '.join(known)})\n")
            sys.exit(2)
        by_where = {r["where"]: r for r in rows}
        now = dict(pairs(rows))
        kept = 0
        for pair, commit in held:
            if pair not in now:
                sys.stderr.write(f"published-order: {name}: row {pair[0]} or {pair[1]} is not in the run\n")
                sys.exit(2)
            if now[pair]:
                kept += 1
            else:
                failed = True
                print(f"published-order: {name}: misordered now, ordered right at {commit}: {label(by_where, pair)}")
        commits = ", ".join(sorted({c for _, c in held}))
        right = sum(now.values())
        print(f"published-order: {name}: {kept} of the {len(held)} pairs ordered right at {commits} still are; "
              f"{right} of {len(now)} pairs ordered right now")
    sys.exit(1 if failed else 0)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if sys.argv[2] == "--write":
        write(sys.argv[1], sys.argv[3], runs(sys.argv[4:]))
    elif sys.argv[2] == "--add":
        rest = sys.argv[4:]
        only_file = None
        if rest[:1] == ["--file"]:
            only_file, rest = rest[1], rest[2:]
        add(sys.argv[1], sys.argv[3], only_file, runs(rest))
    else:
        check(sys.argv[1], runs(sys.argv[2:]))


if __name__ == "__main__":
    main()
