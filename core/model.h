#pragma once
// A diffusion-transformer pipeline as the planner and cost model see it: the transformer's
// blocks and shapes, how text enters attention, how its context-parallel plan splits tokens,
// the latent geometry, and the resident components (text encoders, VAE). Loaded from
// profiles/models/*.toml (schema: docs/profiles.md).

#include <string>
#include <vector>

#include "core/units.h"

namespace cpplan {

// kDouble: joint attention, separate image/text weights (FLUX double-stream, SD3 joint block).
// kSingle: joint attention, one weight set over all tokens (FLUX single-stream, CogVideoX).
// kCross:  self-attention over image/video tokens, cross-attention to text, FFN (Wan, PixArt).
enum class BlockKind { kDouble, kSingle, kCross };

// kGelu: D -> F -> D; kSwiGlu: D -> 2F (gated) -> D; kConvGlu: SANA's GLUMBConv, a 1x1 conv D -> 2F,
// a 3x3 depthwise conv over the 2F channels of the latent grid, the gate, a 1x1 conv F -> D.
enum class FfnKind { kGelu, kSwiGlu, kConvGlu };
// kSoftmax: softmax(q k^T) v; kLinear: ReLU linear attention (SANA), relu(q) (relu(k)^T v) normalized
// by relu(q) sum relu(k): per head a head_dim x head_dim state, so its cost is linear in tokens.
enum class AttentionKind { kSoftmax, kLinear };
// Where a block's adaLN shift/scale/gate come from (all from the timestep vector, per sample):
// kBlock:  each block projects its own (FLUX.1, SD3, HunyuanVideo, Qwen-Image);
// kShared: one projection for all double blocks and one for all single blocks (FLUX.2);
// kExpert: separate ones for the text and the image tokens of a single-stream block (CogVideoX);
// kTable:  one projection for the model plus a learned table per block (Wan, PixArt, LTX).
enum class Modulation { kBlock, kShared, kExpert, kTable };
enum class TextHandling { kJoint, kCross };  // text tokens in the attention sequence, or as K/V
// How the model's CP plan splits the sequence: image and text separately (FLUX, Qwen-Image,
// LTX), or image/video tokens only with text kept whole on every rank (Wan; xDiT-style for
// models without a diffusers plan).
enum class CpSplit { kImageAndText, kImageOnly };
enum class Guidance { kNone, kDistilled, kTrueCfg };

struct BlockGroup {
  BlockKind kind = BlockKind::kSingle;
  int count = 0;
  bool image_self_attention = false;  // an extra image-only self-attention (SD3.5-medium 0-12)
  // Single-stream blocks: attention, then the FFN, each with its own output projection
  // (CogVideoX); else attention and MLP side by side with one fused output projection (FLUX).
  bool sequential = false;
  // Attention across the frames at each latent position instead of over all tokens (Latte's
  // temporal blocks): a sequence of `frames` tokens, batched over the positions of a frame. A
  // temporal cross block has no cross-attention (self-attention and FFN only).
  bool temporal = false;
  // Takes a long skip connection (HunyuanDiT's second half): the block's input is concatenated
  // with an earlier block's output and projected back, a linear 2D -> D and a LayerNorm.
  bool skip = false;
  // Sequential single-stream blocks whose text tokens only give keys and values (PRX): the text is
  // projected to K and V; the queries, the output projection and the FFN run on the image tokens.
  bool text_kv_only = false;
  // text_kv_only on any but a sequential single-stream block: refused with kTextKvOnlyRule.
  static bool misplaced_text_kv_only(BlockKind kind, bool sequential, bool text_kv_only) {
    return text_kv_only && !(kind == BlockKind::kSingle && sequential);
  }
  static constexpr const char* kTextKvOnlyRule =
      "only sequential single-stream blocks give the text keys and values alone";
};

struct Component {
  std::string name;
  double params = 0;
  Bytes bytes_per_param = 2;
  // Text encoders: the transformer's shape, for encoding as GEMMs + attention + memory-bound work
  // (0: unknown; encoding is then the GEMM roofline of 2 x params x tokens alone).
  int layers = 0;
  int hidden = 0;
  int tokens = 0;  // tokens the encoder reads per prompt (0: the model's text tokens)
};

struct VaeProfile {
  Component weights;
  int spatial = 8;   // pixels per latent pixel, per side
  int temporal = 1;  // frames per latent frame after the first (video VAEs)
  double decode_gflop_per_pixel = 0;   // decoder FLOPs per output pixel per frame, in GFLOP
  double decode_bytes_per_pixel = 0;   // live decoder activations per output pixel of a chunk
  double decode_traffic_bytes_per_pixel = 0;  // memory traffic of GroupNorm/SiLU/upsampling per output pixel
  double encode_gflop_per_pixel = 0;   // encoder FLOPs per input pixel per frame, in GFLOP (0: not known)
  // The decoder's convolutions with a spatial kernel, and their input channels as one full-width
  // row per neighbour, averaged (core/vae_cost.h): the patch-parallel decode exchanges a halo of
  // 2 x width x frames x halo_channels elements and reduces GroupNorm statistics per convolution.
  int decoder_convs = 30;
  double halo_channels = 256;
  // The decoder's mid block holds a single-head self-attention over every latent pixel of a chunk
  // (diffusers' AutoencoderKL, mid_block_add_attention): its score matrix is materialised.
  bool mid_block_attention = false;
  // Pixels per side of one tile of the tiled decode (diffusers' enable_tiling: the VAE config's
  // sample_size; tiles overlap by a quarter).
  int tile_sample_size = 512;
  // Where the costs come from: the diffusers class and the structure read from its vae/config.json
  // (core/vae_cost.h), and the file as the profile's [vae] config names it; empty when the profile
  // gives the numbers.
  std::string class_name;
  std::string structure;
  std::string config;
};

struct ModelProfile {
  std::string name;         // profile name, e.g. "flux.1-dev"
  std::string description;
  std::string source;       // file it was loaded from (for messages)

