#!/usr/bin/env python3
"""diffusers' own count of a transformer: parameters and FLOPs of one forward, on the meta device.

For each case of CASES (a JSON list: name, config path, latent height/width/frames, text tokens)
this builds the config's class with diffusers under `torch.device("meta")` (no weights, no memory),
counts its weights (parameters and persistent buffers: what a checkpoint holds; bytes at bf16,
the dtype cpplan plans with) and runs one
forward of one sample (batch 1) on meta tensors under `torch.utils.flop_counter.FlopCounterMode`,
which counts the matrix multiplies, convolutions and attention (2 FLOPs per multiply-add), as
cpplan's forward_flops does. One "forward" is one call of the transformer for one sample: true CFG
runs two per step (the pipeline batches them), and the FLOP counter counts a batch of 2 as twice
one. The inputs are the pipeline's: the latents after its packing (FLUX-style 2x2 packing where
the pipeline packs), the text embeddings at the case's length, the timestep and the conditioning
the class needs. A class diffusers lacks, cannot build or cannot run on meta is written with the
reason ("error"), by name, never left out.

usage: diffusers_meta.py CASES.json OUT.json      (run in the venv of scripts/reference-venv.sh)
"""
import contextlib
import inspect
import json
import sys
import traceback
import warnings
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

import diffusers
from diffusers.models.modeling_utils import no_init_weights

diffusers.utils.logging.set_verbosity_error()
warnings.filterwarnings("ignore", category=FutureWarning)

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
META = torch.device("meta")


def t(*shape, dtype=torch.float32):
    return torch.zeros(*shape, device=META, dtype=dtype)


def cfg_int(cfg, *keys, default=None):
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return v
    if default is None:
        raise KeyError(f"config has none of {keys}")
    return default


def ids(n_tokens, width):
    return t(n_tokens, width)


# ---- the inputs of one forward, per class (the pipeline's call of pipe.transformer) ----------
# Each returns the keyword arguments; `lat` holds h, w (latent pixels), f (latent frames), text.


def packed_tokens(lat, p=2):
    return (lat["h"] // p) * (lat["w"] // p) * lat["f"]


def flux(model, cfg, lat):
    n, txt = packed_tokens(lat), lat["text"]
    kw = dict(hidden_states=t(1, n, cfg["in_channels"]),
              encoder_hidden_states=t(1, txt, cfg_int(cfg, "joint_attention_dim")),
              timestep=t(1), img_ids=ids(n, 3), txt_ids=ids(txt, 3), return_dict=False)
    params = inspect.signature(model.forward).parameters
    if "pooled_projections" in params:
        kw["pooled_projections"] = t(1, cfg_int(cfg, "pooled_projection_dim", default=768))
    if "guidance" in params and cfg.get("guidance_embeds"):
        kw["guidance"] = t(1)
    return kw


def flux2(model, cfg, lat):
    n, txt = packed_tokens(lat), lat["text"]
    kw = dict(hidden_states=t(1, n, cfg["in_channels"]),
              encoder_hidden_states=t(1, txt, cfg_int(cfg, "joint_attention_dim")),
              timestep=t(1), img_ids=t(1, n, 4), txt_ids=t(1, txt, 4), return_dict=False)
    if cfg.get("guidance_embeds", True):
        kw["guidance"] = t(1)
    return kw


def qwen_image(model, cfg, lat):
    n, txt = packed_tokens(lat), lat["text"]
    return dict(hidden_states=t(1, n, cfg["in_channels"]),
                encoder_hidden_states=t(1, txt, cfg_int(cfg, "joint_attention_dim")),
                encoder_hidden_states_mask=torch.ones(1, txt, device=META, dtype=torch.long),
                timestep=t(1), img_shapes=[[(lat["f"], lat["h"] // 2, lat["w"] // 2)]], return_dict=False)


def sd3(model, cfg, lat):
    return dict(hidden_states=t(1, cfg["in_channels"], lat["h"], lat["w"]),
                encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "joint_attention_dim")),
                pooled_projections=t(1, cfg_int(cfg, "pooled_projection_dim")), timestep=t(1),
                return_dict=False)


def pixart(model, cfg, lat):
    kw = dict(hidden_states=t(1, cfg["in_channels"], lat["h"], lat["w"]),
              encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "caption_channels")),
              timestep=t(1), return_dict=False)
    if "added_cond_kwargs" in inspect.signature(model.forward).parameters:
        # PixArt-alpha (use_additional_conditions at sample_size 128): the image's size and ratio
        kw["added_cond_kwargs"] = {"resolution": t(1, 2), "aspect_ratio": t(1, 1)}
    return kw


def sana(model, cfg, lat):
    return dict(hidden_states=t(1, cfg["in_channels"], lat["h"], lat["w"]),
                encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "caption_channels")),
                timestep=t(1), return_dict=False)


