#include "core/precision.h"

#include <fmt/format.h>

#include "core/hardware.h"

namespace cpplan {

namespace {

using W = WeightFormat;
using A = ActivationScaling;

struct Choice {
  Precision precision;
  std::string_view name;
  std::string_view words;
};

// The formats the frameworks ship (shared/reference/frameworks-runtime.md §1.4, 2.4, 3.4, 4.4, 5.4).
constexpr Choice kChoices[] = {
    {{W::kBf16, A::kNone}, "bf16", "BF16 weights and activations (the checkpoint as shipped)"},
    {{W::kFp8, A::kDynamicTensor}, "fp8",
     "FP8 e4m3 weights and activations, activations scaled per tensor at run time"},
    {{W::kFp8, A::kDynamicRow}, "fp8-row", "FP8 e4m3 weights and activations, activations scaled per row at run time"},
    {{W::kFp8, A::kStatic}, "fp8-static", "FP8 e4m3 weights and activations, activation scales fixed at calibration"},
    {{W::kFp8, A::kNone}, "fp8-weight-only", "FP8 e4m3 weights dequantized in a BF16 GEMM"},
    {{W::kInt8, A::kDynamicRow}, "int8",
     "INT8 weights and activations, weights scaled per output channel, activations per row (token) at run time"},
    {{W::kInt8, A::kNone}, "int8-weight-only", "INT8 weights dequantized in a BF16 GEMM"},
    {{W::kNvfp4, A::kDynamicRow}, "nvfp4",
     "NVFP4 weights and activations (e2m1, one e4m3 scale per 16 values), activations quantized at run time"},
    {{W::kMxfp4, A::kDynamicRow}, "mxfp4",
     "MXFP4 weights and activations (e2m1, one e8m0 scale per 32 values), activations quantized at run time"},
};

const Choice& choice_of(const Precision& p) {
  for (const Choice& c : kChoices)
    if (c.precision == p) return c;
  return kChoices[0];
}

// Where a format's GEMM runs. W8A8 FP8 needs FP8 tensor cores: CUDA sm89 (Ada) and newer, ROCm
// gfx942 (MI300) and newer. W8A8 INT8 needs INT8 tensor cores: CUDA sm75 (Turing) and newer, ROCm
// gfx908 (CDNA's INT8 MFMA) and newer; a GPU whose datasheet publishes no INT8 tensor peak
// (Blackwell Ultra cuts INT8) has none to price it on. NVFP4 needs sm100 (Blackwell) tensor cores;
// MXFP4 Blackwell's or gfx950's (MI355X). Weight-only formats dequantize inside a BF16 GEMM
// (Marlin, torchao), which the frameworks ship for sm80 and newer (frameworks-runtime.md:
// vLLM-Omni's Marlin FP8 on SM75-86, cache-dit's int8_weight_only >= sm80).
struct Support {
  int cuda_min = 0;  // 0: not on CUDA
  int rocm_min = 0;  // 0: not on ROCm
};

Support support_of(const Precision& p) {
  if (!p.low_precision_math()) return {80, 0};
  switch (p.weights) {
    case W::kFp8: return {89, 942};
    case W::kInt8: return {75, 908};
    case W::kNvfp4: return {100, 0};
    case W::kMxfp4: return {100, 950};
    default: return {80, 0};
  }
}

// The tensor unit's format in a datasheet's words.
std::string_view format_name(WeightFormat f) {
  switch (f) {
    case W::kFp8: return "FP8";
    case W::kInt8: return "INT8";
    case W::kNvfp4:
    case W::kMxfp4: return "FP4";
    default: return "BF16";
  }
}

std::string where(const Support& s) {
  std::string cuda = s.cuda_min ? fmt::format("CUDA sm{} or newer", s.cuda_min) : "";
  std::string rocm = s.rocm_min ? fmt::format("ROCm gfx{} or newer", s.rocm_min) : "";
  if (cuda.empty() || rocm.empty()) return cuda + rocm;
  return cuda + " and " + rocm;
}

}  // namespace

const std::vector<Precision>& precision_choices() {
  static const std::vector<Precision> all = [] {
    std::vector<Precision> v;
    for (const Choice& c : kChoices) v.push_back(c.precision);
    return v;
  }();
  return all;
}

std::string to_string(const Precision& p) { return std::string(choice_of(p).name); }
std::string describe(const Precision& p) { return std::string(choice_of(p).words); }

Result<Precision> parse_precision(std::string_view name) {
  std::string names;
  for (const Choice& c : kChoices) {
    if (c.name == name) return c.precision;
    names += (names.empty() ? "" : " | ") + std::string(c.name);
  }
  return Error{fmt::format("--dtype = {}: must be {}", name, names)};
}

Bytes weight_bytes(WeightFormat f) {
  switch (f) {
    case W::kBf16: return 2;
    case W::kFp8:
    case W::kInt8: return 1;
    case W::kNvfp4: return 0.5 + 1.0 / 16;  // e2m1 values, one e4m3 scale per 16
    case W::kMxfp4: return 0.5 + 1.0 / 32;  // e2m1 values, one e8m0 scale per 32
  }
  return 2;
}

Bytes activation_bytes(const Precision& p) { return p.low_precision_math() ? weight_bytes(p.weights) : 2; }

TFlopsPerSec gemm_peak_tflops(const HardwareProfile& hw, const Precision& p) {
  if (!p.low_precision_math()) return hw.bf16_tflops;
  switch (p.weights) {
    case W::kFp8: return hw.peaks.fp8_tflops;
    case W::kInt8: return hw.peaks.int8_tops;
    default: return hw.peaks.fp4_tflops;
  }
}

std::optional<std::string> precision_refusal(const HardwareProfile& hw, const Precision& p) {
  if (!p.quantized()) return std::nullopt;
  const Support s = support_of(p);
  const int cc = hw.peaks.compute_capability;
  const bool runs = (hw.family == DeviceFamily::kCuda && s.cuda_min && cc >= s.cuda_min) ||
                    (hw.family == DeviceFamily::kRocm && s.rocm_min && cc >= s.rocm_min);
  if (runs && gemm_peak_tflops(hw, p) > 0) return std::nullopt;
  const std::string gpu = hw.family == DeviceFamily::kCuda   ? fmt::format("CUDA sm{}", cc)
                          : hw.family == DeviceFamily::kRocm ? fmt::format("ROCm gfx{}", cc)
                                                             : std::string(to_string(hw.family));
  if (runs)  // the architecture has the unit, this GPU's datasheet no peak for it (B300's INT8)
    return fmt::format("--dtype = {}: {} GEMMs do not run on {} ({}, {}; its datasheet publishes no {} tensor peak)",
                       to_string(p), to_string(p), hw.name, hw.description, gpu, format_name(p.weights));
  return fmt::format("--dtype = {}: {} GEMMs do not run on {} ({}, {}; they run on {})", to_string(p), to_string(p),
                     hw.name, hw.description, gpu, where(s));
}

}  // namespace cpplan
