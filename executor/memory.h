#pragma once
// Memory of a rank: out-of-memory failures recognized in any allocator's words, and an optional
// cap on the tensor memory of a CPU rank (what a GPU's capacity is to a CUDA rank).

#include <cstdint>
#include <optional>
#include <string_view>

namespace cpplan::executor {

// The bytes one failed allocation asked for, read from the message of LibTorch's CPU allocator
// ("you tried to allocate N bytes"), CUDA's caching allocator ("Tried to allocate 2.00 GiB") or
// cpplan's own cap ("out of memory: tried to allocate N bytes"); nullopt if `what` is no
// out-of-memory error.
std::optional<int64_t> oom_bytes(std::string_view what);

// Counts the bytes this process holds in CPU tensors from now on (cpu_tensor_bytes()): LibTorch's
// CPU allocator is wrapped once, uncapped until limit_cpu_memory(); later calls do nothing. What
// a CPU rank's phases measure, as the caching allocator's allocated bytes are a GPU rank's.
void count_cpu_tensors();

// Caps the bytes this process holds in CPU tensors at `limit`: LibTorch's CPU allocator is wrapped
// so that an allocation that would pass it throws c10::OutOfMemoryError, "out of memory: tried to
// allocate N bytes (U bytes in use, limit L bytes)". Call once, before the first tensor that
// counts; a later call changes the limit. Tensors allocated before the first call are not counted.
void limit_cpu_memory(int64_t limit);

// Bytes in CPU tensors now and at most since counting began or the last reset (0 when
// count_cpu_tensors() and limit_cpu_memory() were never called).
int64_t cpu_tensor_bytes();
int64_t peak_cpu_tensor_bytes();
// Starts the peak over from the bytes held now.
void reset_peak_cpu_tensor_bytes();

}  // namespace cpplan::executor
