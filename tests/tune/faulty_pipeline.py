#!/usr/bin/env python3
"""docs/examples/tune_cpu.py with faults by plan label, for the tune's fault test:
    faulty_pipeline.py [--raise LABEL] [--hang LABEL] [--no-record LABEL] [--oom LABEL] -- EXAMPLE ARGS
--raise: the script raises before its pipeline runs (on its first rank; the others exit 1 without a
traceback, so that two ranks' tracebacks written at once cannot interleave in the log); --hang: it sleeps past any timeout; --no-record:
it exits 0 without recording; --oom: it asks torch for 1 PiB. Any other plan runs the example as it is."""
import argparse
import json
import os
import runpy
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
example = os.path.join(here, "..", "..", "docs", "examples", "tune_cpu.py")

p = argparse.ArgumentParser()
p.add_argument("--raise", dest="raise_label")
p.add_argument("--hang")
p.add_argument("--no-record")
p.add_argument("--oom")
a, rest = p.parse_known_args()
label = json.loads(os.environ["CPPLAN_PLAN"])["label"]
if label == a.raise_label:
    if os.environ.get("RANK", "0") != "0":
        sys.exit(1)
    raise RuntimeError(f"injected fault: the pipeline of {label} raised")
if label == a.hang:
    time.sleep(3600)
if label == a.no_record:
    sys.exit(0)
if label == a.oom:
    import torch
    torch.empty(1 << 50, dtype=torch.uint8)  # 1 PiB: the CPU allocator refuses it
sys.argv = [example] + [arg for arg in rest if arg != "--"]
runpy.run_path(example, run_name="__main__")
