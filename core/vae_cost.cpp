#include "core/vae_cost.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <vector>

#include "core/diffusers_classes.h"

namespace cpplan::diffusers {

using detail::ConfigFields;
using detail::FieldError;
using nlohmann::json;

namespace {

// Elements read and written per position per channel by the memory-bound ops eager PyTorch runs
// between the convolutions, 2 bytes each (bf16).
constexpr double kBytesPerElement = 2;
constexpr double kGroupNorm = 3;     // native group_norm: a statistics pass reads, the normalising pass reads and writes
constexpr double kEagerRmsNorm = 9;  // F.normalize / pow-mean-rsqrt (3), then * scale, * weight, + bias (2 each)
constexpr double kBatchNorm = 2;     // inference batch norm: one read, one write
constexpr double kActivation = 2;    // SiLU / ReLU: a read, a write
constexpr double kAdd = 3;           // residual add or gating multiply: two reads, a write
constexpr double kPadCopy = 2;       // a causal conv's input copied into its time-padded (cached) buffer
constexpr double kLiveTensors = 3;   // a resnet's input, its norm/activation output, its conv's output

// Where a layer runs, as multiples of the latent: pixels of a frame and frames. A decoder is built
// from the latent up ({1, 1}) and divided by where it ends (Tally::per_output).
struct Level {
  double pixels = 1, frames = 1;
  Level up(bool space, bool time) const { return {space ? pixels * 4 : pixels, time ? frames * 2 : frames}; }
  Level down(bool space, bool time) const { return {space ? pixels / 4 : pixels, time ? frames / 2 : frames}; }
  double share() const { return pixels * frames; }
};

// The FLOPs, memory-bound bytes, widest activation and halo rows of the layers added to it.
class Tally {
 public:
  // A convolution of side x side x time taps, in -> out channels in `groups` groups, at `at`: 2 x
  // taps x in / groups x out FLOPs per position; a spatial kernel exchanges (side - 1) / 2 rows of
  // its input with each neighbour when the image is split in row bands.
  void conv(int side, int time, double in, double out, Level at, double groups = 1) {
    flops_ += 2.0 * side * side * time * in / groups * out * at.share();
    widest_ = std::max(widest_, std::max(in, out) * at.share());
    if (side == 1) return;
    ++convs_;
    halo_ += in * (side - 1) / 2 * std::sqrt(at.pixels) * at.frames;
  }
  void flops(double per_position, Level at) { flops_ += per_position * at.share(); }
  // `elements` reads and writes of each of `channels` channels at every position of `at`.
  void elementwise(double elements, double channels, Level at) {
    bytes_ += elements * channels * kBytesPerElement * at.share();
  }
  // From per latent position to per output pixel per frame: the decoder ended at `out`.
  void per_output(Level out) {
    flops_ /= out.share(), bytes_ /= out.share(), widest_ /= out.share();
    halo_ /= std::sqrt(out.pixels) * out.frames;
  }
  double flops() const { return flops_; }
  double bytes() const { return bytes_; }
  double widest() const { return widest_; }
  int convs() const { return convs_; }
  double halo() const { return convs_ > 0 ? halo_ / convs_ : 0; }

