#pragma once
// What a VAE's decoder and encoder cost, derived from the structure its diffusers config describes
// (vae/config.json): per output pixel per frame, the convolutions' FLOPs at each stage's spatial and
// temporal resolution, the memory-bound traffic of the norms, activations, residual adds and
// upsampling, the widest live activation and the spatial convolutions a patch-parallel decode
// exchanges halos for. docs/cost-model.md, "Per image". The structures are written from diffusers'
// autoencoder sources (autoencoder_kl*.py, autoencoder_dc.py, vae.py); each builder says what it
// assumed.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/model.h"

namespace cpplan::diffusers {

struct VaeCost {
  std::string class_name;           // the config's _class_name
  std::string structure;            // what was read, one line ("2D; up stages 512,512,512,256 ...")
  int spatial = 8;                  // output pixels per latent pixel, per side
  int temporal = 1;                 // output frames per latent frame (video VAEs)
  double decode_gflop_per_pixel = 0;          // decoder FLOPs per output pixel per frame, GFLOP
  double decode_traffic_bytes_per_pixel = 0;  // its memory-bound bytes per output pixel per frame (bf16)
  double decode_channels_per_pixel = 0;       // its widest activation, channels per output pixel-frame
  double decode_bytes_per_pixel = 0;          // three live bf16 tensors of that width
  double encode_gflop_per_pixel = 0;          // encoder FLOPs per input pixel per frame, GFLOP
  int decoder_convs = 0;            // the decoder's convolutions with a spatial kernel (> 1 x 1)
  // Their input channels times the rows each exchanges per neighbour, times the share of the
  // output's width and frames each runs at, averaged over them: one halo = 2 x width x frames x
  // halo_channels elements.
  double halo_channels = 0;
  bool mid_block_attention = false; // a materialised single-head attention over the latent (AutoencoderKL)
  int sample_size = 0;              // the tile side of enable_tiling, pixels (0: not in the config)
};

// The cost of the class the config names; nullopt for a class whose structure cpplan does not
// derive. A missing, mistyped or out-of-range field throws detail::FieldError naming it.
std::optional<VaeCost> vae_cost(const nlohmann::json& config);

// The classes vae_cost derives, for messages.
inline constexpr std::string_view kDerivedVaeClasses =
    "AutoencoderKL, AutoencoderKLFlux2, AutoencoderKLCogVideoX, AutoencoderKLHunyuanVideo, AutoencoderKLWan, "
    "AutoencoderKLQwenImage, AutoencoderDC";

// Writes the derived compression, costs, class and structure into `vae`; the mid-block attention
// of the classes that materialise it (AutoencoderKL), the tile side where the config gives one.
void apply_vae_cost(const VaeCost& cost, VaeProfile& vae);

}  // namespace cpplan::diffusers
