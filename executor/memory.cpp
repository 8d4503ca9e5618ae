#include "executor/memory.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <string>
#include <unordered_map>

namespace cpplan::executor {

namespace {

std::atomic<int64_t> g_limit{0}, g_in_use{0}, g_peak{0};

// What the wrapped allocator gave for one allocation, by its data pointer: its own DataPtr (whose
// deleter frees the memory) and the bytes counted. Our DataPtr's context is the data pointer
// itself, as raw_allocate() requires (LibTorch's bf16 kernels take scratch memory through it).
struct Held {
  c10::DataPtr inner;
  int64_t bytes;
};
std::mutex g_held_mu;
std::unordered_map<void*, Held>& held_allocations() {
  static auto* held = new std::unordered_map<void*, Held>;  // outlives every tensor
  return *held;
}

// The allocator LibTorch uses for CPU tensors, counted and capped; the wrapped allocator does
// the work.
class CappedAllocator final : public c10::Allocator {
 public:
  explicit CappedAllocator(c10::Allocator* inner) : inner_(inner) {}

  // LibTorch 2.x made allocate() non-const and added copy_data().
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    const auto bytes = static_cast<int64_t>(n);
    const int64_t now = g_in_use.fetch_add(bytes) + bytes;
    const int64_t limit = g_limit.load();
    if (limit > 0 && now > limit) {
      g_in_use.fetch_sub(bytes);
      throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                  "out of memory: tried to allocate " + std::to_string(bytes) + " bytes (" +
                                      std::to_string(now - bytes) + " bytes in use, limit " + std::to_string(limit) +
                                      " bytes)");
    }
    for (int64_t peak = g_peak.load(); now > peak && !g_peak.compare_exchange_weak(peak, now);) {
    }
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    if (data == nullptr) {  // nothing to hold (0 bytes)
      g_in_use.fetch_sub(bytes);
      return inner;
    }
    {
      std::lock_guard<std::mutex> lock(g_held_mu);
      held_allocations().emplace(data, Held{std::move(inner), bytes});
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
#if TORCH_VERSION_MAJOR >= 2
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#endif

 private:
  static void release(void* data) {
    std::unordered_map<void*, Held>::node_type node;
    {
      std::lock_guard<std::mutex> lock(g_held_mu);
      node = held_allocations().extract(data);
    }
    if (node.empty()) return;
    g_in_use.fetch_sub(node.mapped().bytes);
  }  // the node, and with it the wrapped allocator's DataPtr, freed here
  c10::Allocator* inner_;
};

double unit_bytes(const std::string& unit) {
  if (unit == "KiB" || unit == "KB") return 1024.0;
  if (unit == "MiB" || unit == "MB") return 1024.0 * 1024.0;
  if (unit == "GiB" || unit == "GB") return 1024.0 * 1024.0 * 1024.0;
  if (unit == "TiB" || unit == "TB") return 1024.0 * 1024.0 * 1024.0 * 1024.0;
  return 1.0;
}

}  // namespace

std::optional<int64_t> oom_bytes(std::string_view what) {
  static const std::regex exact(R"((?:tried|Tried) to allocate (\d+) bytes)");
  static const std::regex cuda(R"(out of memory\. Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB))");
  const std::string text(what);
  std::smatch m;
  if (std::regex_search(text, m, exact) &&
      (text.find("out of memory") != std::string::npos || text.find("not enough memory") != std::string::npos ||
       text.find("can't allocate memory") != std::string::npos))
    return std::stoll(m[1]);
  if (std::regex_search(text, m, cuda)) return std::llround(std::stod(m[1]) * unit_bytes(m[2]));
  return std::nullopt;
}

void count_cpu_tensors() {
  static CappedAllocator* capped = [] {
    auto* a = new CappedAllocator(c10::GetCPUAllocator());  // lives as long as the tensors it made
    c10::SetCPUAllocator(a, /*priority=*/100);
    return a;
  }();
  (void)capped;
}

void limit_cpu_memory(int64_t limit) {
  count_cpu_tensors();
  g_limit.store(limit);
}

int64_t cpu_tensor_bytes() { return g_in_use.load(); }
int64_t peak_cpu_tensor_bytes() { return g_peak.load(); }
void reset_peak_cpu_tensor_bytes() { g_peak.store(g_in_use.load()); }

}  // namespace cpplan::executor