 private:
  double flops_ = 0, bytes_ = 0, widest_ = 0, halo_ = 0;
  int convs_ = 0;
};

// How a family builds its 3x3 convolutions and norms.
struct Style {
  int time = 1;                     // taps in time: 3 for the causal 3D VAEs (their input padded in time)
  double norm = kGroupNorm;         // elements of one norm
  double spatial_norm_latent = 0;   // CogVideoX's decoder: SpatialNorm3D conditioned on the latent's channels
};

void conv3(Tally& t, const Style& s, double in, double out, Level at) {
  t.conv(3, s.time, in, out, at);
  if (s.time > 1) t.elementwise(kPadCopy, in, at);
}

// A norm; CogVideoX's SpatialNorm3D adds norm(f) x conv_y(zq) + conv_b(zq), two 1x1x1 convs of the
// latent (interpolated to f's size) and a multiply-add.
void norm(Tally& t, const Style& s, double c, Level at) {
  t.elementwise(s.norm, c, at);
  if (s.spatial_norm_latent <= 0) return;
  t.conv(1, 1, s.spatial_norm_latent, c, at);
  t.conv(1, 1, s.spatial_norm_latent, c, at);
  t.elementwise(2 * kAdd, c, at);
}

void norm_act(Tally& t, const Style& s, double c, Level at) {
  norm(t, s, c, at);
  t.elementwise(kActivation, c, at);
}

// The resnet of the 2D and causal 3D VAEs (diffusers' ResnetBlock2D, CogVideoXResnetBlock3D,
// HunyuanVideoResnetBlockCausal3D, WanResidualBlock): norm, SiLU, conv, norm, SiLU, conv; a
// 1x1(x1) shortcut conv when the channels change; the residual add.
void resnet(Tally& t, const Style& s, double in, double out, Level at) {
  norm_act(t, s, in, at);
  conv3(t, s, in, out, at);
  norm_act(t, s, out, at);
  conv3(t, s, out, out, at);
  if (in != out) t.conv(1, 1, in, out, at);
  t.elementwise(kAdd, out, at);
}

// A single-head self-attention in a mid block: norm, q/k/v/out 1x1 projections, the residual add.
// Its scores (latent positions^2 x channels) are not a per-pixel cost and are not counted.
void mid_attention(Tally& t, const Style& s, double c, Level at) {
  t.elementwise(s.norm, c, at);
  t.conv(1, 1, c, 4 * c, at);
  t.elementwise(kAdd, c, at);
}

void mid_block(Tally& t, const Style& s, double c, Level at, bool attention) {
  resnet(t, s, c, c, at);
  if (attention) mid_attention(t, s, c, at);
  resnet(t, s, c, c, at);
}

// Nearest-neighbour upsampling into `to` (2x a side, and 2x in time when `time`): reads the input,
// writes the output.
void upsample(Tally& t, double c, Level to, bool time) { t.elementwise(1 + (time ? 1.0 / 8 : 1.0 / 4), c, to); }

// ---- reading the fields ------------------------------------------------------------------------

std::vector<int> channels(const ConfigFields& f, std::string_view field, std::vector<int> fallback) {
  std::vector<int> ch = f.integers_or(field, std::move(fallback));
  if (ch.empty()) throw FieldError{fmt::format("{} = []: must list at least one stage ({})", field, f.class_name())};
  if (std::find(ch.begin(), ch.end(), 0) != ch.end())
    throw FieldError{fmt::format("{} = [{}]: every entry must be at least 1 ({})", field, fmt::join(ch, ", "), f.class_name())};
  return ch;
}

int positive(const ConfigFields& f, std::string_view field, int fallback) {
  const int v = f.integer_or(field, fallback);
  if (v < 1) throw FieldError{fmt::format("{} = {}: must be at least 1 ({})", field, v, f.class_name())};
  return v;
}

// log2 of a compression ratio that must be a power of two.
int doublings(const ConfigFields& f, std::string_view field, int fallback) {
  const int v = positive(f, field, fallback);
  if ((v & (v - 1)) != 0) throw FieldError{fmt::format("{} = {}: must be a power of 2 ({})", field, v, f.class_name())};
  int n = 0;
  while ((1 << n) < v) ++n;
  return n;
}

std::vector<bool> booleans(const ConfigFields& f, std::string_view field, std::vector<bool> fallback) {
  if (!f.has(field)) return fallback;
  const json& v = f.config().at(std::string(field));
  std::vector<bool> out;
  for (const json& e : v.is_array() ? v : json::array({nullptr})) {
    if (!e.is_boolean())
      throw FieldError{fmt::format("{} = {}: must be an array of true/false ({})", field, v.dump(), f.class_name())};
    out.push_back(e.get<bool>());
  }
  return out;
}

// A string field that may also be a list of one string per stage (AutoencoderDC's block types).
std::vector<std::string> per_stage(const ConfigFields& f, std::string_view field, std::string fallback, std::size_t n) {
  if (!f.has(field) || f.config().at(std::string(field)).is_string())
    return std::vector<std::string>(n, f.string_or(field, std::move(fallback)));
  const json& v = f.config().at(std::string(field));
  std::vector<std::string> out;
  for (const json& e : v.is_array() ? v : json::array({nullptr})) {
    if (!e.is_string()) throw FieldError{fmt::format("{} = {}: must be a string or an array of strings ({})", field, v.dump(), f.class_name())};
    out.push_back(e.get<std::string>());
  }
  if (out.size() != n)
    throw FieldError{fmt::format("{} = {}: must have one entry per stage ({}) ({})", field, v.dump(), n, f.class_name())};
  return out;
}

template <class T>
void same_length(const ConfigFields& f, std::string_view field, const std::vector<T>& v, std::size_t n) {
  if (v.size() != n)
    throw FieldError{fmt::format("{} = {}: must have one entry per stage ({}) ({})", field,
                                 f.config().at(std::string(field)).dump(), n, f.class_name())};
}

std::string listed(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, ",")); }

