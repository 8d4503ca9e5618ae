#!/usr/bin/env python3
"""The host time of one eager PyTorch op, as a diffusers block issues them: an independent figure for
the runtime profiles' us_per_op (profiles/runtimes/diffusers.toml, xdit.toml), which the published
fits can otherwise identify only from the rows of fast GPUs (docs/accuracy.md).

Each kind of op runs ITERATIONS times on tensors small enough that the device finishes each kernel
before the host has issued the next one, so the wall time over the count is the host's: Python,
the dispatcher, the allocator and the kernel launch. On a CUDA device the kernels' own time (CUDA
events around the same loop) is printed beside it: when it comes close to the wall time the device
paced the loop and the figure is an upper bound ("device_paced": true). The "block" kind is one
pass of a small DiT block's op sequence (modulated norm, QKV, RoPE-style rotation, SDPA, output,
gated residual, GELU FFN), the figure to set against a profile's per-op count. The ops of a call
are counted, not written down: each Python-level torch call (a function or a tensor method,
views and indexing included) under a TorchFunctionMode, as the profiles count them.

Usage: dispatch_bench.py [--device cpu|cuda] [--iterations N] [--repeats R]; prints JSON (the median
of R repeats per kind). Needs python3 with torch."""
import argparse
import json
import platform
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
except ImportError:
    print("dispatch_bench: python3 cannot import torch (the Debian package python3-torch, or a CUDA PyTorch)",
          file=sys.stderr)
    sys.exit(2)

TOKENS, HIDDEN, HEADS = 16, 64, 4  # tiny: the device is never the bound


def tensors(device, dtype):
    g = torch.Generator(device="cpu").manual_seed(0)
    def rand(*shape):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)
    return {"x": rand(1, TOKENS, HIDDEN), "w": rand(HIDDEN, HIDDEN), "b": rand(HIDDEN), "w3": rand(3 * HIDDEN, HIDDEN),
            "w4": rand(4 * HIDDEN, HIDDEN), "w4t": rand(HIDDEN, 4 * HIDDEN), "mod": rand(1, 6 * HIDDEN),
            "cos": rand(1, 1, TOKENS, HIDDEN // HEADS), "sin": rand(1, 1, TOKENS, HIDDEN // HEADS)}


def attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v)
    return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, dim=-1) @ v  # torch < 2.0


def block(t):
    """One small DiT block, its ops in the order diffusers' FLUX/SD3-style blocks issue them."""
    x = t["x"]
    shift, scale, gate, shift2, scale2, gate2 = t["mod"].chunk(6, dim=-1)
    h = F.layer_norm(x, (HIDDEN,)) * (1 + scale[:, None]) + shift[:, None]
    q, k, v = (y.view(1, TOKENS, HEADS, -1).transpose(1, 2) for y in F.linear(h, t["w3"]).chunk(3, dim=-1))
    q = q * t["cos"] + q.flip(-1) * t["sin"]
    k = k * t["cos"] + k.flip(-1) * t["sin"]
    o = attention(q, k, v).transpose(1, 2).reshape(1, TOKENS, HIDDEN)
    x = x + gate[:, None] * F.linear(o, t["w"], t["b"])
    h = F.layer_norm(x, (HIDDEN,)) * (1 + scale2[:, None]) + shift2[:, None]
    return x + gate2[:, None] * F.linear(F.gelu(F.linear(h, t["w4"]), approximate="tanh"), t["w4t"])


def heads(t):
    return t["x"].view(1, TOKENS, HEADS, -1).transpose(1, 2)


KINDS = {
    "linear": lambda t: F.linear(t["x"], t["w"], t["b"]),
    "elementwise": lambda t: t["x"] * t["b"],
    "layer_norm": lambda t: F.layer_norm(t["x"], (HIDDEN,)),
    "view_transpose": heads,
    "contiguous": lambda t: t["x"].transpose(1, 2).contiguous(),
    "sdpa": lambda t: attention(heads(t), heads(t), heads(t)),
    "block": block,
}


class OpCounter(TorchFunctionMode):
    """Counts the Python-level torch calls (functions and tensor methods) a callable makes; the
    calls they make in turn are not counted (the mode is off inside its handler)."""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def ops_of(fn, t):
    with OpCounter() as counter:
        fn(t)
    return counter.ops


def time_kind(fn, ops, t, iterations, device):
    """Microseconds per op: the wall time of `iterations` calls over their ops, and on CUDA the
    kernels' time over the same ops (None elsewhere)."""
    cuda = device.startswith("cuda")
    for _ in range(max(1, iterations // 10)):  # warm-up: the allocator, the kernels' first launch
        fn(t)
    if cuda:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn(t)
    if cuda:
        end.record()
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    kernels = start.elapsed_time(end) * 1e3 / (ops * iterations) if cuda else None
    return wall * 1e6 / (ops * iterations), kernels


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as every cpplan refusal (argparse prints the usage too)
        self.exit(2, f"dispatch_bench: {message}\n")


def main():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    if a.device not in ("cpu", "cuda"):
        sys.exit(f"dispatch_bench: --device = {a.device}: must be cpu or cuda")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("dispatch_bench: --device = cuda: this torch sees no CUDA device")
    if a.iterations < 1 or a.repeats < 1:
        sys.exit(f"dispatch_bench: --iterations = {a.iterations}, --repeats = {a.repeats}: each must be at least 1")
    torch.set_grad_enabled(False)
    dtype = torch.bfloat16 if a.device == "cuda" else torch.float32
    t = tensors(a.device, dtype)
    per_op, kernels, counts = {}, {}, {}
    for name, fn in KINDS.items():
        counts[name] = ops_of(fn, t)
        runs = [time_kind(fn, counts[name], t, a.iterations, a.device) for _ in range(a.repeats)]
        per_op[name] = round(statistics.median(r[0] for r in runs), 3)
        if runs[0][1] is not None:
            kernels[name] = round(statistics.median(r[1] for r in runs), 3)
    out = {
        "device": a.device,
        "device_name": torch.cuda.get_device_name(0) if a.device == "cuda" else platform.processor() or platform.machine(),
        "torch": str(torch.__version__), "python": platform.python_version(), "dtype": str(dtype).replace("torch.", ""),
        "iterations": a.iterations, "repeats": a.repeats,
        "ops_per_call": counts,
        "us_per_op": per_op,
        "kernel_us_per_op": kernels or None,
        "device_paced": any(kernels[k] > 0.8 * per_op[k] for k in kernels) if kernels else None,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
