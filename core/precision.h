#pragma once
// The number format of a DiT's linear layers (--dtype): how its weights are stored and how its
// GEMMs run. bf16 is the checkpoint as shipped; the others are the quantized paths the frameworks
// ship (shared/reference/frameworks-runtime.md: xDiT --use_fp8_gemms and --use_int8_gemms, vLLM-Omni
// --quantization fp8 / int8, cache-dit's QuantizeConfig, SGLang's FP8/NVFP4 checkpoints, diffusers'
// TorchAoConfig). The cost model prices a quantized GEMM on the format's tensor peak
// (ResourcePeaks), its weights at the format's bytes and its activations' quantization as
// memory-bound passes; which layers stay bf16 is the framework's (FrameworkQuantization).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/units.h"

namespace cpplan {

struct HardwareProfile;  // core/hardware.h

// The weights' format in the quantized linear layers.
enum class WeightFormat { kBf16, kFp8, kInt8, kNvfp4, kMxfp4 };
// How the GEMM's activations are quantized: not at all (bf16 GEMMs: bf16 weights, or weight-only
// formats dequantized inside the GEMM), per tensor or per row at run time, or with scales fixed at
// calibration (static).
enum class ActivationScaling { kNone, kDynamicTensor, kDynamicRow, kStatic };

struct Precision {
  WeightFormat weights = WeightFormat::kBf16;
  ActivationScaling activations = ActivationScaling::kNone;
  bool quantized() const { return weights != WeightFormat::kBf16; }
  // The GEMM runs on the format's tensor peak (W8A8, W4A4); else on the BF16 peak.
  bool low_precision_math() const { return quantized() && activations != ActivationScaling::kNone; }
  bool operator==(const Precision& o) const { return weights == o.weights && activations == o.activations; }
};

// Every --dtype choice, in the order `cpplan --help` and --dtype any list them.
const std::vector<Precision>& precision_choices();
// "bf16", "fp8" (dynamic per tensor), "fp8-row", "fp8-static", "fp8-weight-only", "int8" (W8A8,
// activations scaled per row at run time), "int8-weight-only", "nvfp4", "mxfp4".
std::string to_string(const Precision& p);
// In words, for --explain: "FP8 e4m3 weights and activations (activations scaled per tensor at run time)".
std::string describe(const Precision& p);
// One of the names to_string gives; else an error naming the value and the choices.
Result<Precision> parse_precision(std::string_view name);

// Bytes one weight takes in the format, its block scales included: NVFP4 one e4m3 scale per 16
// values, MXFP4 one e8m0 scale per 32 (OCP MX spec v1.0); per-tensor and per-row scales are
// negligible next to the weights.
Bytes weight_bytes(WeightFormat f);
// Bytes one activation element takes once quantized (the GEMM's input); 2 for bf16. A per-row scale
// (fp8-row, int8: one per token) adds 4 bytes per row of k elements, under 0.1% for k >= 3072.
// Likewise int8's per-output-channel weight scales: n against k x n weights.
Bytes activation_bytes(const Precision& p);
// The tensor peak the format's GEMM runs at on `hw` (TFLOPS); 0: the GPU has no such unit.
TFlopsPerSec gemm_peak_tflops(const HardwareProfile& hw, const Precision& p);

// Why `hw` cannot run the format (no FP8 tensor cores before sm89, NVFP4 only on sm100+, no INT8
// tensor peak in the datasheet, ...), in one line naming both; nullopt: it runs it.
std::optional<std::string> precision_refusal(const HardwareProfile& hw, const Precision& p);

}  // namespace cpplan