def video_cfhw(text_key, extra=None):
    def build(model, cfg, lat):
        kw = dict(hidden_states=t(1, cfg["in_channels"], lat["f"], lat["h"], lat["w"]),
                  encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, *text_key)),
                  timestep=t(1), return_dict=False)
        if extra:
            kw.update(extra(model, cfg, lat))
        return kw
    return build


def hunyuan_video_extra(model, cfg, lat):
    kw = dict(encoder_attention_mask=torch.ones(1, lat["text"], device=META, dtype=torch.long),
              pooled_projections=t(1, cfg_int(cfg, "pooled_projection_dim", default=768)))
    if cfg.get("guidance_embeds", True):
        kw["guidance"] = t(1)
    return kw


def mochi_extra(model, cfg, lat):
    return dict(encoder_attention_mask=torch.ones(1, lat["text"], device=META, dtype=torch.long))


def cogvideox(model, cfg, lat):
    kw = dict(hidden_states=t(1, lat["f"], cfg["in_channels"], lat["h"], lat["w"]),
              encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "text_embed_dim", default=4096)),
              timestep=t(1), return_dict=False)
    if cfg.get("use_rotary_positional_embeddings"):
        # the pipeline's 3D RoPE, cos and sin of [tokens, head_dim]
        n = lat["f"] // cfg.get("patch_size_t", 1) * (lat["h"] // 2) * (lat["w"] // 2)
        d = cfg["attention_head_dim"]
        kw["image_rotary_emb"] = (t(n, d), t(n, d))
    return kw


def consisid(model, cfg, lat):
    kw = cogvideox(model, cfg, lat)
    kw.pop("image_rotary_emb", None)
    n = lat["f"] * (lat["h"] // 2) * (lat["w"] // 2)
    d = cfg["attention_head_dim"]
    kw["image_rotary_emb"] = (t(n, d), t(n, d))
    if cfg.get("is_train_face", False):
        kw["id_cond"] = t(1, 1280)
        kw["id_vit_hidden"] = [t(1, 577, 1024) for _ in range(5)]
    return kw


def ltx(model, cfg, lat):
    n = lat["f"] * lat["h"] * lat["w"]
    return dict(hidden_states=t(1, n, cfg["in_channels"]),
                encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "caption_channels")),
                encoder_attention_mask=torch.ones(1, lat["text"], device=META, dtype=torch.long),
                timestep=t(1), num_frames=lat["f"], height=lat["h"], width=lat["w"], return_dict=False)


def latte(model, cfg, lat):
    return dict(hidden_states=t(1, cfg["in_channels"], lat["f"], lat["h"], lat["w"]),
                encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "caption_channels")),
                timestep=t(1), enable_temporal_attentions=True, return_dict=False)


