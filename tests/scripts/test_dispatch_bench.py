"""scripts/dispatch_bench.py as a process on this machine's CPU torch: the ops it counts per call
against a count by hand, its figures' shape, and its argument errors.

By hand, each Python-level torch call (a function, a tensor method, an operator, an index, a
`.shape`) counts one:
- linear: F.linear = 1; elementwise: x * b = 1; layer_norm: F.layer_norm = 1;
- view_transpose: view, transpose = 2; contiguous: transpose, contiguous = 2;
- sdpa: three heads() of 2 = 6, then F.scaled_dot_product_attention = 1 (torch 2.x): 7; without it
  (torch 1.13) the fallback's k.transpose, q @ k, q.shape, the scaling *, softmax, @ v = 6: 12;
- block: chunk 1; the modulated norm, layer_norm, scale[:, None], 1 +, *, shift[:, None], + = 6;
  linear, chunk and three (view, transpose) = 8; each rotation q * cos, q.flip, * sin, + = 4, twice
  = 8; attention (1, or 6 in the fallback) then transpose, reshape = 2; the gated output gate[:,
  None], linear, *, + = 4; the second modulated norm 6; the FFN gate2[:, None], linear, gelu,
  linear, *, + = 6. 1 + 6 + 8 + 8 + 2 + 4 + 6 + 6 = 41, plus attention: 42 (torch 2.x) or 47."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "dispatch_bench.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


def has_sdpa():
    import torch.nn.functional as F
    return hasattr(F, "scaled_dot_product_attention")


class DispatchBench(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = run("--device", "cpu", "--iterations", "50", "--repeats", "2")
        if out.returncode != 0:
            raise AssertionError(f"dispatch_bench.py --device cpu exited {out.returncode}: {out.stderr}")
        cls.report = json.loads(out.stdout)

    def test_counts_the_ops_of_each_call_as_counted_by_hand(self):
        sdpa = has_sdpa()
        self.assertEqual(self.report["ops_per_call"], {
            "linear": 1, "elementwise": 1, "layer_norm": 1, "view_transpose": 2, "contiguous": 2,
            "sdpa": 7 if sdpa else 12, "block": 42 if sdpa else 47})

    def test_times_every_kind_and_leaves_the_kernel_columns_to_cuda(self):
        r = self.report
        self.assertEqual((r["device"], r["dtype"], r["iterations"], r["repeats"]), ("cpu", "float32", 50, 2))
        self.assertEqual(set(r["us_per_op"]), set(r["ops_per_call"]))
        for kind, us in r["us_per_op"].items():
            self.assertGreater(us, 0, kind)
            self.assertLess(us, 1e5, kind)  # a tiny tensor's op on any CPU: well under 0.1 s
        self.assertIsNone(r["kernel_us_per_op"])
        self.assertIsNone(r["device_paced"])

    def test_bad_arguments_get_one_line_and_a_non_zero_exit(self):
        for args, words in ((("--device", "tpu"), "--device = tpu: must be cpu or cuda"),
                            (("--device", "cpu", "--iterations", "0"), "--iterations = 0"),
                            (("--iterations", "abc"), "argument --iterations: invalid int value: 'abc'")):
            out = run(*args)
            self.assertNotEqual(out.returncode, 0, args)
            self.assertEqual(out.stdout, "", args)
            lines = out.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, out.stderr)
            self.assertIn(words, lines[0])


if __name__ == "__main__":
    unittest.main()
