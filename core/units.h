#pragma once
// Unit-carrying aliases: every quantity in cpplan names its unit in its type or its name.

namespace cpplan {

using Bytes = double;         // bytes (double: sizes of 1e12 and fractions of a shard)
using Flops = double;         // floating-point operations (multiply-add = 2)
using Milliseconds = double;  // ms
using Microseconds = double;  // us
using GBps = double;          // 1e9 bytes per second
using TFlopsPerSec = double;  // 1e12 FLOP per second

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// time in ms to move `bytes` at `gbps` (1e9 B/s)
inline constexpr Milliseconds transfer_ms(Bytes bytes, GBps gbps) { return bytes / (gbps * 1e9) * 1e3; }
// time in ms to execute `flops` at `tflops` (1e12 FLOP/s)
inline constexpr Milliseconds compute_ms(Flops flops, TFlopsPerSec tflops) { return flops / (tflops * 1e12) * 1e3; }

}  // namespace cpplan