def hunyuan_dit(model, cfg, lat):
    h, w = lat["h"], lat["w"]
    d = cfg["attention_head_dim"]
    n = (h // cfg["patch_size"]) * (w // cfg["patch_size"])
    # attn2's K/V: the CLIP-side text (text_len, 77) and the T5's (text_len_t5, 256), concatenated
    t5 = cfg.get("text_len_t5", 256)
    txt = lat["text"] - t5
    return dict(hidden_states=t(1, cfg["in_channels"], h, w), timestep=t(1),
                encoder_hidden_states=t(1, txt, cfg["cross_attention_dim"]),
                text_embedding_mask=torch.ones(1, txt, device=META, dtype=torch.long),
                encoder_hidden_states_t5=t(1, t5, cfg["cross_attention_dim_t5"]),
                text_embedding_mask_t5=torch.ones(1, t5, device=META, dtype=torch.long),
                image_meta_size=t(1, 6), style=torch.zeros(1, device=META, dtype=torch.long),
                image_rotary_emb=(t(n, d), t(n, d)), return_dict=False)


def image_4d(text_keys, extra=None):
    def build(model, cfg, lat):
        kw = dict(hidden_states=t(1, cfg["in_channels"], lat["h"], lat["w"]), timestep=t(1), return_dict=False)
        if text_keys:
            kw["encoder_hidden_states"] = t(1, lat["text"], cfg_int(cfg, *text_keys))
        if extra:
            kw.update(extra(model, cfg, lat))
        return kw
    return build


def dit_extra(model, cfg, lat):
    return dict(class_labels=torch.zeros(1, device=META, dtype=torch.long))


def cogview_extra(model, cfg, lat):
    return dict(original_size=t(1, 2), target_size=t(1, 2), crop_coords=t(1, 2))


def text_mask(model, cfg, lat):
    return dict(encoder_attention_mask=torch.ones(1, lat["text"], device=META, dtype=torch.long))


def wan_vace_extra(model, cfg, lat):
    # the VACE context: vace_in_channels over the latent video, read by the vace_layers' blocks
    return dict(control_hidden_states=t(1, cfg_int(cfg, "vace_in_channels", default=96), lat["f"], lat["h"], lat["w"]))


def cosmos_extra(model, cfg, lat):
    # Cosmos resizes the padding mask with torchvision, which the venv leaves out (it pins a torch
    # of its own): the same nearest resize through torch, no FLOPs either way.
    import types
    from diffusers.models.transformers import transformer_cosmos

    if not hasattr(transformer_cosmos, "transforms"):
        resize = lambda x, size, interpolation=None: torch.nn.functional.interpolate(x, size=size, mode="nearest")
        transformer_cosmos.transforms = types.SimpleNamespace(
            functional=types.SimpleNamespace(resize=resize), InterpolationMode=types.SimpleNamespace(NEAREST=None))
    return dict(padding_mask=t(1, 1, lat["h"] * 8, lat["w"] * 8), fps=24)


def hunyuan_image(model, cfg, lat):
    return dict(hidden_states=t(1, cfg["in_channels"], lat["h"], lat["w"]), timestep=t(1),
                encoder_hidden_states=t(1, lat["text"], cfg_int(cfg, "text_embed_dim")),
                encoder_attention_mask=torch.ones(1, lat["text"], device=META, dtype=torch.long), return_dict=False)


INPUTS = {
    "FluxTransformer2DModel": flux,
    "ChromaTransformer2DModel": flux,
    "Flux2Transformer2DModel": flux2,
    "QwenImageTransformer2DModel": qwen_image,
    "SD3Transformer2DModel": sd3,
    "PixArtTransformer2DModel": pixart,
    "Transformer2DModel": pixart,
    "SanaTransformer2DModel": sana,
    "WanTransformer3DModel": video_cfhw(("text_dim",)),
    "HunyuanVideoTransformer3DModel": video_cfhw(("text_embed_dim",), hunyuan_video_extra),
    "MochiTransformer3DModel": video_cfhw(("text_embed_dim",), mochi_extra),
    "CogVideoXTransformer3DModel": cogvideox,
    "ConsisIDTransformer3DModel": consisid,
    "LTXVideoTransformer3DModel": ltx,
    "LatteTransformer3DModel": latte,
    "HunyuanDiT2DModel": hunyuan_dit,
    "BriaTransformer2DModel": flux,
    "LongCatImageTransformer2DModel": flux,
    "OvisImageTransformer2DModel": flux,
    "SkyReelsV2Transformer3DModel": video_cfhw(("text_dim",)),
    "ChronoEditTransformer3DModel": video_cfhw(("text_dim",)),
    "AllegroTransformer3DModel": video_cfhw(("caption_channels",)),
    "AuraFlowTransformer2DModel": image_4d(("joint_attention_dim",)),
    "DiTTransformer2DModel": image_4d(None, dit_extra),
    "CogView3PlusTransformer2DModel": image_4d(("text_embed_dim",), cogview_extra),
    "CogView4Transformer2DModel": image_4d(("text_embed_dim",), cogview_extra),
    "Lumina2Transformer2DModel": image_4d(("cap_feat_dim",), text_mask),
    "PRXTransformer2DModel": image_4d(("context_in_dim",)),
    "SanaVideoTransformer3DModel": video_cfhw(("caption_channels",)),
    "WanVACETransformer3DModel": video_cfhw(("text_dim",), wan_vace_extra),
    "CosmosTransformer3DModel": video_cfhw(("text_embed_dim",), cosmos_extra),
    "MotifVideoTransformer3DModel": video_cfhw(("text_embed_dim",), text_mask),
    "NucleusMoEImageTransformer2DModel": qwen_image,
    "HunyuanImageTransformer2DModel": hunyuan_image,
}


class _MetaAutocast:
    """torch.autocast that ignores device_type "meta" (Mochi's norms autocast on the input's
    device, which autocast refuses for meta): autocast only changes dtypes, never the FLOPs."""

    def __init__(self, real):
        self.real = real

    def __call__(self, device_type, *args, **kwargs):
        if device_type == "meta":
            return contextlib.nullcontext()
        return self.real(device_type, *args, **kwargs)


torch.autocast = _MetaAutocast(torch.autocast)


def build(cfg):
    name = cfg["_class_name"]
    cls = getattr(diffusers, name, None)
    if cls is None:
        raise LookupError(f"diffusers {diffusers.__version__} has no class {name}")
    init = {k: v for k, v in cfg.items() if not k.startswith("_")}
    # No weight initialisation (as diffusers' from_pretrained builds a model): the meta tensors'
    # shapes are all that is counted, and torch.nn.init on meta is a third of the build's time.
    with torch.device(META), no_init_weights():
        model = cls.from_config(init)
    return model.eval()


def count(case, root):
    out = {"name": case["name"], "class": None}
    cfg = json.loads((root / case["config"]).read_text())
    out["class"] = cfg["_class_name"]
    try:
        model = build(cfg)
    except Exception as e:  # the reason, by name, in the output
        out["error"] = f"cannot build: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return out
    # The weights a checkpoint holds and a GPU keeps: the parameters and the persistent buffers
    # (SD3's pos_embed table of pos_embed_max_size^2 x D), at the pipeline's dtype.
    params = sum(p.numel() for p in model.parameters())
    names = {n for n, _ in model.named_parameters()}
    buffers = sum(v.numel() for k, v in model.state_dict().items() if k not in names and v.is_floating_point())
    out["params"] = params
    out["persistent_buffers"] = buffers
    out["param_bytes"] = (params + buffers) * DTYPE_BYTES[case.get("dtype", "bf16")]
    builder = INPUTS.get(out["class"])
    if builder is None:
        out["error"] = f"no inputs written for {out['class']}: parameters counted, forward not run"
        return out
    if "latent_height" not in case:
        out["error"] = "parameters only: the case gives no resolution"
        return out
    lat = {"h": case["latent_height"], "w": case["latent_width"], "f": case.get("latent_frames", 1),
           "text": case["text_tokens"]}
    try:
        kwargs = builder(model, cfg, lat)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(**kwargs)
        out["forward_flops"] = counter.get_total_flops()
    except Exception as e:
        last = traceback.extract_tb(e.__traceback__)[-1]
        out["error"] = (f"forward on meta failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]} "
                        f"({Path(last.filename).name}:{last.lineno})")
    out["latent"] = lat
    return out


def main():
    cases = json.loads(Path(sys.argv[1]).read_text())
    root = Path(sys.argv[1]).resolve().parent
    if len(sys.argv) > 3:
        root = Path(sys.argv[3])
    results = {"diffusers": diffusers.__version__, "torch": torch.__version__,
               "cases": [count(c, root) for c in cases]}
    Path(sys.argv[2]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
