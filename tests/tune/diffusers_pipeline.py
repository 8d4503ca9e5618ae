#!/usr/bin/env python3
"""A user's real diffusers pipeline for the tune's framework-hook test: diffusers' own FluxPipeline
around its own FluxTransformer2DModel, built on the CPU from a small FLUX config
(flux_tiny_diffusers.json: 2 joint and 4 single blocks, random weights), without text encoders
(the prompt's embeddings are given) and without a VAE (latents out). The plan of the launch goes on
with plan.apply(pipe): its step cache through diffusers' transformer.enable_cache or, with
--framework cache-dit, cache-dit's enable_cache. The denoising is recorded with cpplan.record,
whose probe counts the steps the transformer's middle block ran.

--still zeroes the output projection (the latents never move) and the timestep embedder (every step
gives the first block the same input): the first block's residual is then the same on every step,
so a cache that compares it with the last computed step's finds no change and caches all it may.

    diffusers_pipeline.py --config flux_tiny_diffusers.json --res 128x128 --steps 10 [--still]
        [--framework cache-dit] [--probe attention]"""
import argparse
import json

import torch
from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel

import cpplan


def build(config, still):
    torch.manual_seed(0)
    transformer = FluxTransformer2DModel(**{k: v for k, v in config.items() if not k.startswith("_")})
    if still:
        with torch.no_grad():
            for p in [*transformer.proj_out.parameters(), *transformer.time_text_embed.timestep_embedder.parameters()]:
                p.zero_()
    return FluxPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=None, text_encoder=None, tokenizer=None,
                        text_encoder_2=None, tokenizer_2=None, transformer=transformer)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--res", default="128x128")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--still", action="store_true")
    p.add_argument("--framework", choices=["diffusers", "cache-dit"], default="diffusers")
    p.add_argument("--probe", choices=["block", "attention"], default="block",
                   help="what the recorder watches: the middle block's first layer (its default), or its attention's "
                        "query projection (diffusers' TaylorSeer predicts the attention modules only)")
    a = p.parse_args()
    if a.framework == "cache-dit":
        import cache_dit  # noqa: F401  (plan.apply takes cache-dit's path once it is imported)
    width, height = (int(v) for v in a.res.split("x"))
    config = json.load(open(a.config))
    pipe = build(config, a.still)
    plan = cpplan.current_plan(model_config=a.config, width=width, height=height, steps=a.steps)
    plan.apply(pipe)
    text = torch.randn(1, 32, config["joint_attention_dim"])
    pooled = torch.randn(1, config["pooled_projection_dim"])
    probe = {"cache_probe": pipe.transformer.single_transformer_blocks[2].attn.to_q} if a.probe == "attention" else {}
    with torch.no_grad(), cpplan.record(pipe, plan=plan, device="cpu", **probe) as rec:
        pipe(prompt_embeds=text, pooled_prompt_embeds=pooled, width=width, height=height, num_inference_steps=a.steps,
             guidance_scale=1.0, output_type="latent", callback_on_step_end=rec.callback)


if __name__ == "__main__":
    main()