  // transformer
  std::vector<BlockGroup> blocks;
  int heads = 0;
  int head_dim = 0;
  int ffn_hidden = 0;
  FfnKind ffn_kind = FfnKind::kGelu;
  AttentionKind attention = AttentionKind::kSoftmax;
  // Mixture of experts (HiDream): each FFN holds `experts` routed experts of ffn_hidden each (and a
  // D -> experts router); a token runs `active_experts` of them plus `shared_experts`. 0: dense.
  int experts = 0;
  int active_experts = 0;
  int shared_experts = 0;
  // Double-stream blocks whose text stream is narrower than the image's (Mochi: 1536 vs 3072): the
  // text stream's width and FFN; its q, k, v project to the shared heads x head_dim. 0: the same.
  int text_hidden = 0;
  int text_ffn_hidden = 0;
  // A temporal convolution over frames after each FFN (SANA-Video's GLUMBTempConv conv_temp: a
  // (taps x 1) Conv2d D -> D without bias, on every token, full width on every TP rank). 0: none.
  int ffn_temporal_taps = 0;
  // A cross-attention of the image tokens to a few conditioning tokens after every `every`-th block
  // (ConsisID's PerceiverCrossAttention to its 32 face tokens): q D -> inner and out inner -> D on
  // each image token, the conditioning tokens' K and V width -> 2 x inner. every 0: none.
  struct SideCross {
    int every = 0, tokens = 0, inner = 0, width = 0;
    // Every `every`-th block, but without its tokens or widths: refused with kIncompleteRule.
    bool incomplete() const { return every > 0 && (tokens < 1 || inner < 1 || width < 1); }
    static constexpr const char* kIncompleteRule =
        "needs side_cross_tokens, side_cross_inner and side_cross_width of at least 1";
  } side_cross;
  // Transformers of this shape in the pipeline (Wan2.2 A14B: 2, a high- and a low-noise expert
  // switched at a boundary timestep): each step runs one; memory holds all unless one is offloaded.
  int transformers = 1;
  bool qk_norm = true;            // RMSNorm of q and k per head before RoPE
  bool rope = true;               // rotary position embedding of q and k in the blocks (not a learned or sin-cos table)
  Modulation modulation = Modulation::kBlock;
  double params = 0;              // transformer parameters
  Bytes bytes_per_param = 2;      // weight dtype (bf16)
  Bytes bytes_per_activation = 2; // activation dtype (bf16)
  int patch_spatial = 2;
  int patch_temporal = 1;
  int in_channels = 64;           // channels of one latent token (after patchify)