std::vector<int> reversed(std::vector<int> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

// Whether a stage resamples after its resnets, in space and in time.
struct Resample {
  bool space = false, time = false;
};

// A 3x3 conv at `at` after a resample: in the Style's kernel, or 2D on each frame (`per_frame`).
void resample_conv(Tally& t, const Style& s, double c, Level at, bool per_frame) {
  if (per_frame) t.conv(3, 1, c, c, at);
  else conv3(t, s, c, c, at);
}

// A decoder's up stages from the deepest channels (stage j = 0 holds ch.back()): layers + 1 resnets
// each, then, where resample_of(j) says, a nearest 2x upsample and a conv at the new level.
template <class ResampleOf>
Level up_stages(Tally& t, const Style& s, const std::vector<int>& ch, int layers, Level at, ResampleOf resample_of,
                bool per_frame = false) {
  double prev = ch.back();
  for (std::size_t j = 0; j < ch.size(); ++j) {
    const std::size_t i = ch.size() - 1 - j;
    for (int r = 0; r <= layers; ++r) resnet(t, s, r == 0 ? prev : ch[i], ch[i], at);
    if (const Resample rs = resample_of(j); rs.space || rs.time) {
      at = at.up(rs.space, rs.time);
      upsample(t, ch[i], at, rs.time);
      resample_conv(t, s, ch[i], at, per_frame);
    }
    prev = ch[i];
  }
  return at;
}

// An encoder's down stages from the first channels: layers resnets each, then, where
// resample_of(i) says, a stride-2 conv (counted at its output positions).
template <class ResampleOf>
Level down_stages(Tally& t, const Style& s, const std::vector<int>& ch, int layers, Level at, ResampleOf resample_of,
                  bool per_frame = false) {
  double prev = ch.front();
  for (std::size_t i = 0; i < ch.size(); ++i) {
    for (int r = 0; r < layers; ++r) resnet(t, s, r == 0 ? prev : ch[i], ch[i], at);
    if (const Resample rs = resample_of(i); rs.space || rs.time) {
      at = at.down(rs.space, rs.time);
      resample_conv(t, s, ch[i], at, per_frame);
    }
    prev = ch[i];
  }
  return at;
}

// ---- AutoencoderKL (and AutoencoderKLFlux2, the same Encoder / Decoder) --------------------------
// diffusers' vae.py: Decoder = conv_in, UNetMidBlock2D (resnet, attention, resnet), UpDecoderBlock2D
// stages from the last block_out_channels to the first, layers_per_block + 1 resnets each and a
// nearest 2x upsample + 3x3 conv after all but the last, GroupNorm, SiLU, conv_out; Encoder the
// mirror with layers_per_block resnets and a stride-2 3x3 conv after all but the last stage.

struct KlConfig {
  std::vector<int> ch;
  int layers = 2, latent = 4, in = 3, out = 3;
  bool attention = true, quant = true, post_quant = true;
};

KlConfig kl_config(const ConfigFields& f) {
  KlConfig c;
  c.ch = channels(f, "block_out_channels", {128, 256, 512, 512});
  c.layers = f.integer_or("layers_per_block", 2);
  c.latent = positive(f, "latent_channels", 4);
  c.in = positive(f, "in_channels", 3);
  c.out = positive(f, "out_channels", 3);
  c.attention = f.boolean_or("mid_block_add_attention", true);
  c.quant = f.boolean_or("use_quant_conv", true);
  c.post_quant = f.boolean_or("use_post_quant_conv", true);
  return c;
}

Level kl_decode(Tally& t, const KlConfig& c) {
  const Style s;
  Level at;
  if (c.post_quant) t.conv(1, 1, c.latent, c.latent, at);
  conv3(t, s, c.latent, c.ch.back(), at);
  mid_block(t, s, c.ch.back(), at, c.attention);
  at = up_stages(t, s, c.ch, c.layers, at, [&](std::size_t j) { return Resample{j + 1 < c.ch.size(), false}; });
  norm_act(t, s, c.ch.front(), at);
  conv3(t, s, c.ch.front(), c.out, at);
  return at;
}

void kl_encode(Tally& t, const KlConfig& c) {
  const Style s;
  Level at;
  conv3(t, s, c.in, c.ch.front(), at);
  at = down_stages(t, s, c.ch, c.layers, at, [&](std::size_t i) { return Resample{i + 1 < c.ch.size(), false}; });
  mid_block(t, s, c.ch.back(), at, c.attention);
  norm_act(t, s, c.ch.back(), at);
  conv3(t, s, c.ch.back(), 2 * c.latent, at);
  if (c.quant) t.conv(1, 1, 2 * c.latent, 2 * c.latent, at);
}

std::string kl_structure(const KlConfig& c) {
  return fmt::format("2D; up stages {} channels from the latent, {} resnets each; mid block {}{}", listed(reversed(c.ch)),
                     c.layers + 1, c.ch.back(), c.attention ? " with attention" : "");
}

// ---- AutoencoderKLCogVideoX ----------------------------------------------------------------------
// autoencoder_kl_cogvideox.py: causal 3x3x3 convs (CogVideoXCausalConv3d, the input padded with 2
// cached frames); CogVideoXDecoder3D = conv_in, a mid block of 2 resnets (no attention),
// CogVideoXUpBlock3D stages of layers_per_block + 1 resnets whose norms are SpatialNorm3D on the
// latent, each but the last followed by CogVideoXUpsampling3D (nearest 2x, in time too for the first
// log2(temporal_compression_ratio) stages, then a 2D 3x3 conv per frame); the encoder mirrors it with
// layers_per_block resnets (plain GroupNorm) and CogVideoXDownsample3D (time average-pooled in the
// first stages, a stride-2 2D 3x3 conv).

struct CogConfig {
  std::vector<int> ch;
  int layers = 3, latent = 16, in = 3, out = 3, time_doublings = 2;
  // After every stage but the last, in space; in time too for the first time_doublings stages.
  Resample after(std::size_t stage) const {
    const bool more = stage + 1 < ch.size();
    return {more, more && static_cast<int>(stage) < time_doublings};
  }
};

CogConfig cog_config(const ConfigFields& f) {
  CogConfig c;
  c.ch = channels(f, "block_out_channels", {128, 256, 256, 512});
  c.layers = f.integer_or("layers_per_block", 3);
  c.latent = positive(f, "latent_channels", 16);
  c.in = positive(f, "in_channels", 3);
  c.out = positive(f, "out_channels", 3);
  c.time_doublings = doublings(f, "temporal_compression_ratio", 4);
  return c;
}

Level cog_decode(Tally& t, const CogConfig& c) {
  const Style s{3, kGroupNorm, static_cast<double>(c.latent)};
  Level at;
  conv3(t, s, c.latent, c.ch.back(), at);
  mid_block(t, s, c.ch.back(), at, false);
  at = up_stages(t, s, c.ch, c.layers, at, [&](std::size_t j) { return c.after(j); }, true);
  norm_act(t, s, c.ch.front(), at);
  conv3(t, s, c.ch.front(), c.out, at);
  return at;
}

void cog_encode(Tally& t, const CogConfig& c) {
  const Style s{3, kGroupNorm, 0};
  Level at;
  conv3(t, s, c.in, c.ch.front(), at);
  at = down_stages(t, s, c.ch, c.layers, at, [&](std::size_t i) { return c.after(i); }, true);
  mid_block(t, s, c.ch.back(), at, false);
  norm_act(t, s, c.ch.back(), at);
  conv3(t, s, c.ch.back(), 2 * c.latent, at);
}

std::string cog_structure(const CogConfig& c) {
  return fmt::format("3D causal 3x3x3; up stages {} channels from the latent, {} resnets each (SpatialNorm3D); "
                     "2x in time after the first {}",
                     listed(reversed(c.ch)), c.layers + 1, c.time_doublings);
}

// ---- AutoencoderKLHunyuanVideo -------------------------------------------------------------------
// autoencoder_kl_hunyuan_video.py: causal 3x3x3 convs (HunyuanVideoCausalConv3d, replicate-padded
// in time); HunyuanVideoDecoder3D = conv_in, a mid block (resnet, attention, resnet), up stages of
// layers_per_block + 1 resnets, the first log2(spatial_compression_ratio) followed by a 2x
// upsample (in time too for the stages before the last log2(temporal_compression_ratio) + 1 but
// the last) and a causal conv; the encoder mirrors it with stride-2 causal convs; 1x1x1 quant convs.

struct HunyuanConfig {
  std::vector<int> ch;
  int layers = 2, latent = 16, in = 3, out = 3, space_doublings = 3, time_doublings = 2;
  bool attention = true;
  bool space(std::size_t j) const { return static_cast<int>(j) < space_doublings; }
  bool time(std::size_t j) const {
    const int n = static_cast<int>(ch.size());
    return static_cast<int>(j) >= n - 1 - time_doublings && static_cast<int>(j) != n - 1;
  }
};

HunyuanConfig hunyuan_config(const ConfigFields& f) {
  HunyuanConfig c;
  c.ch = channels(f, "block_out_channels", {128, 256, 512, 512});
  c.layers = f.integer_or("layers_per_block", 2);
  c.latent = positive(f, "latent_channels", 16);
  c.in = positive(f, "in_channels", 3);
  c.out = positive(f, "out_channels", 3);
  c.space_doublings = doublings(f, "spatial_compression_ratio", 8);
  c.time_doublings = doublings(f, "temporal_compression_ratio", 4);
  c.attention = f.boolean_or("mid_block_add_attention", true);
  return c;
}

Level hunyuan_decode(Tally& t, const HunyuanConfig& c) {
  const Style s{3, kGroupNorm, 0};
  Level at;
  t.conv(1, 1, c.latent, c.latent, at);
  conv3(t, s, c.latent, c.ch.back(), at);
  mid_block(t, s, c.ch.back(), at, c.attention);
  at = up_stages(t, s, c.ch, c.layers, at, [&](std::size_t j) { return Resample{c.space(j), c.time(j)}; });
  norm_act(t, s, c.ch.front(), at);
  conv3(t, s, c.ch.front(), c.out, at);
  return at;
}

void hunyuan_encode(Tally& t, const HunyuanConfig& c) {
  const Style s{3, kGroupNorm, 0};
  Level at;
  conv3(t, s, c.in, c.ch.front(), at);
  at = down_stages(t, s, c.ch, c.layers, at, [&](std::size_t i) { return Resample{c.space(i), c.time(i)}; });
  mid_block(t, s, c.ch.back(), at, c.attention);
  norm_act(t, s, c.ch.back(), at);
  conv3(t, s, c.ch.back(), 2 * c.latent, at);
  t.conv(1, 1, 2 * c.latent, 2 * c.latent, at);
}

std::string hunyuan_structure(const HunyuanConfig& c) {
  return fmt::format("3D causal 3x3x3; up stages {} channels from the latent, {} resnets each; mid block {}{}; "
                     "2x in space after the first {}, in time {}x",
                     listed(reversed(c.ch)), c.layers + 1, c.ch.back(), c.attention ? " with attention" : "",
                     c.space_doublings, 1 << c.time_doublings);
}

// ---- AutoencoderKLWan / AutoencoderKLQwenImage ---------------------------------------------------
// autoencoder_kl_wan.py: causal 3x3x3 convs with a feature cache (decoded one latent frame at a
// time, 2 cached frames concatenated before each conv), RMS_norm; WanDecoder3d = conv_in, a mid
// block (residual block, per-frame attention, residual block), up stages over
// decoder_base_dim x reversed(dim_mult) of num_res_blocks + 1 residual blocks, each but the last
// followed by WanResample: in time (temperal_downsample reversed) a (3,1,1) causal conv c -> 2c
// at the low resolution, then nearest 2x and a 2D 3x3 conv to c / 2 (is_residual: to c, plus the
// DupUp3D shortcut of the stage's input); RMS_norm, SiLU, conv to out_channels, a patch_size
// unpatchify. Qwen-Image's is Wan2.1's on one frame: no time conv runs.

struct WanConfig {
  int base = 96, decoder_base = 96, z = 16, blocks = 2, patch = 1, in = 3, out = 3;
  std::vector<int> mult;
  std::vector<bool> time;  // temperal_downsample, one per stage but the last
  bool residual = false, video = true;
};

WanConfig wan_config(const ConfigFields& f, bool video) {
  WanConfig c;
  c.base = positive(f, "base_dim", 96);
  c.decoder_base = positive(f, "decoder_base_dim", c.base);
  c.z = positive(f, "z_dim", 16);
  c.blocks = f.integer_or("num_res_blocks", 2);
  c.mult = channels(f, "dim_mult", {1, 2, 4, 4});
  c.time = booleans(f, "temperal_downsample", {false, true, true});
  if (c.time.size() + 1 < c.mult.size())
    throw FieldError{fmt::format("temperal_downsample = {}: needs an entry per stage but the last ({}) ({})",
                                 f.config().at("temperal_downsample").dump(), c.mult.size() - 1, f.class_name())};
  c.residual = f.boolean_or("is_residual", false);
  c.patch = positive(f, "patch_size", 1);
  c.in = positive(f, "in_channels", 3);
  c.out = positive(f, "out_channels", 3);
  c.video = video;
  return c;
}

Level wan_decode(Tally& t, const WanConfig& c) {
  const Style s{3, kEagerRmsNorm, 0};
  const std::size_t n = c.mult.size();
  std::vector<double> dims{static_cast<double>(c.decoder_base) * c.mult.back()};
  for (std::size_t i = n; i-- > 0;) dims.push_back(static_cast<double>(c.decoder_base) * c.mult[i]);
  Level at;
  t.conv(1, 1, c.z, c.z, at);
  conv3(t, s, c.z, dims[0], at);
  mid_block(t, s, dims[0], at, true);
  for (std::size_t i = 0; i < n; ++i) {
    const double in = i > 0 && !c.residual ? dims[i] / 2 : dims[i], out = dims[i + 1];
    for (int r = 0; r <= c.blocks; ++r) resnet(t, s, r == 0 ? in : out, out, at);
    if (i + 1 == n) break;
    const bool time = c.video && c.time[c.time.size() - 1 - i];  // temperal_downsample reversed
    if (time) {
      t.conv(1, 3, out, 2 * out, at);
      t.elementwise(kPadCopy, out, at);
    }
    at = at.up(true, time);
    upsample(t, out, at, false);
    t.conv(3, 1, out, c.residual ? out : out / 2, at);
    if (c.residual) t.elementwise(2 + kAdd, out, at);
  }
  norm_act(t, s, dims.back(), at);
  conv3(t, s, dims.back(), c.out, at);
  return {at.pixels * c.patch * c.patch, at.frames};
}

void wan_encode(Tally& t, const WanConfig& c) {
  const Style s{3, kEagerRmsNorm, 0};
  const std::size_t n = c.mult.size();
  std::vector<double> dims{static_cast<double>(c.base)};
  for (int m : c.mult) dims.push_back(static_cast<double>(c.base) * m);
  Level at{1.0 / (c.patch * c.patch), 1};
  conv3(t, s, c.in, dims[0], at);
  for (std::size_t i = 0; i < n; ++i) {
    for (int r = 0; r < c.blocks; ++r) resnet(t, s, r == 0 ? dims[i] : dims[i + 1], dims[i + 1], at);
    if (i + 1 == n) break;
    at = at.down(true, false);
    t.conv(3, 1, dims[i + 1], dims[i + 1], at);
    if (c.video && c.time[i]) {
      at = at.down(false, true);
      t.conv(1, 3, dims[i + 1], dims[i + 1], at);
    }
  }
  mid_block(t, s, dims.back(), at, true);
  norm_act(t, s, dims.back(), at);
  conv3(t, s, dims.back(), 2 * c.z, at);
  t.conv(1, 1, 2 * c.z, 2 * c.z, at);
}

std::string wan_structure(const WanConfig& c) {
  std::vector<int> up;
  for (std::size_t i = c.mult.size(); i-- > 0;) up.push_back(c.decoder_base * c.mult[i]);
  return fmt::format("3D causal 3x3x3{}; up stages {} channels from the latent, {} residual blocks each{}{}",
                     c.video ? ", one latent frame at a time with a feature cache" : " on one frame", listed(up),
                     c.blocks + 1, c.residual ? ", residual up-sampling shortcuts" : "",
                     c.patch > 1 ? fmt::format(", {}x{} unpatchify", c.patch, c.patch) : "");
}

// ---- AutoencoderDC (SANA's deep-compression autoencoder) -----------------------------------------
// autoencoder_dc.py: 2D; Decoder = conv_in (latent -> the last stage, plus the latent repeated to
// its width), stages from the last: DCUpBlock2d from the previous stage's width (interpolate: nearest
// 2x then a 3x3 conv; pixel_shuffle: a 3x3 conv to 4x the channels then depth-to-space; plus the
// repeated-input shortcut), then decoder_layers_per_block blocks: ResBlock (3x3 conv, act, 3x3 conv,
// norm, residual) or EfficientViTBlock (SanaMultiscaleLinearAttention: q/k/v linear, per
// multiscale a depthwise k x k conv and a grouped 1x1 on the 3 x inner channels, ReLU linear
// attention per head of attention_head_dim, linear out, norm, residual; then GLUMBConv: 1x1 to
// 8x, SiLU, depthwise 3x3, SiLU gate, 1x1 back, norm, residual); RMSNorm, ReLU, conv_out.

struct DcStage {
  int channels = 0, layers = 0;
  bool vit = false;
  std::vector<int> scales;  // the EfficientViT block's multiscale kernel sizes
};

struct DcConfig {
  std::vector<DcStage> encoder, decoder;
  int head = 32, latent = 32, in = 3;
  bool interpolate = false;
  double norm = kEagerRmsNorm;
};

std::vector<std::vector<int>> multiscales(const ConfigFields& f, std::string_view field, std::size_t n) {
  std::vector<std::vector<int>> out{{}, {}, {}, {5}, {5}, {5}};
  if (!f.has(field)) {
    out.resize(n);
    return out;
  }
  const json& v = f.config().at(std::string(field));
  out.clear();
  for (const json& stage : v.is_array() ? v : json::array({nullptr})) {
    if (!stage.is_array()) throw FieldError{fmt::format("{} = {}: must be an array of arrays of kernel sizes ({})", field, v.dump(), f.class_name())};
    std::vector<int> k;
    for (const json& e : stage) {
      if (!e.is_number_integer() || e.get<int>() < 1 || e.get<int>() % 2 == 0)
        throw FieldError{fmt::format("{} = {}: kernel sizes must be odd integers of at least 1 ({})", field, v.dump(), f.class_name())};
      k.push_back(e.get<int>());
    }
    out.push_back(k);
  }
  return out;
}

std::vector<DcStage> dc_stages(const ConfigFields& f, const std::string& side, std::vector<int> layers_fallback) {
  const std::vector<int> ch = channels(f, side + "_block_out_channels", {128, 256, 512, 512, 1024, 1024});
  const std::vector<int> layers = f.integers_or(side + "_layers_per_block", std::move(layers_fallback));
  same_length(f, side + "_layers_per_block", layers, ch.size());
  const std::vector<std::string> types = per_stage(f, side + "_block_types", "ResBlock", ch.size());
  const auto scales = multiscales(f, side + "_qkv_multiscales", ch.size());
  if (f.has(side + "_qkv_multiscales")) same_length(f, side + "_qkv_multiscales", scales, ch.size());
  std::vector<DcStage> out;
  for (std::size_t i = 0; i < ch.size(); ++i) {
    if (types[i] != "ResBlock" && types[i] != "EfficientViTBlock")
      throw FieldError{fmt::format("{}_block_types = {}: must be ResBlock or EfficientViTBlock ({})", side, types[i], f.class_name())};
    if (i > 0 && layers[i] == 0)
      throw FieldError{fmt::format("{}_layers_per_block = [{}]: only the first stage may have no blocks ({})", side,
                                   fmt::join(layers, ", "), f.class_name())};
    out.push_back({ch[i], layers[i], types[i] == "EfficientViTBlock", scales[i]});
  }
  return out;
}

DcConfig dc_config(const ConfigFields& f) {
  DcConfig c;
  c.encoder = dc_stages(f, "encoder", {2, 2, 2, 3, 3, 3});
  c.decoder = dc_stages(f, "decoder", {3, 3, 3, 3, 3, 3});
  c.head = positive(f, "attention_head_dim", 32);
  c.latent = positive(f, "latent_channels", 32);
  c.in = positive(f, "in_channels", 3);
  const std::string up = f.string_or("upsample_block_type", "pixel_shuffle");
  if (up != "interpolate" && up != "pixel_shuffle")
    throw FieldError{fmt::format("upsample_block_type = {}: must be interpolate or pixel_shuffle ({})", up, f.class_name())};
  c.interpolate = up == "interpolate";
  for (const std::string& n : per_stage(f, "decoder_norm_types", "rms_norm", c.decoder.size())) {
    if (n != "rms_norm" && n != "batch_norm")
      throw FieldError{fmt::format("decoder_norm_types = {}: must be rms_norm or batch_norm ({})", n, f.class_name())};
    if (n == "batch_norm") c.norm = kBatchNorm;
  }
  return c;
}

void dc_resblock(Tally& t, double c, double norm, Level at) {
  const Style s;
  conv3(t, s, c, c, at);
  t.elementwise(kActivation, c, at);
  conv3(t, s, c, c, at);
  t.elementwise(norm + kAdd, c, at);
}

void dc_vit_block(Tally& t, const DcStage& st, int head, double norm, Level at) {
  const double c = st.channels, heads = std::floor(c / head), inner = heads * head;
  const double branches = 1.0 + st.scales.size();
  t.conv(1, 1, c, 3 * inner, at);
  for (int k : st.scales) {
    t.conv(k, 1, 3 * inner, 3 * inner, at, 3 * inner);
    t.conv(1, 1, 3 * inner, 3 * inner, at, 3 * heads);
  }
  // Per head and branch: the (head_dim + 1) x head_dim state of relu(k)^T [v, 1], and its product
  // with relu(q).
  t.flops(branches * heads * 4.0 * head * (head + 1), at);
  t.elementwise(6, 3 * inner * branches, at);  // ReLUs, the heads' reshapes, v's padding, the division (approx)
  t.conv(1, 1, inner * branches, c, at);
  t.elementwise(norm + kAdd, c, at);
  const double hidden = 4 * c;  // GLUMBConv, expand_ratio 4
  t.conv(1, 1, c, 2 * hidden, at);
  t.elementwise(kActivation, 2 * hidden, at);
  t.conv(3, 1, 2 * hidden, 2 * hidden, at, 2 * hidden);
  t.elementwise(kActivation + kAdd, hidden, at);
  t.conv(1, 1, hidden, c, at);
  t.elementwise(norm + kAdd, c, at);
}

void dc_stage_blocks(Tally& t, const DcConfig& c, const DcStage& st, Level at) {
  for (int r = 0; r < st.layers; ++r) {
    if (st.vit) dc_vit_block(t, st, c.head, c.norm, at);
    else dc_resblock(t, st.channels, c.norm, at);
  }
}

// DCUpBlock2d into `at`: the conv (at the high resolution after interpolating, or at the low one to
// 4x the channels before depth-to-space: the same FLOPs), and the shortcut's repeat, depth-to-space
// and add.
void dc_up(Tally& t, const DcConfig& c, double in, double out, Level at, bool shortcut) {
  if (c.interpolate) {
    upsample(t, in, at, false);
    t.conv(3, 1, in, out, at);
  } else {
    t.conv(3, 1, in, 4 * out, {at.pixels / 4, at.frames});
    t.elementwise(2, out, at);
  }
  if (shortcut) t.elementwise(4 + kAdd, out, at);
}

Level dc_decode(Tally& t, const DcConfig& c) {
  const std::vector<DcStage>& st = c.decoder;
  Level at;
  t.conv(3, 1, c.latent, st.back().channels, at);
  t.elementwise(2 + kAdd, st.back().channels, at);  // in_shortcut: the latent repeated to the width, added
  for (std::size_t i = st.size(); i-- > 0;) {
    if (st[i].layers == 0) continue;
    if (i + 1 < st.size()) {
      at = at.up(true, false);
      dc_up(t, c, st[i + 1].channels, st[i].channels, at, true);
    }
    dc_stage_blocks(t, c, st[i], at);
  }
  const double last = st.front().layers > 0 ? st.front().channels : st[1].channels;
  t.elementwise(kEagerRmsNorm + kActivation, last, at);
  if (st.front().layers > 0) {
    t.conv(3, 1, last, c.in, at);
  } else {
    at = at.up(true, false);
    dc_up(t, c, last, c.in, at, false);
  }
  return at;
}

void dc_encode(Tally& t, const DcConfig& c) {
  const std::vector<DcStage>& st = c.encoder;
  Level at;
  if (st.front().layers > 0) {
    t.conv(3, 1, c.in, st.front().channels, at);
  } else {
    at = at.down(true, false);
    t.conv(3, 1, c.in, st[1].channels, at);
  }
  for (std::size_t i = 0; i < st.size(); ++i) {
    dc_stage_blocks(t, c, st[i], at);
    if (i + 1 < st.size() && st[i].layers > 0) {
      at = at.down(true, false);
      t.conv(3, 1, st[i].channels, st[i + 1].channels, at);
    }
  }
  t.conv(3, 1, st.back().channels, c.latent, at);
}

std::string dc_structure(const DcConfig& c) {
  std::vector<std::string> stages;
  for (std::size_t i = c.decoder.size(); i-- > 0;)
    stages.push_back(fmt::format("{} {}x{}", c.decoder[i].channels, c.decoder[i].vit ? "EfficientViT" : "ResBlock",
                                 c.decoder[i].layers));
  return fmt::format("2D; up stages from the latent: {}; {} upsampling", fmt::join(stages, ", "),
                     c.interpolate ? "interpolate" : "pixel-shuffle");
}

// ---- putting a class together --------------------------------------------------------------------

// The decoder's tally (per output pixel per frame, ended at `out`) and the encoder's.
VaeCost costed(std::string cls, std::string structure, Tally decoder, Level out, const Tally& encoder) {
  decoder.per_output(out);
  VaeCost v;
  v.class_name = std::move(cls);
  v.structure = std::move(structure);
  v.spatial = static_cast<int>(std::lround(std::sqrt(out.pixels)));
  v.temporal = static_cast<int>(std::lround(out.frames));
  v.decode_gflop_per_pixel = decoder.flops() / 1e9;
  v.decode_traffic_bytes_per_pixel = decoder.bytes();
  v.decode_channels_per_pixel = decoder.widest();
  v.decode_bytes_per_pixel = kLiveTensors * decoder.widest() * kBytesPerElement;
  v.encode_gflop_per_pixel = encoder.flops() / 1e9;
  v.decoder_convs = decoder.convs();
  v.halo_channels = decoder.halo();
  return v;
}

template <class Config>
VaeCost derive(const std::string& cls, const Config& c, Level (*decode)(Tally&, const Config&),
               void (*encode)(Tally&, const Config&), std::string structure) {
  Tally d, e;
  const Level out = decode(d, c);
  encode(e, c);
  return costed(cls, std::move(structure), d, out, e);
}

}  // namespace

