#include "core/kernels.h"

#include <algorithm>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "core/hardware.h"
#include "core/toml_reader.h"

namespace cpplan {

namespace {
constexpr std::string_view kElementwiseNames[kElementwiseCount] = {"norm_modulation", "qk_norm_rope",
                                                                   "residual_activation"};
}  // namespace

std::string_view to_string(Resource r) {
  constexpr std::string_view n[] = {"tensor cores", "vector units", "exp units", "HBM", "links", "host"};
  return n[static_cast<int>(r)];
}

std::string_view to_string(Elementwise e) { return kElementwiseNames[static_cast<int>(e)]; }

std::optional<Elementwise> elementwise_from_string(std::string_view s) {
  for (int i = 0; i < kElementwiseCount; ++i)
    if (kElementwiseNames[i] == s) return static_cast<Elementwise>(i);
  return std::nullopt;
}

bool DeviceRange::matches(DeviceFamily f, int cc) const {
  return f == family && cc >= min_cc && (max_cc == 0 || cc <= max_cc);
}

std::string describe(const DeviceRange& r) {
  const bool cuda = r.family == DeviceFamily::kCuda, rocm = r.family == DeviceFamily::kRocm;
  if (!cuda && !rocm) return std::string(to_string(r.family));
  const std::string unit = cuda ? "sm" : "gfx", family = cuda ? "CUDA " : "ROCm ";
  auto cc = [&](int v) { return unit + std::to_string(v); };
  if (r.min_cc == 0 && r.max_cc == 0) return cuda ? "CUDA" : "ROCm";
  if (r.max_cc == 0) return family + cc(r.min_cc) + " or newer";
  if (r.min_cc == r.max_cc) return family + cc(r.min_cc);
  return family + cc(r.min_cc) + " to " + cc(r.max_cc);
}

double KernelTable::elementwise_traffic(FusedSet fused) const {
  double moved = 0, all_fused = 0;
  for (int i = 0; i < kElementwiseCount; ++i) {
    const ElementwiseClass& c = elementwise[i];
    moved += fused.has(static_cast<Elementwise>(i)) ? c.fused_bytes : c.eager_bytes;
    all_fused += c.fused_bytes;
  }
  return all_fused > 0 ? moved / all_fused : 1;
}

double KernelTable::unfused_excess_share(FusedSet fused) const {
  double left = 0, all = 0;
  for (int i = 0; i < kElementwiseCount; ++i) {
    const double excess = elementwise[i].eager_bytes - elementwise[i].fused_bytes;
    all += excess;
    if (!fused.has(static_cast<Elementwise>(i))) left += excess;
  }
  return all > 0 ? left / all : 1;
}

double KernelTable::ops_saved(FusedSet fused) const {
  double saved = 0;
  for (int i = 0; i < kElementwiseCount; ++i)
    if (fused.has(static_cast<Elementwise>(i))) saved += elementwise[i].eager_ops - elementwise[i].fused_ops;
  return saved;
}

bool runs_on(const KernelTable& t, AttentionBackend b, DeviceFamily f, int cc) {
  for (const DeviceRange& r : t.kernel(b).runs_on)
    if (r.matches(f, cc)) return true;
  return false;
}

double AttentionKernel::padded_head_dim(double head_dim) const {
  for (int d : head_dims)
    if (d >= head_dim) return d;
  return head_dim;  // beyond the largest: as it is (the caller's shape rules refuse what no kernel runs)
}

namespace detail {
void read_device_range(Reader& r, DeviceRange& range) {
  r.only({"family", "min_cc", "max_cc"});
  r.choice("family", range.family, {"cuda", "tpu", "neuron", "rocm"});
  r.integer("min_cc", range.min_cc, 0, 10000, false);
  r.integer("max_cc", range.max_cc, 0, 10000, false);
  if (r.ok() && range.max_cc > 0 && range.max_cc < range.min_cc)
    r.fail("max_cc", std::to_string(range.max_cc), fmt::format("must be at least min_cc = {}", range.min_cc));
}
}  // namespace detail

namespace {
using detail::Reader;

// head_dims: an ascending array of head dimensions in [1, 4096]; absent: any.
void read_head_dims(Reader& r, const toml::table& t, std::vector<int>& out) {
  const toml::node* n = t.get("head_dims");
  if (!n) return;
  const toml::array* a = n->as_array();
  for (std::size_t i = 0; a && i < a->size(); ++i) {
    const auto v = (*a)[i].value<int64_t>();
    if (!(*a)[i].is_integer() || !v || *v < 1 || *v > 4096 || (!out.empty() && *v <= out.back())) break;
    out.push_back(static_cast<int>(*v));
  }
  if (!a || out.size() != a->size())
    r.fail("head_dims", "[...]", "must be an ascending array of head dimensions in [1, 4096]");
}


void read_attention(Reader& a, KernelTable& t) {
  a.number("half_tokens", t.attention_half_tokens, 0, 1e7);
  for (int i = 0; i < kAttentionBackendCount && a.ok(); ++i) {
    const std::string name(to_string(static_cast<AttentionBackend>(i)));
    const toml::table* k = a.table(name);
    if (!k || !a.ok()) return;
    Reader kr = a.sub(*k, name);
    AttentionKernel& out = t.attention[i];
    kr.only({"title", "tensor", "softmax", "mma", "head_dims", "runs_on", "source"});
    read_head_dims(kr, *k, out.head_dims);
    kr.string("title", out.title);
    kr.number("tensor", out.tensor, 0, 1, true, true);
    enum class Softmax { kSerial, kOverlapped } s = Softmax::kSerial;
    kr.choice("softmax", s, {"serial", "overlapped"});
    out.overlapped = s == Softmax::kOverlapped;
    enum class Mma { kAsync, kSync } m = Mma::kAsync;
    kr.choice("mma", m, {"async", "sync"}, false);
    out.sync_mma = m == Mma::kSync;
    kr.string("source", out.source);
    out.runs_on.clear();
    kr.tables("runs_on", true, [&](Reader& rr) {
      DeviceRange range;
      read_device_range(rr, range);
      out.runs_on.push_back(range);
    });
  }
}

Result<KernelTable> kernels_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  KernelTable t;
  t.source = path;
  r.only({"softmax", "attention", "elementwise"});
  if (const auto* s = r.table("softmax"); s && r.ok()) {
    Reader sr = r.sub(*s, "softmax");
    sr.only({"exp", "vector", "vector_ops"});
    sr.number("exp", t.exp, 0, 1, true, true);
    sr.number("vector", t.vector, 0, 1, true, true);
    sr.number("vector_ops", t.softmax_vector_ops, 0, 1000);
  }
  if (const auto* a = r.table("attention"); a && r.ok()) {
    Reader ar = r.sub(*a, "attention");
    std::vector<std::string> names = {"half_tokens"};
    for (int i = 0; i < kAttentionBackendCount; ++i) names.emplace_back(to_string(static_cast<AttentionBackend>(i)));
    for (const auto& [key, node] : *a)
      if (std::find(names.begin(), names.end(), std::string(key.str())) == names.end())
        ar.fail(key.str(), "...", fmt::format("unknown attention kernel; one of {}", attention_backend_choices()));
    if (ar.ok()) read_attention(ar, t);
  }
  if (const auto* e = r.table("elementwise"); e && r.ok()) {
    Reader er = r.sub(*e, "elementwise");
    er.only({"norm_modulation", "qk_norm_rope", "residual_activation"});
    for (int i = 0; i < kElementwiseCount && er.ok(); ++i) {
      const std::string name(kElementwiseNames[i]);
      const toml::table* k = er.table(name);
      if (!k || !er.ok()) break;
      Reader kr = er.sub(*k, name);
      ElementwiseClass& c = t.elementwise[i];
      kr.only({"title", "eager_bytes", "fused_bytes", "eager_ops", "fused_ops"});
      kr.string("title", c.title);
      kr.number("eager_bytes", c.eager_bytes, 0, 1e6);
      kr.number("fused_bytes", c.fused_bytes, 0, 1e6);
      kr.number("eager_ops", c.eager_ops, 0, 1e6);
      kr.number("fused_ops", c.fused_ops, 0, 1e6);
      if (kr.ok() && c.fused_bytes > c.eager_bytes)
        kr.fail("fused_bytes", fmt::format("{}", c.fused_bytes), "must not exceed eager_bytes (fusing moves less)");
    }
  }
  if (!r.ok()) return Error{error};
  return t;
}
}  // namespace

