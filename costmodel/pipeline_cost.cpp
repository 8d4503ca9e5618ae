// Once per image: encoding the prompt (every text encoder; the negative prompt too under true
// CFG) and decoding the latents with the VAE, for one placement of each, and the memory of the
// three phases of an image. docs/cost-model.md, "Per image".
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "costmodel/predict_terms.h"
#include "costmodel/step_context.h"

namespace cpplan::costmodel {

namespace {
constexpr double kTextEncoderHeadDim = 64;  // T5 d_kv, CLIP 768 / 12 and 1280 / 20, UMT5 d_kv
}  // namespace

namespace {

// Memory-bound traffic of one encoder layer per token, in hidden-sized elements read or written,
// fused: two norms (2 x 2), two residual adds (2 x 3), the FFN activation (~4 x 2); the runtime's
// elementwise_traffic scales it as for the transformer.
constexpr double kEncoderElementwise = 18;
// Live activations of one encoder layer per token, in hidden-sized elements: hidden state,
// residual, Q, K, V, attention output and the FFN's hidden (~4).
constexpr double kEncoderLive = 10;
// Parallel decode (patch parallelism, as xDiT's DistVAE): every convolution of the decoder with a
// spatial kernel (m.vae.decoder_convs, counted from its structure: 33 in FLUX.1's AutoencoderKL)
// exchanges its boundary rows with each neighbour (m.vae.halo_channels: their input channels at
// their share of the output's width and frames, averaged; 256 unless derived); its GroupNorms
// reduce statistics (latency only); the patches are gathered at the end (3 bf16 channels per pixel).

CommGroup replica_group(const StepContext& ctx, int n) {
  const HardwareProfile& hw = ctx.hw.profile();
  const int per_node = std::max(1, hw.gpus_per_node);
  return {n, 1, (n + per_node - 1) / per_node};  // the nodes the group spans
}

double prompts(const StepContext& ctx) {
  return ctx.m.passes_per_step() * std::max(1.0, static_cast<double>(ctx.q.batch) / ctx.axes.d);
}

struct EncoderTerms {
  TextEncodeTerms terms;  // what the explain shows
  Milliseconds ms = 0, transfer_ms = 0, comm_ms = 0;
  Bytes resident = 0;  // on the GPU throughout
  Bytes encoding = 0;  // on the GPU only while encoding (weights streamed or loaded, activations)
};

// Fully sharded (FSDP, as xDiT's fsdp_strategy): before each layer runs, its weights are
// all-gathered over the fully-shard group (nccl-tests size: the whole layer), from the GPU's shard or,
// with the shards kept in host memory, after this rank copies its shard of the layer over the host
// link. The next layer's fetch is prefetched while this one computes, so only the fetch beyond the
// encoder's GPU work is exposed, plus the first layer's, which nothing hides.
struct LayerFetch {
  Milliseconds gather_ms = 0, copy_ms = 0;  // every layer's, summed
  double collectives = 0;
};
LayerFetch fully_sharded_fetch(const StepContext& ctx, const Component& e, bool host) {
  const HardwareModel& hw = ctx.hw;
  const double layers = std::max(1, e.layers);
  const Bytes layer = e.params * e.bytes_per_param / layers;
  LayerFetch out;
  out.collectives = layers;
  out.gather_ms = layers * hw.collective(Collective::kAllGather, layer, ctx.group(CommAxis::kFs)).ms;
  if (host) {
    const GBps link = hw.profile().host_link.bandwidth_gbps * hw.profile().host_link.efficiency;
    out.copy_ms = layers * transfer_ms(layer / std::max(1, ctx.axes.f), link);
  }
  return out;
}

// One text encoder under a placement: GEMMs of 2 x params x tokens, attention over its tokens,
// memory-bound work, the host's ops, and what the placement adds.
EncoderTerms encode(const StepContext& ctx, const Component& e, TextEncoderPlacement te) {
  const RuntimeProfile& rt = ctx.runtime;
  const HardwareModel& hw = ctx.hw;
  const double tokens = e.tokens > 0 ? e.tokens : ctx.text;
  const double rows = tokens * prompts(ctx);
  const int n = te == TextEncoderPlacement::kSharded ? ctx.axes.replica() : 1;
  const Bytes weights = e.params * e.bytes_per_param;
  const double b = ctx.m.bytes_per_activation;
  EncoderTerms out;
  TextEncodeTerms& t = out.terms;
  t.tokens = tokens;
  t.prompts = prompts(ctx);
  t.gemm_ms = hw.gemm(2.0 * e.params * rows / n, weights / n + rows * 2.0 * e.hidden * b, rows).ms;
  Milliseconds device = t.gemm_ms;
  double host_ops = 0, collectives = 0;
  if (e.layers > 0) {
    const double hidden = e.hidden;
    // Text encoders' heads are 64 wide (T5, CLIP and UMT5 alike; kTextEncoderHeadDim).
    t.attention_ms = hw.attention(4.0 * tokens * tokens * hidden * e.layers * prompts(ctx) / n, tokens, tokens,
                                  kTextEncoderHeadDim, ctx.q.backend).ms;
    t.memory_ms = hw.memory(e.layers * rows * hidden * b * kEncoderElementwise * rt.elementwise_traffic).ms;
    device += t.attention_ms + t.memory_ms;
    host_ops = e.layers * rt.ops.text_encoder_layer;
    if (n > 1) {  // Megatron-style: an all-reduce after attention and after the FFN of every layer
      collectives = 2.0 * e.layers;
      out.comm_ms = collectives * hw.collective(Collective::kAllReduce, rows * hidden * b, replica_group(ctx, n)).ms;
      device += out.comm_ms;
      host_ops += collectives * rt.ops.tp_all_reduce;
    }
  }
  if (fully_sharded(te) && ctx.axes.f > 1) {  // a group of one holds the whole encoder: nothing to gather
    const LayerFetch f = fully_sharded_fetch(ctx, e, te == TextEncoderPlacement::kFullyShardedHost);
    const Milliseconds fetch = f.gather_ms + f.copy_ms;
    const Milliseconds exposed = std::max(0.0, fetch - device) + fetch / f.collectives;
    out.comm_ms = exposed * f.gather_ms / fetch;
    out.transfer_ms = exposed - out.comm_ms;
    device += exposed;
    collectives = f.collectives;
  }
  const Milliseconds host = rt.eager_host_ms(host_ops) + collectives * rt.collective_us * 1e-3;
  out.ms = rt.overlaps_device ? std::max(device, host) : device + host;
  t.host_ms = host;
  const Bytes live = rows * std::max(1, e.hidden) * b * kEncoderLive;
  // The running layer and the prefetched one (the whole encoder when it has no layers).
  const Bytes two_layers = e.layers > 0 ? 2.0 * weights / e.layers : weights;
  switch (te) {
    case TextEncoderPlacement::kReplicated:
      out.resident = weights;
      out.encoding = live;
      break;
    case TextEncoderPlacement::kSharded:
      out.resident = weights / n;
      out.encoding = live;
      break;
    case TextEncoderPlacement::kOffloaded: {
      // Streamed block by block with the next block prefetched: two layers on the GPU at a time;
      // the transfer hides behind the compute only as far as the compute lasts.
      const GBps link = hw.profile().host_link.bandwidth_gbps * hw.profile().host_link.efficiency;
      const Milliseconds transfer = transfer_ms(weights, link);
      out.transfer_ms = std::max(0.0, transfer - out.ms);
      out.ms += out.transfer_ms;
      out.encoding = two_layers + live;
      break;
    }
    case TextEncoderPlacement::kSequential:
      out.encoding = weights + live;
      break;
    case TextEncoderPlacement::kFullySharded:  // this GPU's shard
      out.resident = weights / std::max(1, ctx.axes.f);
      out.encoding = two_layers + live;
      break;
    case TextEncoderPlacement::kFullyShardedHost:
      out.encoding = two_layers + live;
      break;
  }
  t.comm_ms = out.comm_ms;
  t.transfer_ms = out.transfer_ms;
  t.ms = out.ms;
  return out;
}

struct DecodeTerms {
  VaeDecodeTerms terms;  // what the explain shows
  Milliseconds ms = 0, comm_ms = 0;
  Bytes live = 0;
};

// The tiled decode (diffusers' AutoencoderKL.tiled_decode): above tile_sample_size pixels a side,
// tiles of that side start every three quarters of a tile (a quarter overlaps its neighbour; the
// last ones are cut at the edge) and are decoded one at a time.
constexpr double kTileOverlap = 0.25;
struct Tiling {
  double tiles = 1;          // tiles per chunk
  double tile_pixels = 0;    // pixels of the largest tile (what is live)
  double decoded_pixels = 0; // pixels of every tile together (overlaps decoded twice)
};
struct AxisTiles {
  double count = 1, pixels = 0;
};
AxisTiles axis_tiles(double pixels, double side) {
  if (pixels <= side) return {1, pixels};
  const double stride = side * (1 - kTileOverlap);
  AxisTiles a{std::ceil(pixels / stride), 0};
  for (int k = 0; k < a.count; ++k) a.pixels += std::min(side, pixels - k * stride);
  return a;
}
Tiling tiling(const VaeProfile& vae, const Resolution& r, bool tiled) {
  const double side = tiled ? vae.tile_sample_size : 1e18;
  const AxisTiles w = axis_tiles(r.width, side), h = axis_tiles(r.height, side);
  return {w.count * h.count, std::min<double>(side, r.width) * std::min<double>(side, r.height), w.pixels * h.pixels};
}

// Live decoder memory of `pixels` output pixels per image (`n` GPUs sharing the image): the larger
// of two moments of the decode. The convolutions' widest activations, in the last up stages
// (decode_bytes_per_pixel, 15% allocator fragmentation). And, with a mid-block attention, its
// score matrix while the decoder is still at the latent resolution: one head over the latent
// pixels, whose head_dim (the mid block's channels, 512 in AutoencoderKL) is above what the fused
// attention kernels take (flash: 256), so PyTorch's SDPA materialises latent^2 scores per image;
// patch-parallel, each GPU's queries against every key.
Bytes decoder_live(const ModelProfile& m, double pixels, double images, int n) {
  const Bytes convolutions = kFragmentation * m.vae.decode_bytes_per_pixel * pixels;
  const double latent = pixels / (static_cast<double>(m.vae.spatial) * m.vae.spatial);
  const Bytes scores = m.vae.mid_block_attention ? latent * latent * m.bytes_per_activation : 0.0;
  return std::max(convolutions, scores) * images / n;
}

// The VAE decode: convolutions (roofline), GroupNorm/SiLU/upsampling traffic, the host's ops per
// decoded chunk; patch-parallel over the replica's GPUs with halo exchange and a final gather;
// tiled (every tile's pixels, overlaps decoded twice, one tile live) or sliced (one image live).
DecodeTerms decode(const StepContext& ctx, VaePlacement placement) {
  const ModelProfile& m = ctx.m;
  const RuntimeProfile& rt = ctx.runtime;
  const HardwareModel& hw = ctx.hw;
  const Query& q = ctx.q;
  const int n = placement == VaePlacement::kParallel ? ctx.axes.replica() : 1;
  const double images = std::max(1.0, static_cast<double>(q.batch) / ctx.axes.d);
  const double frames = m.video ? q.sequence.decoded_frames : 1;  // the frames the pipeline decodes (core/sequence.h)
  const Tiling tiles = tiling(m.vae, q.resolution, placement == VaePlacement::kTiled);
  // Pixels the decoder computes: every tile's (overlaps twice) when tiled.
  const double pixels = tiles.decoded_pixels * frames * images;
  const double chunks = (m.video ? static_cast<double>(q.sequence.latent_frames) : 1.0) * tiles.tiles;
  const double b = m.bytes_per_activation;
  DecodeTerms out;
  VaeDecodeTerms& t = out.terms;
  t = {m.vae.decode_gflop_per_pixel, m.vae.decode_traffic_bytes_per_pixel, tiles.decoded_pixels, frames, images,
       tiles.tiles, chunks, n};
  const Timed conv = hw.conv(m.vae.decode_gflop_per_pixel * 1e9 * pixels / n);
  t.conv_ms = conv.ms;
  t.conv_source = conv.source;
  t.memory_ms = hw.memory(m.vae.decode_traffic_bytes_per_pixel * pixels / n).ms;
  Milliseconds device = t.conv_ms + t.memory_ms;
  double collectives = 0;
  if (n > 1) {
    const CommGroup g = replica_group(ctx, n);
    const double convs = m.vae.decoder_convs, channels = m.vae.halo_channels;
    const Bytes halo = 2.0 * q.resolution.width * channels * b * frames * images;
    out.comm_ms = convs * (hw.collective(Collective::kSendRecv, halo, g).ms +
                           hw.collective(Collective::kAllReduce, 8.0 * channels, g).ms) +
                  hw.collective(Collective::kAllGather, pixels * 3.0 * b, g).ms;
    collectives = 2 * convs + 1;
    device += out.comm_ms;
  }
  const Milliseconds host = rt.eager_host_ms(rt.ops.vae_decode * chunks) + collectives * rt.collective_us * 1e-3;
  out.ms = rt.overlaps_device ? std::max(device, host) : device + host;
  t.host_ms = host;
  t.comm_ms = out.comm_ms;
  const double chunk_frames = m.video ? m.vae.temporal : 1;
  const double live_images = placement == VaePlacement::kSliced ? 1.0 : images;
  out.live = decoder_live(m, tiles.tile_pixels * chunk_frames, live_images, n);
  // Tiled: the decoded tiles wait for blending into the output image (3 channels per pixel).
  if (placement == VaePlacement::kTiled && tiles.tiles > 1) out.live += pixels * 3.0 * b;
  return out;
}

}  // namespace

bool placement_applies(const StepContext& ctx, TextEncoderPlacement te, VaePlacement vae) {
  // Off CUDA no framework decodes in parallel or shards the text encoders (planner/frameworks.h):
  // the planner picks among what runs there, unless the user forces a placement.
  const bool cuda = ctx.hw.profile().family == DeviceFamily::kCuda;
  const bool several = ctx.axes.replica() > 1 && cuda;
  // Fully-sharded encoders go with a fully-sharded transformer (frameworks shard them together).
  const bool fs_ok = !fully_sharded(te) || (ctx.axes.f > 1 && cuda);
  const bool te_ok = ctx.q.text_encoder || te == TextEncoderPlacement::kReplicated ||
                     (!ctx.m.text_encoders.empty() && (te != TextEncoderPlacement::kSharded || several) && fs_ok);
  // Tiled and sliced decodes are priced when asked for (--vae), never chosen in their place.
  const bool vae_ok = ctx.q.vae || vae == VaePlacement::kSingle || (vae == VaePlacement::kParallel && several);
  return te_ok && vae_ok;
}

namespace {

// The text encoders' part of a placement: it depends on the encoder placement alone.
struct EncodingTerms {
  Milliseconds ms = 0, transfer_ms = 0, comm_ms = 0;
  Bytes resident = 0, encoding = 0;
  std::array<TextEncodeTerms, kMaxTextEncoders> terms{};
  int count = 0;
};
EncodingTerms encoding_terms(const StepContext& ctx, TextEncoderPlacement te) {
  EncodingTerms out;
  const Component* sharded = fully_sharded(te) ? ctx.m.largest_text_encoder() : nullptr;
  for (const Component& e : ctx.m.text_encoders) {
    const bool whole = fully_sharded(te) && &e != sharded;
    const EncoderTerms t = encode(ctx, e, whole ? TextEncoderPlacement::kReplicated : te);
    if (out.count < kMaxTextEncoders) {
      out.terms[out.count] = t.terms;
      out.terms[out.count++].encoder = static_cast<int>(&e - ctx.m.text_encoders.data());
    }
    out.ms += t.ms;
    out.transfer_ms += t.transfer_ms;
    out.comm_ms += t.comm_ms;
    out.resident += t.resident;
    out.encoding += t.encoding;
  }
  return out;
}

// An offloaded idle transformer: this GPU's share of each transformer's weights (what denoising
// holds of one) over the host link, twice per image.
Milliseconds transformer_load_ms(const StepContext& ctx, const MemoryBreakdown& denoising) {
  if (!ctx.q.offload_idle_transformer || ctx.m.transformers < 2) return 0;
  const auto& link = ctx.hw.profile().host_link;
  return ctx.m.transformers * transfer_ms(denoising.transformer_weights, link.bandwidth_gbps * link.efficiency);
}

// What loading reads, whatever the placement: every transformer and text encoder whole; and what
// of a fully-sharded transformer's weights only a forward gathers.
struct LoadSizes {
  Bytes whole_transformer = 0, encoders = 0, gathered_blocks = 0;
};
LoadSizes load_sizes(const StepContext& ctx) {
  const ModelProfile& m = ctx.m;
  LoadSizes out{transformer_weight_bytes(m, 1, ctx.q.precision), 0,
                ctx.axes.f > 1 ? fully_shard_gathered_bytes(m, ctx.q.precision) : 0.0};
  for (const Component& e : m.text_encoders) out.encoders += e.params * e.bytes_per_param;
  return out;
}

// The weights on this GPU once loaded, for the two orders of sharding and moving (MemoryBreakdown),
// and the host memory a rank reads them into.
void add_load(const StepContext& ctx, const LoadSizes& sizes, TextEncoderPlacement te, MemoryBreakdown& mem) {
  const ModelProfile& m = ctx.m;
  const int held = ctx.q.offload_idle_transformer ? 1 : m.transformers;
  // Offloaded and sequential encoders are not moved with the pipeline (the script moves them to
  // encode, a phase of its own).
  const bool encoders_moved = te == TextEncoderPlacement::kReplicated || te == TextEncoderPlacement::kSharded ||
                              te == TextEncoderPlacement::kFullySharded;
  mem.load_weights = mem.transformer_weights - held * sizes.gathered_blocks + mem.text_encoder_weights + mem.vae_weights;
  mem.load_weights_moved_first = held * sizes.whole_transformer + (encoders_moved ? sizes.encoders : 0.0) + mem.vae_weights;
  mem.host_load_per_rank = m.transformers * sizes.whole_transformer + sizes.encoders + mem.vae_weights;
}

// Writes one placement into `out` in place (a copy of the whole option costs as much as pricing it).
void place_pipeline(const StepContext& ctx, TextEncoderPlacement te, const EncodingTerms& e, VaePlacement vae,
                    const DecodeTerms& d, const MemoryBreakdown& denoising, const LoadSizes& sizes, PlacedPipeline& out) {
  out.cost = PipelineCost{};
  out.cost.text_encoder = te;
  out.cost.vae = vae;
  out.memory = denoising;
  out.cost.text_encode_ms = e.ms;
  out.cost.text_transfer_ms = e.transfer_ms;
  out.cost.text_comm_ms = e.comm_ms;
  out.cost.encoders = e.terms;
  out.cost.encoder_count = e.count;
  out.cost.decode = d.terms;
  out.memory.text_encoder_weights += e.resident;
  out.memory.text_encode = e.encoding;
  out.memory.transformer_while_encoding = te != TextEncoderPlacement::kSequential;
  out.cost.vae_decode_ms = d.ms;
  out.cost.vae_comm_ms = d.comm_ms;
  out.memory.vae_decode = d.live;
  out.cost.host_ms = ctx.runtime.image_ms;
  out.cost.transformer_load_ms = transformer_load_ms(ctx, denoising);
  add_load(ctx, sizes, te, out.memory);
}

// The placements to consider: the forced one, else every one.
template <class E, std::size_t N>
int candidates(const std::optional<E>& forced, std::array<E, N>& out) {
  if (forced) {
    out[0] = *forced;
    return 1;
  }
  for (std::size_t i = 0; i < N; ++i) out[i] = static_cast<E>(i);
  return static_cast<int>(N);
}

}  // namespace

int placements(const StepContext& ctx, const MemoryBreakdown& denoising,
               std::array<PlacedPipeline, kPipelineOptionCount>& out) {
  std::array<std::optional<DecodeTerms>, kVaePlacementCount> decoded;
  std::array<TextEncoderPlacement, kTextEncoderPlacementCount> encoders{};
  std::array<VaePlacement, kChosenVaePlacementCount> vaes{};
  const int encoder_count = candidates(ctx.q.text_encoder, encoders);
  const int vae_count = candidates(ctx.q.vae, vaes);
  const LoadSizes sizes = load_sizes(ctx);
  int count = 0;
  for (int i = 0; i < encoder_count; ++i) {
    std::optional<EncodingTerms> encoded;
    for (int j = 0; j < vae_count; ++j) {
      if (!placement_applies(ctx, encoders[i], vaes[j])) continue;
      if (!encoded) encoded = encoding_terms(ctx, encoders[i]);
      std::optional<DecodeTerms>& d = decoded[static_cast<int>(vaes[j])];
      if (!d) d = decode(ctx, vaes[j]);
      place_pipeline(ctx, encoders[i], *encoded, vaes[j], *d, denoising, sizes, out[count++]);
    }
  }
  return count;
}

}  // namespace cpplan::costmodel