std::optional<VaeCost> vae_cost(const json& j) {
  const auto it = j.find("_class_name");
  const std::string cls = it != j.end() && it->is_string() ? it->get<std::string>() : "";
  const ConfigFields f(j, cls);
  if (cls == "AutoencoderKL" || cls == "AutoencoderKLFlux2") {
    const KlConfig c = kl_config(f);
    VaeCost v = derive(cls, c, kl_decode, kl_encode, kl_structure(c));
    v.mid_block_attention = c.attention;
    v.sample_size = f.integer_or("sample_size", 0);
    return v;
  }
  if (cls == "AutoencoderKLCogVideoX") {
    const CogConfig c = cog_config(f);
    return derive(cls, c, cog_decode, cog_encode, cog_structure(c));
  }
  if (cls == "AutoencoderKLHunyuanVideo") {
    const HunyuanConfig c = hunyuan_config(f);
    return derive(cls, c, hunyuan_decode, hunyuan_encode, hunyuan_structure(c));
  }
  if (cls == "AutoencoderKLWan" || cls == "AutoencoderKLQwenImage") {
    const WanConfig c = wan_config(f, cls == "AutoencoderKLWan");
    return derive(cls, c, wan_decode, wan_encode, wan_structure(c));
  }
  if (cls == "AutoencoderDC") {
    const DcConfig c = dc_config(f);
    return derive(cls, c, dc_decode, dc_encode, dc_structure(c));
  }
  return std::nullopt;
}

void apply_vae_cost(const VaeCost& cost, VaeProfile& vae) {
  vae.spatial = cost.spatial;
  vae.temporal = cost.temporal;
  vae.decode_gflop_per_pixel = cost.decode_gflop_per_pixel;
  vae.decode_bytes_per_pixel = cost.decode_bytes_per_pixel;
  vae.decode_traffic_bytes_per_pixel = cost.decode_traffic_bytes_per_pixel;
  vae.encode_gflop_per_pixel = cost.encode_gflop_per_pixel;
  vae.decoder_convs = cost.decoder_convs;
  vae.halo_channels = cost.halo_channels;
  vae.mid_block_attention = cost.mid_block_attention;
  if (cost.sample_size > 0) vae.tile_sample_size = cost.sample_size;
  vae.class_name = cost.class_name;
  vae.structure = cost.structure;
}

}  // namespace cpplan::diffusers
