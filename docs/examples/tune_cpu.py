#!/usr/bin/env python3
"""A user's own pipeline for `cpplan tune`, on the CPU: a small transformer built from a diffusers
FLUX config (tune_cpu_config.json) with torch alone, the plan applied by the script itself
(the sequence split over the ranks with torch.distributed collectives over Gloo), the denoising
loop recorded with cpplan.record.

    cpplan tune docs/examples/tune_cpu.py --gpus 2 --model-config docs/examples/tune_cpu_config.json \
        --res 256x256 --steps 4 --device cpu --top 4

Runs Ulysses (all-to-all of the heads), Ring (the keys and values of every rank, gathered) and
tensor parallelism (heads and MLP columns split, the outputs summed); any other plan is refused
when applied (NotImplementedError), as a framework refuses a plan it does not run.
Alone: `torchrun --nproc-per-node 2 tune_cpu.py --config tune_cpu_config.json --res 256x256 --out runs.jsonl`
plans itself with cpplan.current_plan().
"""
import argparse
import json
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

import cpplan


class Block(torch.nn.Module):
    """Joint attention over text + image tokens, then an MLP; heads and MLP columns of this rank."""

    def __init__(self, heads, head_dim, tp):
        super().__init__()
        self.heads, self.head_dim, self.tp = heads // tp, head_dim, tp
        width, inner = heads * head_dim, self.heads * head_dim
        self.qkv = torch.nn.Linear(width, 3 * inner)
        self.out = torch.nn.Linear(inner, width)
        self.up = torch.nn.Linear(width, 4 * width // tp)
        self.down = torch.nn.Linear(4 * width // tp, width)

    def forward(self, x, attend):
        q, k, v = self.qkv(x).unflatten(-1, (3, self.heads, self.head_dim)).unbind(-3)  # [tokens, heads, dim]
        x = x + self._sum(self.out(attend(q, k, v).flatten(-2)))
        return x + self._sum(self.down(F.gelu(self.up(x))))

    def _sum(self, partial):
        if self.tp > 1:
            dist.all_reduce(partial)
        return partial


def attention(q, k, v):
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])
    return torch.einsum("hqk,khd->qhd", scores.softmax(-1), v)


def all_to_all(parts):
    """dist.all_to_all by pairs of sends and receives: Gloo has no all-to-all in torch 1.13."""
    rank = dist.get_rank()
    out = [torch.empty_like(p) for p in parts]
    out[rank].copy_(parts[rank])
    requests = []
    for peer in range(len(parts)):
        if peer != rank:
            requests += [dist.isend(parts[peer], peer), dist.irecv(out[peer], peer)]
    for r in requests:
        r.wait()
    return out


def ulysses(world):
    """Each rank holds 1/world of the tokens: all-to-all to all tokens of 1/world of the heads, back after."""
    def swap(t, split_dim, cat_dim):
        return torch.cat(all_to_all([p.contiguous() for p in t.chunk(world, split_dim)]), cat_dim)

    def attend(q, k, v):
        full = [swap(t, 1, 0) for t in (q, k, v)]
        return swap(attention(*full), 0, 1)
    return attend


def ring(world):
    """Each rank holds 1/world of the tokens and attends to the keys and values of every rank."""
    def gather(t):
        parts = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(parts, t.contiguous())
        return torch.cat(parts, 0)
    return lambda q, k, v: attention(q, gather(k), gather(v))


def apply(plan, world):
    """(attention, tp, sequence shards) for the plan; NotImplementedError for what this script does not run."""
    j = plan.json
    others = {k: j[k] for k in ("cfg_degree", "dp_degree", "pipefusion_degree", "fs_degree") if j[k] > 1}
    if others or j["ulysses_degree"] > 1 and j["ring_degree"] > 1:
        raise NotImplementedError(f"plan {j['label']!r}: this script runs Ulysses, Ring or TP alone, not {others or 'both'}")
    if j["ulysses_degree"] > 1:
        return ulysses(world), 1, world
    if j["ring_degree"] > 1:
        return ring(world), 1, world
    return attention, j["tp_degree"], 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="docs/examples/tune_cpu_config.json")
    p.add_argument("--res", default="256x256")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--text-tokens", type=int, default=256)
    p.add_argument("--out", help="the recorder's file (cpplan tune sets it)")
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    config = json.load(open(a.config))
    width, height = (int(v) for v in a.res.split("x"))
    plan = cpplan.current_plan(model_config=a.config, width=width, height=height, steps=a.steps, framework="cpplan")
    attend, tp, shards = apply(plan, world)

    torch.manual_seed(0)  # the same weights on every rank
    heads, head_dim = config["num_attention_heads"], config["attention_head_dim"]
    blocks = [Block(heads, head_dim, tp) for _ in range(config["num_layers"] + config["num_single_layers"])]
    tokens = a.text_tokens + (width // 16) * (height // 16)
    x = torch.randn(tokens, heads * head_dim).chunk(shards, 0)[rank % shards]
    with torch.no_grad(), cpplan.record(None, out=a.out, plan=plan, model="tune_cpu_config",
                                              width=width, height=height, steps=a.steps, device="cpu") as rec:
        for _ in range(a.steps):
            for block in blocks:
                x = block(x, attend)
            rec.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
