#!/usr/bin/env python3
"""A user's pipeline with a first-block step cache of its own, for the tune's hit-rate test: the
blocks of a FLUX config (tune_cpu_config.json: 2 joint, 4 single) as small torch MLP blocks in two
lists, as FluxTransformer2DModel holds them; on the steps of --cached (0-based) the first block runs
and the other blocks' residual of the last computed step is reused, as FBCache does (F1B0). One rank
runs the single-GPU plan; recorded with cpplan.record, which watches the middle block.

    cached_pipeline.py --config tune_cpu_config.json --steps 10 --cached 5,7 [--no-probe]

--no-probe: record with cache_probe=False (a record without block counts)."""
import argparse
import json

import torch

import cpplan


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Transformer(torch.nn.Module):
    def __init__(self, config, cached):
        super().__init__()
        width = config["num_attention_heads"] * config["attention_head_dim"]
        self.transformer_blocks = torch.nn.ModuleList(Block(width) for _ in range(config["num_layers"]))
        self.single_transformer_blocks = torch.nn.ModuleList(Block(width) for _ in range(config["num_single_layers"]))
        self.cached, self.step, self.residual = set(cached), 0, None

    def forward(self, x):
        blocks = list(self.transformer_blocks) + list(self.single_transformer_blocks)
        first = blocks[0](x)
        if self.step in self.cached:
            out = first + self.residual
        else:
            out = first
            for block in blocks[1:]:
                out = block(out)
            self.residual = out - first
        self.step += 1
        return out


class Pipeline:
    def __init__(self, config, cached):
        self.transformer = Transformer(config, cached)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--res", default="256x256")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--cached", default="", help="0-based steps the cache reuses, separated by commas")
    p.add_argument("--no-probe", action="store_true")
    a = p.parse_args()
    width, height = (int(v) for v in a.res.split("x"))
    plan = cpplan.current_plan(model_config=a.config, width=width, height=height, steps=a.steps)
    degrees = ("ring_degree", "ulysses_degree", "tp_degree", "cfg_degree", "dp_degree", "fs_degree", "pipefusion_degree")
    if any(plan.json[d] > 1 for d in degrees):
        raise NotImplementedError(f"plan {plan.json['label']!r}: this script runs one rank")
    torch.manual_seed(0)
    pipe = Pipeline(json.load(open(a.config)), [int(s) for s in a.cached.split(",") if s])
    x = torch.randn(64, pipe.transformer.transformer_blocks[0].norm.normalized_shape[0])
    probe = {"cache_probe": False} if a.no_probe else {}
    with torch.no_grad(), cpplan.record(pipe, plan=plan, device="cpu", **probe) as rec:
        for _ in range(a.steps):
            x = pipe.transformer(x)
            rec.step()


if __name__ == "__main__":
    main()