AttentionRoofline attention_roofline(const HardwareProfile& hw, AttentionBackend b, double head_dim) {
  const KernelTable& k = hw.kernels;
  const AttentionKernel& kernel = k.kernel(b);
  AttentionRoofline out;
  // Per score of a head `head_dim` wide: 4 head_dim matmul FLOPs (QK^T and P.V).
  const double flops = 4.0 * (head_dim > 0 ? kernel.padded_head_dim(head_dim) : 128);
  const TFlopsPerSec peak = kernel.sync_mma ? hw.sync_mma_ceiling() : hw.bf16_tflops;
  out.tensor_ps = peak > 0 && kernel.tensor > 0 ? flops / (peak * kernel.tensor) : 0;
  const ResourcePeaks& p = hw.peaks;
  const double exp_ps = p.exp_tera_per_s > 0 && k.exp > 0 ? 1 / (p.exp_tera_per_s * k.exp) : 0;
  const double vector_ps = p.vector_tflops > 0 && k.vector > 0 ? k.softmax_vector_ops / (p.vector_tflops * k.vector) : 0;
  out.softmax_ps = exp_ps + vector_ps;
  out.softmax_unit = exp_ps >= vector_ps ? Resource::kExp : Resource::kVector;
  out.overlapped = kernel.overlapped;
  return out;
}

double AttentionRoofline::ps_per_score() const {
  return overlapped ? std::max(tensor_ps, softmax_ps) : tensor_ps + softmax_ps;
}

Resource AttentionRoofline::binding() const { return softmax_ps > tensor_ps ? softmax_unit : Resource::kTensor; }

void derive_attention_efficiency(HardwareProfile& hw) {
  constexpr double kHeadDim = 128;
  for (int i = 0; i < kProfiledAttentionBackends; ++i) {
    const double ps = attention_roofline(hw, static_cast<AttentionBackend>(i), kHeadDim).ps_per_score();
    if (ps > 0 && hw.bf16_tflops > 0) hw.attention_efficiency[i] = std::min(1.0, 4 * kHeadDim / (hw.bf16_tflops * ps));
  }
}

Result<KernelTable> load_kernel_table(const std::string& path) {
  auto parsed = detail::parse_toml(path);
  if (!parsed) return parsed.error();
  return kernels_from_toml(*parsed, path);
}

Result<KernelTable> parse_kernel_table(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return kernels_from_toml(*parsed, path);
}

}  // namespace cpplan
