"""What the cpplan tune tests share: each test's own directory, its database, and a `torchrun` first on
PATH that is this python's (tests/cluster/torchrun.py, which mends Debian's torch 1.13 and runs
torch 2.x's as it is; a venv's own bin/torchrun names the path the venv was made at)."""
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class TuneTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.dir.name, "tune.db")
        bin_dir = os.path.join(self.dir.name, "bin")
        os.mkdir(bin_dir)
        with open(os.path.join(bin_dir, "torchrun"), "w") as f:
            f.write(f'#!/bin/sh\nexec {sys.executable} {ROOT}/tests/cluster/torchrun.py "$@"\n')
        os.chmod(os.path.join(bin_dir, "torchrun"), 0o755)
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])

    def tearDown(self):
        self.dir.cleanup()
