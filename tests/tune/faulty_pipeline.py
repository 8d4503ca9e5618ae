#!/usr/bin/env python3
"""docs/examples/tune_cpu.py with faults by plan label, for the tune's fault test:
    faulty_pipeline.py [--raise LABEL] [--hang LABEL] [--no-record LABEL] -- EXAMPLE ARGS
--raise: the script raises before its pipeline runs; --hang: it sleeps past any timeout; --no-record:
it exits 0 without recording. Any other plan runs the example as it is."""
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
a, rest = p.parse_known_args()
label = json.loads(os.environ["CPPLAN_PLAN"])["label"]
if label == a.raise_label:
    raise RuntimeError(f"injected fault: the pipeline of {label} raised")
if label == a.hang:
    time.sleep(3600)
if label == a.no_record:
    sys.exit(0)
sys.argv = [example] + [arg for arg in rest if arg != "--"]
runpy.run_path(example, run_name="__main__")