  // text
  TextHandling text_handling = TextHandling::kJoint;
  int text_tokens = 512;          // default tokens in attention / cross-attention
  int max_text_tokens = 512;      // largest the pipeline accepts (Qwen-Image: 1024)
  std::vector<Component> text_encoders;

  VaeProfile vae;
  bool video = false;

  // parallel plans
  CpSplit cp_split = CpSplit::kImageAndText;
  bool attention_mask = false;    // passes a mask to attention (Ring Anything cannot)
  // Which frameworks run it, with which features: profiles/frameworks/*.toml (core/framework.h).

  // pipeline
  int default_width = 1024;
  int default_height = 1024;
  int default_frames = 1;
  int default_steps = 28;
  Guidance guidance = Guidance::kNone;
  std::string hf_repo;            // e.g. "black-forest-labs/FLUX.1-dev"
  std::string pipeline_class;     // e.g. "FluxPipeline"
  std::string transformer_class;  // diffusers' class, e.g. "FluxTransformer2DModel": frameworks match it
  // A derived profile (from a diffusers config): the built-in profile whose pipeline it shares;
  // the framework files match it through this name too. Empty for the built-ins.
  std::string base;
  // What a derived profile guessed (the template's encoders or VAE where the folder says
  // nothing): shown with the recommendation; not a profile field (never written to TOML).
  std::vector<std::string> assumptions;

  int hidden() const { return heads * head_dim; }
  int text_width() const { return text_hidden > 0 ? text_hidden : hidden(); }
  int text_ffn() const { return text_ffn_hidden > 0 ? text_ffn_hidden : ffn_hidden; }
  // FFNs a token runs per block (1 for a dense FFN).
  int ffn_runs() const { return experts > 0 ? active_experts + shared_experts : 1; }
  // FFNs a block holds (1 for a dense FFN).
  int ffn_copies() const { return experts > 0 ? experts + shared_experts : 1; }
  // Whether a block of `g` attends to the text through cross-attention.
  static bool cross_attends(const BlockGroup& g) { return g.kind == BlockKind::kCross && !g.temporal; }
  int pixel_granularity() const { return vae.spatial * patch_spatial; }
  int total_blocks() const {
    int n = 0;
    for (const auto& g : blocks) n += g.count;
    return n;
  }
  // Forward passes per denoising step: true CFG runs a conditional and an unconditional one.
  int passes_per_step() const { return guidance == Guidance::kTrueCfg ? 2 : 1; }
  // The text encoder with the most weight bytes (the first of equals; null without one): the one a
  // fully-sharded placement shards, as xDiT's fsdp_strategy names FLUX.1's T5, not its CLIP.
  const Component* largest_text_encoder() const {
    const Component* out = nullptr;
    for (const Component& e : text_encoders)
      if (!out || e.params * e.bytes_per_param > out->params * out->bytes_per_param) out = &e;
    return out;
  }
};

std::string_view to_string(BlockKind k);
std::string_view to_string(FfnKind k);
std::string_view to_string(AttentionKind k);
std::string_view to_string(Guidance g);
std::string_view to_string(CpSplit s);
std::string_view to_string(Modulation m);
std::string_view to_string(TextHandling t);

}  // namespace cpplan
