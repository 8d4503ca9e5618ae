#include "core/profiles.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <initializer_list>
#include <tuple>
#include <toml++/toml.h>

#include "core/diffusers_classes.h"
#include "core/pipeline_components.h"
#include "core/text.h"
#include "core/toml_reader.h"
#include "core/vae_cost.h"

namespace cpplan {

namespace fs = std::filesystem;

namespace {

using detail::parse_toml;
using detail::read_name;
using detail::Reader;

constexpr long long kMaxInt = 1LL << 30;
constexpr double kMaxParams = 1e13;

Bytes dtype_bytes(Reader& r, std::string_view key, Bytes fallback) {
  enum class D { kBf16, kFp16, kFp32, kFp8 };
  D d = fallback == 4 ? D::kFp32 : (fallback == 1 ? D::kFp8 : D::kBf16);
  r.choice(key, d, {"bf16", "fp16", "fp32", "fp8"}, false);
  constexpr Bytes kBytes[] = {2, 2, 4, 1};
  return kBytes[static_cast<int>(d)];
}

void read_text_encoder(Reader& r, Component& c) {
  r.only({"name", "params", "dtype", "layers", "hidden", "tokens"});
  r.string("name", c.name);
  r.number("params", c.params, 0, kMaxParams, true, true);
  c.bytes_per_param = dtype_bytes(r, "dtype", 2);
  r.integer("layers", c.layers, 1, 10000, false);
  r.integer("hidden", c.hidden, 1, 1 << 20, false);
  r.integer("tokens", c.tokens, 1, 1 << 20, false);
  if (r.ok() && (c.layers > 0) != (c.hidden > 0))
    r.fail(c.layers > 0 ? "hidden" : "layers", "(missing)", "layers and hidden go together");
}

}  // namespace

namespace {
// Reads [transformer]: attention shape, FFN, weights, patching and the block groups.
void read_transformer(Reader& tr, ModelProfile& m) {
  tr.only({"heads", "head_dim", "ffn_hidden", "ffn", "qk_norm", "rope", "modulation", "params", "dtype", "patch_spatial",
           "patch_temporal", "in_channels", "blocks", "attention", "experts", "active_experts", "shared_experts",
           "text_hidden", "text_ffn_hidden", "ffn_temporal_taps", "side_cross_every",
           "side_cross_tokens", "side_cross_inner", "side_cross_width", "transformers"});
  tr.integer("heads", m.heads, 1, 4096);
  tr.integer("head_dim", m.head_dim, 1, 4096);
  tr.integer("ffn_hidden", m.ffn_hidden, 1, kMaxInt);
  tr.choice("ffn", m.ffn_kind, {"gelu", "swiglu", "conv_glu"});
  tr.choice("attention", m.attention, {"softmax", "linear"}, false);
  tr.integer("experts", m.experts, 0, 4096, false);
  tr.integer("active_experts", m.active_experts, 0, 4096, false);
  tr.integer("shared_experts", m.shared_experts, 0, 64, false);
  if (tr.ok() && m.experts > 0 && (m.active_experts < 1 || m.active_experts > m.experts))
    tr.fail("active_experts", std::to_string(m.active_experts), fmt::format("must be 1 to experts = {}", m.experts));
  if (tr.ok() && m.experts == 0 && (m.active_experts > 0 || m.shared_experts > 0))
    tr.fail("experts", "0", "active_experts and shared_experts need routed experts");
  tr.integer("text_hidden", m.text_hidden, 0, kMaxInt, false);
  tr.integer("text_ffn_hidden", m.text_ffn_hidden, 0, kMaxInt, false);
  tr.integer("ffn_temporal_taps", m.ffn_temporal_taps, 0, 15, false);
  tr.integer("side_cross_every", m.side_cross.every, 0, 10000, false);
  tr.integer("side_cross_tokens", m.side_cross.tokens, 0, kMaxInt, false);
  tr.integer("side_cross_inner", m.side_cross.inner, 0, kMaxInt, false);
  tr.integer("side_cross_width", m.side_cross.width, 0, kMaxInt, false);
  if (tr.ok() && m.side_cross.incomplete())
    tr.fail("side_cross_every", std::to_string(m.side_cross.every), ModelProfile::SideCross::kIncompleteRule);
  tr.integer("transformers", m.transformers, 1, 2, false);
  tr.boolean("qk_norm", m.qk_norm);
  tr.boolean("rope", m.rope, false);
  tr.choice("modulation", m.modulation, {"block", "shared", "expert", "table"}, false);
  tr.number("params", m.params, 0, kMaxParams, true, true);
  m.bytes_per_param = m.bytes_per_activation = dtype_bytes(tr, "dtype", 2);
  tr.integer("patch_spatial", m.patch_spatial, 1, 64);
  tr.integer("patch_temporal", m.patch_temporal, 1, 64, false);
  tr.integer("in_channels", m.in_channels, 1, 1 << 16);
  tr.tables("blocks", true, [&](Reader& b) {
    BlockGroup g;
    b.only({"kind", "count", "image_self_attention", "sequential", "temporal", "skip", "text_kv_only"});
    b.choice("kind", g.kind, {"double", "single", "cross"});
    b.integer("count", g.count, 1, 10000);
    b.boolean("image_self_attention", g.image_self_attention);
    b.boolean("sequential", g.sequential);
    b.boolean("temporal", g.temporal);
    b.boolean("skip", g.skip);
    b.boolean("text_kv_only", g.text_kv_only);
    if (b.ok() && g.sequential && g.kind != BlockKind::kSingle)
      b.fail("sequential", "true", "only single-stream blocks run attention and FFN in sequence");
    if (b.ok() && BlockGroup::misplaced_text_kv_only(g.kind, g.sequential, g.text_kv_only))
      b.fail("text_kv_only", "true", BlockGroup::kTextKvOnlyRule);
    m.blocks.push_back(g);
  });
  if (tr.ok() && m.blocks.empty()) tr.fail("blocks", "[]", "needs at least one block group");
}

// Reads [text]: how text tokens meet image tokens, how many there are, and the text encoders.
void read_text(Reader& tx, ModelProfile& m) {
  tx.only({"handling", "tokens", "max_tokens", "encoders"});
  tx.choice("handling", m.text_handling, {"joint", "cross"});
  tx.integer("tokens", m.text_tokens, 1, 1 << 20);
  m.max_text_tokens = m.text_tokens;
  tx.integer("max_tokens", m.max_text_tokens, 1, 1 << 20, false);
  if (tx.ok() && m.max_text_tokens < m.text_tokens)
    tx.fail("max_tokens", std::to_string(m.max_text_tokens),
            fmt::format("must be at least text.tokens = {}", m.text_tokens));
  tx.tables("encoders", false, [&](Reader& e) {
    Component c;
    read_text_encoder(e, c);
    m.text_encoders.push_back(c);
  });
}

// Where a [vae] config is looked for: the profiles folder of the file (the folder above its models/
// or classes/), then the built-in profiles (beside the installed executable, else the source
// tree's), so that a built-in model copied into a folder of one's own still finds its VAE.
fs::path vae_config_path(const std::string& file, const std::string& config) {
  const fs::path own = fs::path(file).parent_path().parent_path() / config;
  std::error_code ec;
  std::vector<fs::path> builtin;
  if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
    builtin.push_back(exe.parent_path() / ".." / "share" / "cpplan" / "profiles" / config);
#ifdef CPPLAN_SOURCE_PROFILES
  builtin.push_back(fs::path(CPPLAN_SOURCE_PROFILES) / config);
#endif
  if (fs::is_regular_file(own, ec)) return own;
  for (const fs::path& p : builtin)
    if (fs::is_regular_file(p, ec)) return p;
  return own;  // the error names where it was first looked for
}

// [vae] config: the VAE's diffusers vae/config.json (vae_config_path). Its class's structure gives
// the compression, the decode and encode costs and, where counted, the parameters
// (core/vae_cost.h); explicit keys, read after it, override what it gave.
void read_vae_config(Reader& v, VaeProfile& vae) {
  v.string("config", vae.config, false);
  if (vae.config.empty() || !v.ok()) return;
  const std::string value = fmt::format("\"{}\"", vae.config);
  const fs::path path = vae_config_path(v.file(), vae.config);
  auto j = diffusers::read_config_file(path);
  if (!j) return v.fail("config", value, j.error().message);
  try {
    const auto cost = diffusers::vae_cost(*j);
    if (!cost)
      return v.fail("config", value,
                    fmt::format("{}: _class_name = {}: must be a VAE class whose cost cpplan derives ({})", path.string(),
                                j->value("_class_name", std::string("(missing)")), diffusers::kDerivedVaeClasses));
    diffusers::apply_vae_cost(*cost, vae);
    if (const auto shape = diffusers::vae_from_config(*j); shape && shape->params > 0) vae.weights.params = shape->params;
  } catch (const diffusers::detail::FieldError& e) {
    v.fail("config", value, fmt::format("{}: {}", path.string(), e.message));
  }
}

// Reads [vae]: weights, spatial / temporal compression and the decode cost per pixel, from its
// config or given (the tiny test profiles).
void read_vae(Reader& v, ModelProfile& m) {
  v.only({"name", "params", "dtype", "spatial", "temporal", "decode_gflop_per_pixel", "decode_bytes_per_pixel",
          "decode_traffic_bytes_per_pixel", "mid_block_attention", "sample_size", "config", "encode_gflop_per_pixel",
          "decoder_convs", "halo_channels", "class", "structure"});
  read_vae_config(v, m.vae);
  const bool derived = !m.vae.config.empty();
  v.string("name", m.vae.weights.name);
  v.number("params", m.vae.weights.params, 0, kMaxParams, !derived || m.vae.weights.params <= 0, true);
  m.vae.weights.bytes_per_param = dtype_bytes(v, "dtype", 2);
  v.integer("spatial", m.vae.spatial, 1, 256, !derived);
  v.integer("temporal", m.vae.temporal, 1, 64, false);
  v.number("decode_gflop_per_pixel", m.vae.decode_gflop_per_pixel, 0, 1e3, !derived, true);
  v.number("decode_bytes_per_pixel", m.vae.decode_bytes_per_pixel, 0, 1e6, !derived, true);
  v.number("decode_traffic_bytes_per_pixel", m.vae.decode_traffic_bytes_per_pixel, 0, 1e8, false);
  v.number("encode_gflop_per_pixel", m.vae.encode_gflop_per_pixel, 0, 1e3, false);
  v.integer("decoder_convs", m.vae.decoder_convs, 0, 10000, false);
  v.number("halo_channels", m.vae.halo_channels, 0, 1e6, false);
  v.boolean("mid_block_attention", m.vae.mid_block_attention);
  v.integer("sample_size", m.vae.tile_sample_size, 8, 1 << 16, false);
  v.string("class", m.vae.class_name, false);
  v.string("structure", m.vae.structure, false);
}

// Reads [parallel]: how context parallelism splits the sequence and which runtimes support the model.
void read_parallel(Reader& p, ModelProfile& m) {
  p.only({"cp_split", "attention_mask"});
  p.choice("cp_split", m.cp_split, {"image_and_text", "image_only"});
  p.boolean("attention_mask", m.attention_mask);
}

// Reads [pipeline]: the default request (size, frames, steps, guidance) and the runtime names.
void read_pipeline(Reader& p, ModelProfile& m) {
  p.only({"video", "default_width", "default_height", "default_frames", "default_steps",
          "guidance", "hf_repo", "pipeline_class", "transformer_class", "base"});
  p.boolean("video", m.video);
  p.integer("default_width", m.default_width, 1, 16384);
  p.integer("default_height", m.default_height, 1, 16384);
  p.integer("default_frames", m.default_frames, 1, 2049, false);
  p.integer("default_steps", m.default_steps, 1, 10000);
  p.choice("guidance", m.guidance, {"none", "distilled", "true_cfg"});
  p.string("hf_repo", m.hf_repo, false);
  p.string("pipeline_class", m.pipeline_class, false);
  p.string("transformer_class", m.transformer_class, false);
  p.string("base", m.base, false);
}

// Reads the required table `key` of r into m with read, unless r has already failed.
void read_section(Reader& r, std::string_view key, ModelProfile& m, void (*read)(Reader&, ModelProfile&)) {
  if (const auto* t = r.table(key); t && r.ok()) {
    Reader section = r.sub(*t, key);
    read(section, m);
  }
}

// Checks the rules that tie fields of different tables together (the first broken one fails r).
void check_cross_fields(Reader& r, const ModelProfile& m) {
  if (r.ok() && m.text_handling == TextHandling::kCross &&
      std::any_of(m.blocks.begin(), m.blocks.end(),
                  [](const BlockGroup& g) { return g.kind != BlockKind::kCross; }))
    r.fail("transformer.blocks", "(kinds)", "text.handling = \"cross\" needs every block kind = \"cross\"");
  if (r.ok() && m.text_handling == TextHandling::kJoint &&
      std::any_of(m.blocks.begin(), m.blocks.end(),
                  [](const BlockGroup& g) { return g.kind == BlockKind::kCross; }))
    r.fail("transformer.blocks", "(kinds)", "kind = \"cross\" needs text.handling = \"cross\"");
  const int g = m.vae.spatial * m.patch_spatial;
  if (r.ok() && (m.default_width % g != 0 || m.default_height % g != 0))
    r.fail("pipeline.default_width", fmt::format("{}x{}", m.default_width, m.default_height),
           fmt::format("default size must be a multiple of vae.spatial x transformer.patch_spatial = {}", g));
  if (r.ok() && !m.video && m.default_frames != 1)
    r.fail("pipeline.default_frames", std::to_string(m.default_frames), "must be 1 for an image model");
  if (r.ok() && m.video && (m.default_frames - 1) % (m.vae.temporal * m.patch_temporal) != 0)
    r.fail("pipeline.default_frames", std::to_string(m.default_frames),
           "must be 1 + a multiple of vae.temporal x transformer.patch_temporal");
}

// Reads and checks a model profile; the error names the first broken field.
Result<ModelProfile> model_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  ModelProfile m;
  m.source = path;
  r.only({"name", "description", "transformer", "text", "vae", "parallel", "pipeline"});
  read_name(r, path, m.name);
  r.string("description", m.description, false);
  read_section(r, "transformer", m, read_transformer);
  read_section(r, "text", m, read_text);
  read_section(r, "vae", m, read_vae);
  read_section(r, "parallel", m, read_parallel);
  read_section(r, "pipeline", m, read_pipeline);
  check_cross_fields(r, m);
  if (!r.ok()) return Error{error};
  return m;
}
}  // namespace

namespace detail {
Result<ModelProfile> read_pipeline_template(const toml::table& t, const std::string& path, const std::string& prefix) {
  std::string error;
  Reader r(t, path, prefix, &error);
  ModelProfile m;
  m.source = path;
  r.only({"text", "vae", "parallel", "pipeline"});
  read_section(r, "text", m, read_text);
  read_section(r, "vae", m, read_vae);
  read_section(r, "parallel", m, read_parallel);
  read_section(r, "pipeline", m, read_pipeline);
  if (!r.ok()) return Error{error};
  return m;
}
}  // namespace detail

Result<ModelProfile> load_model_profile(const std::string& path) {
  auto parsed = parse_toml(path);
  if (!parsed) return parsed.error();
  return model_from_toml(*parsed, path);
}

Result<ModelProfile> parse_model_profile(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return model_from_toml(*parsed, path);
}

namespace {
// [node]: the usual PCIe server of the GPU (docs/profiles.md). Needs [interconnect] and [network]
// read: the layout must divide its GPUs, and its NICs must give the network's bandwidth per GPU.
NodeLayout read_node(Reader& n, const HardwareProfile& h) {
  NodeLayout node;
  n.only({"sockets", "gpus_per_switch", "switch_uplink_gbps", "socket_gbps", "host_memory_gbps", "nics", "nic_gbps"});
  if (h.link_kind != LinkKind::kPcie && h.link_kind != LinkKind::kPcieHost && h.link_kind != LinkKind::kXgmi) {
    n.fail("sockets", "...", fmt::format("a [node] describes a PCIe or xGMI-mesh server: interconnect.kind = \"{}\" must be pcie, pcie_host or xgmi",
                                         to_string(h.link_kind)));
    return node;
  }
  n.integer("sockets", node.sockets, 1, 8);
  if (n.ok() && h.gpus_per_node % node.sockets != 0)
    n.fail("sockets", std::to_string(node.sockets),
           fmt::format("must divide interconnect.gpus_per_node = {}", h.gpus_per_node));
  const int per_socket = h.gpus_per_node / node.sockets;
  n.integer("gpus_per_switch", node.gpus_per_switch, 1, 1024, false);
  if (n.ok() && per_socket % node.gpus_per_switch != 0)
    n.fail("gpus_per_switch", std::to_string(node.gpus_per_switch),
           fmt::format("must divide the GPUs of a socket = {}", per_socket));
  n.number("switch_uplink_gbps", node.switch_uplink_gbps, 0, 1e6, node.gpus_per_switch > 1, true);
  n.number("socket_gbps", node.socket_gbps, 0, 1e6, node.sockets > 1, true);
  n.number("host_memory_gbps", node.host_memory_gbps, 0, 1e6, h.link_kind == LinkKind::kPcieHost, true);
  n.integer("nics", node.nics, 1, 64, false);
  n.number("nic_gbps", node.nic_gbps, 0, 1e6, true, true);
  // One figure, two views: the network per GPU is what the node's NICs carry, shared by its GPUs.
  const double nics_gbps = node.nics * node.nic_gbps, per_gpu = h.network.bandwidth_gbps * h.gpus_per_node;
  if (n.ok() && std::abs(nics_gbps - per_gpu) > 1e-9 * per_gpu)
    n.fail("nic_gbps", fmt::format("{}", node.nic_gbps),
           fmt::format("nics x nic_gbps = {:g} must equal network.bandwidth_gbps x interconnect.gpus_per_node = {:g}",
                       nics_gbps, per_gpu));
  return node;
}

Result<HardwareProfile> hardware_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  HardwareProfile h;
  h.source = path;
  r.only({"name", "description", "architecture", "family", "match", "compute", "memory", "interconnect", "network",
          "node", "host", "efficiency"});
  read_name(r, path, h.name);
  r.string("description", h.description, false);
  r.string("architecture", h.architecture, false);
  r.choice("family", h.family, {"cuda", "tpu", "neuron", "rocm"}, false);
  if (const toml::node* n = root.get("match"); n && r.ok()) {
    if (!n->is_array()) r.fail("match", "...", "must be an array of strings");
    else
      for (const auto& e : *n->as_array()) {
        if (!e.is_string()) {
          r.fail("match", "...", "must be an array of strings");
          break;
        }
        h.match.push_back(e.as_string()->get());
      }
  }
  if (const auto* t = r.table("compute"); t && r.ok()) {
    Reader c = r.sub(*t, "compute");
    c.only({"bf16_tflops", "fp8_tflops", "fp4_tflops", "int8_tops", "vector_tflops", "exp_tera_per_s", "units",
            "clock_mhz", "compute_capability", "sync_mma_tflops"});
    c.number("bf16_tflops", h.bf16_tflops, 0, 1e6, true, true);
    ResourcePeaks& p = h.peaks;
    c.number("fp8_tflops", p.fp8_tflops, 0, 1e6, false);
    c.number("fp4_tflops", p.fp4_tflops, 0, 1e6, false);
    c.number("int8_tops", p.int8_tops, 0, 1e6, false);
    c.number("vector_tflops", p.vector_tflops, 0, 1e6, false);
    c.number("exp_tera_per_s", p.exp_tera_per_s, 0, 1e4, false);
    c.integer("units", p.units, 0, 1 << 20, false);
    c.number("clock_mhz", p.clock_mhz, 0, 1e5, false);
    c.integer("compute_capability", p.compute_capability, 0, 10000, false);
    c.number("sync_mma_tflops", p.sync_mma_tflops, 0, 1e6, false);
  }
  if (const auto* t = r.table("memory"); t && r.ok()) {
    Reader m = r.sub(*t, "memory");
    m.only({"capacity_mib", "reserved_mib", "bandwidth_gbps", "host_gib"});
    m.number("capacity_mib", h.memory_mib, 0, 1e8, true, true);
    m.number("reserved_mib", h.reserved_mib, 0, 1e8);
    m.number("host_gib", h.host_memory_gib, 0, 1e7, false, true);
    m.number("bandwidth_gbps", h.memory_bandwidth_gbps, 0, 1e6, true, true);
    if (m.ok() && h.reserved_mib >= h.memory_mib)
      m.fail("reserved_mib", fmt::format("{}", h.reserved_mib), "must be below capacity_mib");
  }
  auto read_link = [&](Reader& l, Link& link) {
    l.number("bandwidth_gbps", link.bandwidth_gbps, 0, 1e6, true, true);
    l.number("latency_us", link.latency_us, 0, 1e6);
    l.number("efficiency", link.efficiency, 0, 1, true, true);
  };
  if (const auto* t = r.table("interconnect"); t && r.ok()) {
    Reader l = r.sub(*t, "interconnect");
    l.only({"kind", "bandwidth_gbps", "latency_us", "efficiency", "gpus_per_node"});
    l.choice("kind", h.link_kind, {"nvswitch", "pcie", "pcie_host", "ici", "neuronlink", "xgmi"});
    read_link(l, h.intra_node);
    l.integer("gpus_per_node", h.gpus_per_node, 1, 1024);
  }
  if (const auto* t = r.table("network"); t && r.ok()) {
    Reader l = r.sub(*t, "network");
    l.only({"bandwidth_gbps", "latency_us", "efficiency"});
    read_link(l, h.network);
  }
  if (const auto* t = r.table("node", false); t && r.ok()) {
    Reader n = r.sub(*t, "node");
    h.node = read_node(n, h);
    if (!n.ok()) h.node.reset();
  }
  // The host link defaults to PCIe Gen4 x16 (32 GB/s per direction) at 0.8 of it.
  h.host_link = {32, 10, 0.8};
  if (const auto* t = r.table("host", false); t && r.ok()) {
    Reader l = r.sub(*t, "host");
    l.only({"bandwidth_gbps", "efficiency"});
    l.number("bandwidth_gbps", h.host_link.bandwidth_gbps, 0, 1e6, true, true);
    l.number("efficiency", h.host_link.efficiency, 0, 1, false, true);
  }
  const bool pcie_native = h.link_kind == LinkKind::kPcie || h.link_kind == LinkKind::kPcieHost;
  h.pcie_efficiency = pcie_native ? h.intra_node.efficiency : h.host_link.efficiency;
  h.staged_pcie_efficiency = h.link_kind == LinkKind::kPcieHost ? h.intra_node.efficiency : h.host_link.efficiency;
  if (const auto* t = r.table("efficiency"); t && r.ok()) {
    Reader e = r.sub(*t, "efficiency");
    e.only({"gemm", "gemm_half_rows", "attention", "attention_half_tokens", "conv", "memory",
            "kernel_launch_us", "all_to_all_across_sockets"});
    e.number("gemm", h.gemm_efficiency, 0, 1, true, true);
    e.number("gemm_half_rows", h.gemm_half_rows, 0, 1e6);
    const auto* a = e.table("attention", false);
    h.attention_from_kernels = e.ok() && !a;
    if (a && e.ok()) {
      Reader ar = e.sub(*a, "attention");
      ar.only({"flash", "cudnn", "sage", "native"});
      for (int i = 0; i < kProfiledAttentionBackends; ++i)
        ar.number(to_string(static_cast<AttentionBackend>(i)), h.attention_efficiency[i], 0, 1, true, true);
    }
    e.number("attention_half_tokens", h.attention_half_tokens, 0, 1e6);
    e.number("conv", h.conv_efficiency, 0, 1, true, true);
    e.number("memory", h.memory_efficiency, 0, 1, true, true);
    e.number("all_to_all_across_sockets", h.all_to_all_across_sockets, 0, 1, false, true);
    e.number("kernel_launch_us", h.kernel_launch_us, 0, 1e4);
  }
  if (!r.ok()) return Error{error};
  return h;
}
}  // namespace

Result<HardwareProfile> load_hardware_profile(const std::string& path) {
  auto parsed = parse_toml(path);
  if (!parsed) return parsed.error();
  return hardware_from_toml(*parsed, path);
}

Result<HardwareProfile> parse_hardware_profile(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return hardware_from_toml(*parsed, path);
}

namespace {
Result<RuntimeProfile> runtime_from_toml(const toml::table& root, const std::string& path) {
  std::string error;
  Reader r(root, path, "", &error);
  RuntimeProfile rt;
  rt.source = path;
  r.only({"name", "description", "host", "ops", "device", "compile"});
  read_name(r, path, rt.name);
  r.string("description", rt.description, false);
  if (const auto* t = r.table("host"); t && r.ok()) {
    Reader h = r.sub(*t, "host");
    h.only({"dispatch", "us_per_op", "eager_us_per_op", "overlaps_device", "collective_us", "sync_us", "image_ms"});
    h.string("dispatch", rt.dispatch);
    h.number("us_per_op", rt.us_per_op, 0, 1e6);
    h.number("eager_us_per_op", rt.eager_us_per_op, 0, 1e6, false);
    h.boolean("overlaps_device", rt.overlaps_device, true);
    h.number("collective_us", rt.collective_us, 0, 1e6);
    h.number("sync_us", rt.sync_us, 0, 1e6);
    h.number("image_ms", rt.image_ms, 0, 1e7);
  }
  if (const auto* t = r.table("ops"); t && r.ok()) {
    Reader o = r.sub(*t, "ops");
    RuntimeOps& ops = rt.ops;
    o.only({"double_block", "single_block", "cross_block", "image_attention", "qk_norm", "rope", "double_attention",
            "single_attention", "cross_attention", "ulysses", "ring", "ring_iteration", "anything", "tp_all_reduce",
            "tp_linear", "step", "text_encoder_layer", "vae_decode"});
    for (auto [key, out] : {std::pair{"double_block", &ops.double_block}, {"single_block", &ops.single_block},
                            {"cross_block", &ops.cross_block}, {"image_attention", &ops.image_attention},
                            {"ulysses", &ops.ulysses}, {"ring", &ops.ring}, {"ring_iteration", &ops.ring_iteration},
                            {"anything", &ops.anything}, {"tp_all_reduce", &ops.tp_all_reduce},
                            {"tp_linear", &ops.tp_linear}, {"step", &ops.step},
                            {"text_encoder_layer", &ops.text_encoder_layer}, {"vae_decode", &ops.vae_decode}})
      o.number(key, *out, 0, 1e7);
    o.number("qk_norm", ops.qk_norm, 0, 1e7, false);  // of the block counts; 0: not counted apart
    o.number("rope", ops.rope, 0, 1e7, false);
    for (auto [key, out, block] : {std::tuple{"double_attention", &ops.double_attention, ops.double_block},
                                   {"single_attention", &ops.single_attention, ops.single_block},
                                   {"cross_attention", &ops.cross_attention, ops.cross_block}}) {
      o.number(key, *out, 0, 1e7, false);  // of the block's count; 0: not counted apart
      if (o.ok() && *out > block)
        o.fail(key, fmt::format("{:g}", *out), fmt::format("of the block's {:g} ops: at most that", block));
    }
  }
  if (const auto* t = r.table("device"); t && r.ok()) {
    Reader d = r.sub(*t, "device");
    d.only({"elementwise_traffic", "explicit_attention_scores"});
    d.number("elementwise_traffic", rt.elementwise_traffic, 0, 100, true, true);
    bool explicit_scores = false;
    d.boolean("explicit_attention_scores", explicit_scores, false);
    rt.attention_score_tensors = explicit_scores ? 2 : 0;  // the scores and their softmax
  }
  if (const auto* t = r.table("compile", false); t && r.ok()) {
    Reader c = r.sub(*t, "compile");
    c.only({"base_s", "per_block_s"});
    c.number("base_s", rt.compile_base_s, 0, 1e6);
    c.number("per_block_s", rt.compile_per_block_s, 0, 1e6);
  }
  if (!r.ok()) return Error{error};
  return rt;
}
}  // namespace

Result<RuntimeProfile> load_runtime_profile(const std::string& path) {
  auto parsed = parse_toml(path);
  if (!parsed) return parsed.error();
  return runtime_from_toml(*parsed, path);
}

Result<RuntimeProfile> parse_runtime_profile(std::string_view text, const std::string& path) {
  auto parsed = detail::parse_toml_text(text, path);
  if (!parsed) return parsed.error();
  return runtime_from_toml(*parsed, path);
}

namespace {
// The profile files of `dir` (*.toml, sorted), each named by its stem, into `into`: a name already
// there now reads the later directory's file.
template <class P>
void list_dir(const fs::path& dir, std::deque<LazyProfile<P>>& into) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::string name = f.stem().string();
    auto same = std::find_if(into.begin(), into.end(), [&](const LazyProfile<P>& q) { return q.name() == name; });
    if (same != into.end()) same->reset(f.string());
    else into.emplace_back(std::move(name), f.string());
  }
}

template <class P>
const LazyProfile<P>* entry_named(const std::deque<LazyProfile<P>>& all, std::string_view name) {
  for (const auto& p : all)
    if (p.name() == name) return &p;
  return nullptr;
}

template <class P>
std::vector<std::string> names_of(const std::deque<LazyProfile<P>>& all) {
  std::vector<std::string> out;
  for (const auto& p : all) out.push_back(p.name());
  return out;
}

template <class P>
bool has_name(const std::deque<LazyProfile<P>>& all, std::string_view name) {
  return entry_named(all, name) != nullptr;
}

template <class P, class Parse>
Result<const P*> find_or_suggest(const std::deque<LazyProfile<P>>& all, std::string_view name, std::string_view flag,
                                 Parse&& parse) {
  if (const LazyProfile<P>* p = entry_named(all, name)) return p->get(parse);
  const auto names = names_of(all);
  const auto near = closest_names(name, names);
  if (!near.empty())
    return Error{fmt::format("{} = {}: unknown profile; did you mean {}?", flag, printable(name), join_or(near))};
  return Error{fmt::format("{} = {}: unknown profile; known: {}", flag, printable(name), join_or(names))};
}

template <class P, class Parse>
const P* find_parsed(const std::deque<LazyProfile<P>>& all, std::string_view name, Parse&& parse) {
  const LazyProfile<P>* p = entry_named(all, name);
  if (!p) return nullptr;
  auto r = p->get(parse);
  return r ? *r : nullptr;
}

// A catalog's parse_* of one kind as the callable LazyProfile::get takes.
template <class P>
auto parser(const ProfileCatalog* c, Result<P> (ProfileCatalog::*parse)(const std::string&) const) {
  return [c, parse](const std::string& path) { return (c->*parse)(path); };
}

// Parses every entry of a kind; the first error in catalog order.
template <class P, class Parse>
Result<bool> parse_all(const std::deque<LazyProfile<P>>& all, Parse&& parse) {
  Result<bool> first = true;
  for (const auto& p : all)
    if (auto r = p.get(parse); !r && first) first = r.error();
  return first;
}
}  // namespace

Result<ProfileCatalog> ProfileCatalog::load(const std::vector<std::string>& directories, const CatalogOptions& options) {
  ProfileCatalog c;
  for (const auto& d : directories) {
    list_dir(fs::path(d) / "models", c.models_);
    list_dir(fs::path(d) / "hardware", c.hardware_);
  }
  if (c.models_.empty() || c.hardware_.empty())
    return Error{fmt::format("profiles: no model or hardware profiles found in {}",
                             directories.empty() ? std::string("(no directory)") : join_or(directories))};
  std::deque<LazyProfile<RuntimeFit>> fits;
  for (const auto& d : directories) {
    list_dir(fs::path(d) / "topologies", c.topologies_);
    list_dir(fs::path(d) / "runtimes", c.runtimes_);
    list_dir(fs::path(d) / "fits", fits);
    list_dir(fs::path(d) / "frameworks", c.frameworks_);
  }
  // The fits are read now: every hardware and runtime profile is priced through them.
  for (const auto& f : fits) {
    auto fit = load_runtime_fit(f.path());
    if (!fit) return fit.error();
    if (auto r = c.check_fit(*fit); !r) return r.error();
    c.fits_.push_back(std::move(fit).value());
  }
  if (options.apply_fits && !c.fits_.empty()) c.merged_fit_ = merge_fits(c.fits_);
  // kernels.toml: the last directory that has one (a user's directory overrides the shipped table).
  for (auto d = directories.rbegin(); d != directories.rend(); ++d) {
    const fs::path path = fs::path(*d) / "kernels.toml";
    if (!fs::exists(path)) continue;
    auto table = load_kernel_table(path.string());
    if (!table) return table.error();
    c.kernels_ = std::move(table).value();
    break;
  }
  c.directories_ = directories;
  if (options.validate_all)
    if (auto r = c.validate(); !r) return r.error();
  return c;
}

Result<bool> ProfileCatalog::validate() const {
  if (auto r = parse_all(models_, parser(this, &ProfileCatalog::parse_model)); !r) return r;
  if (auto r = parse_all(hardware_, parser(this, &ProfileCatalog::parse_hardware)); !r) return r;
  if (auto r = parse_all(topologies_, parser(this, &ProfileCatalog::parse_topology)); !r) return r;
  if (auto r = parse_all(runtimes_, parser(this, &ProfileCatalog::parse_runtime)); !r) return r;
  return parse_all(frameworks_, parser(this, &ProfileCatalog::parse_framework));
}

Result<ModelProfile> ProfileCatalog::parse_model(const std::string& path) const { return load_model_profile(path); }

Result<HardwareProfile> ProfileCatalog::parse_hardware(const std::string& path) const {
  auto hw = load_hardware_profile(path);
  if (!hw) return hw;
  hw.value().kernels = kernels_;
  if (hw->attention_from_kernels) derive_attention_efficiency(hw.value());
  if (!merged_fit_) return hw;
  apply_fit(*merged_fit_, hw.value());
  for (const RuntimeFit& f : fits_)  // the last fit that named it
    if ((!hw->architecture.empty() && f.architectures.count(hw->architecture)) ||
        f.links.count(std::string(to_string(hw->link_kind))))
      hw.value().fitted_by = f.name;
  return hw;
}

Result<RuntimeProfile> ProfileCatalog::parse_runtime(const std::string& path) const {
  auto rt = load_runtime_profile(path);
  if (!rt || !merged_fit_) return rt;
  apply_fit(*merged_fit_, rt.value());
  for (const RuntimeFit& f : fits_)
    if (f.runtimes.count(rt->name)) rt.value().fitted_by = f.name;
  return rt;
}

Result<Topology> ProfileCatalog::parse_topology(const std::string& path) const { return load_topology_file(path); }

Result<FrameworkProfile> ProfileCatalog::parse_framework(const std::string& path) const {
  auto f = load_framework_profile(path);
  if (f && !f->runtime.empty() && !has_name(runtimes_, f->runtime))
    return Error{fmt::format("{}: runtime = {}: must name a runtime profile ({})", f->source, printable(f->runtime),
                             join_or(runtime_names()))};
  return f;
}

std::vector<std::string> ProfileCatalog::class_names() const {
  std::vector<std::string> out;
  for (const auto& d : directories_) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(d) / "classes", ec))
      if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<ClassSpec> ProfileCatalog::class_spec(std::string_view class_name) const {
  const bool plain = !class_name.empty() && class_name.find_first_of("/\\.") == std::string_view::npos;
  for (auto d = directories_.rbegin(); plain && d != directories_.rend(); ++d) {
    const fs::path file = fs::path(*d) / "classes" / (std::string(class_name) + ".toml");
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return ClassSpec::load(file.string());
  }
  const auto known = class_names();
  const auto near = closest_names(class_name, known);
  return Error{printable(fmt::format("_class_name = {}: not a diffusers transformer class cpplan knows; {}{} classes "
                                     "known (cpplan list classes)",
                                     class_name.empty() ? "(missing)" : std::string(class_name),
                                     near.empty() ? "" : fmt::format("did you mean {}? ", join_or(near)),
                                     known.size()))};
}

Result<bool> ProfileCatalog::check_fit(const RuntimeFit& f) const {
  for (const auto& [name, values] : f.runtimes)
    if (!has_name(runtimes_, name))
      return Error{fmt::format("{}: runtimes.{}: unknown runtime profile; known: {}", f.source_file, printable(name),
                               join_or(runtime_names()))};
  return true;
}

// A topology's hardware must name a profile file of the catalog; whether that file parses is the
// hardware's own error, where the hardware is used.
Result<bool> ProfileCatalog::check_hardware(const Topology& t) const {
  if (has_name(hardware_, t.hardware)) return true;
  const auto near = closest_names(t.hardware, hardware_names());
  return Error{fmt::format("{}: hardware = \"{}\": {}", t.source, printable(t.hardware),
                           near.empty() ? fmt::format("unknown hardware profile; known: {}", join_or(hardware_names()))
                                        : fmt::format("unknown hardware profile; did you mean {}?", join_or(near)))};
}

Result<Topology> ProfileCatalog::load_topology_file(const std::string& path) const {
  auto t = load_topology(path);
  if (!t) return t.error();
  if (auto r = check_hardware(*t); !r) return r.error();
  return t;
}

const Topology* ProfileCatalog::find_topology(std::string_view n) const {
  return find_parsed(topologies_, n, parser(this, &ProfileCatalog::parse_topology));
}
Result<const Topology*> ProfileCatalog::topology(std::string_view n) const {
  return find_or_suggest(topologies_, n, "--topology", parser(this, &ProfileCatalog::parse_topology));
}
ProfileList<Topology> ProfileCatalog::topologies() const {
  parse_all(topologies_, parser(this, &ProfileCatalog::parse_topology));
  return ProfileList<Topology>(topologies_);
}
std::vector<std::string> ProfileCatalog::topology_names() const { return names_of(topologies_); }

const ModelProfile* ProfileCatalog::find_model(std::string_view n) const {
  return find_parsed(models_, n, parser(this, &ProfileCatalog::parse_model));
}
Result<const ModelProfile*> ProfileCatalog::model(std::string_view n) const {
  return find_or_suggest(models_, n, "--model", parser(this, &ProfileCatalog::parse_model));
}
ProfileList<ModelProfile> ProfileCatalog::models() const {
  parse_all(models_, parser(this, &ProfileCatalog::parse_model));
  return ProfileList<ModelProfile>(models_);
}
std::vector<std::string> ProfileCatalog::model_names() const { return names_of(models_); }

void ProfileCatalog::add_model(ModelProfile m) {
  for (auto& existing : models_)
    if (existing.name() == m.name) {
      existing.set(std::move(m));
      return;
    }
  models_.emplace_back(std::move(m));
}

const FrameworkProfile* ProfileCatalog::find_framework(std::string_view n) const {
  return find_parsed(frameworks_, n, parser(this, &ProfileCatalog::parse_framework));
}
Result<const FrameworkProfile*> ProfileCatalog::framework_profile(std::string_view n) const {
  return find_or_suggest(frameworks_, n, "--framework-version", parser(this, &ProfileCatalog::parse_framework));
}
ProfileList<FrameworkProfile> ProfileCatalog::frameworks() const {
  parse_all(frameworks_, parser(this, &ProfileCatalog::parse_framework));
  return ProfileList<FrameworkProfile>(frameworks_);
}
std::vector<std::string> ProfileCatalog::framework_names() const { return names_of(frameworks_); }

Result<std::array<const FrameworkProfile*, kFrameworkCount>> ProfileCatalog::frameworks_for_query(
    const std::vector<std::string>& versions) const {
  std::array<const FrameworkProfile*, kFrameworkCount> out{};
  for (int i = 0; i < kFrameworkCount; ++i) {
    const auto* entry = entry_named(frameworks_, to_string(static_cast<Framework>(i)));
    if (!entry) continue;
    auto f = entry->get(parser(this, &ProfileCatalog::parse_framework));
    if (!f) return f.error();
    out[i] = *f;
  }
  for (const std::string& v : versions) {
    auto f = framework_profile(v);
    if (!f) return f.error();
    out[static_cast<int>((*f)->framework)] = *f;
  }
  return out;
}

const HardwareProfile* ProfileCatalog::find_hardware(std::string_view n) const {
  return find_parsed(hardware_, n, parser(this, &ProfileCatalog::parse_hardware));
}
Result<const HardwareProfile*> ProfileCatalog::hardware(std::string_view n) const {
  return find_or_suggest(hardware_, n, "--hardware", parser(this, &ProfileCatalog::parse_hardware));
}
ProfileList<HardwareProfile> ProfileCatalog::hardware_profiles() const {
  parse_all(hardware_, parser(this, &ProfileCatalog::parse_hardware));
  return ProfileList<HardwareProfile>(hardware_);
}
std::vector<std::string> ProfileCatalog::hardware_names() const { return names_of(hardware_); }

const HardwareProfile* ProfileCatalog::match_gpu(std::string_view gpu_name, double memory_mib) const {
  // Closest capacity first; between equally close ones the more specific match ("L40S" over
  // "L40", both 48 GB).
  auto key = [&](const HardwareProfile& h) {
    std::size_t matched = 0;
    for (const auto& m : h.match) matched += m.size();
    return std::pair(std::abs(h.memory_mib - memory_mib), -static_cast<double>(matched));
  };
  const HardwareProfile* best = nullptr;
  for (const HardwareProfile& h : hardware_profiles()) {
    if (h.match.empty()) continue;
    bool all = true;
    for (const auto& m : h.match) all = all && gpu_name.find(m) != std::string_view::npos;
    if (!all) continue;
    if (!best || key(h) < key(*best)) best = &h;
  }
  return best;
}

const RuntimeProfile* ProfileCatalog::find_runtime(std::string_view n) const {
  return find_parsed(runtimes_, n, parser(this, &ProfileCatalog::parse_runtime));
}
Result<const RuntimeProfile*> ProfileCatalog::runtime(std::string_view n) const {
  return find_or_suggest(runtimes_, n, "--runtime", parser(this, &ProfileCatalog::parse_runtime));
}
ProfileList<RuntimeProfile> ProfileCatalog::runtimes() const {
  parse_all(runtimes_, parser(this, &ProfileCatalog::parse_runtime));
  return ProfileList<RuntimeProfile>(runtimes_);
}
std::vector<std::string> ProfileCatalog::runtime_names() const { return names_of(runtimes_); }

std::vector<std::string> profile_search_path(const std::vector<std::string>& explicit_dirs,
                                             const std::string& executable) {
  std::vector<std::string> dirs;
  std::error_code ec;
  const fs::path exe_dir = fs::path(executable).parent_path();
  const fs::path installed = exe_dir / ".." / "share" / "cpplan" / "profiles";
  if (!executable.empty() && fs::is_directory(installed, ec)) dirs.push_back(installed.lexically_normal().string());
#ifdef CPPLAN_SOURCE_PROFILES
  else if (fs::is_directory(CPPLAN_SOURCE_PROFILES, ec))
    dirs.push_back(CPPLAN_SOURCE_PROFILES);
#endif
  if (const char* env = std::getenv("CPPLAN_PROFILE_PATH"); env && *env) {
    std::string_view s(env);
    while (!s.empty()) {
      const auto colon = s.find(':');
      const auto part = s.substr(0, colon);
      if (!part.empty()) dirs.emplace_back(part);
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
  }
  for (const auto& d : explicit_dirs) dirs.push_back(d);
  return dirs;
}

std::string_view to_string(BlockKind k) {
  constexpr std::string_view n[] = {"double", "single", "cross"};
  return n[static_cast<int>(k)];
}
std::string_view to_string(FfnKind k) {
  constexpr std::string_view n[] = {"gelu", "swiglu", "conv_glu"};
  return n[static_cast<int>(k)];
}
std::string_view to_string(AttentionKind k) { return k == AttentionKind::kSoftmax ? "softmax" : "linear"; }
std::string_view to_string(Guidance g) {
  constexpr std::string_view n[] = {"none", "distilled", "true_cfg"};
  return n[static_cast<int>(g)];
}
std::string_view to_string(CpSplit s) { return s == CpSplit::kImageAndText ? "image_and_text" : "image_only"; }
std::string_view to_string(Modulation m) {
  static constexpr std::string_view names[] = {"block", "shared", "expert", "table"};
  return names[static_cast<int>(m)];
}
std::string_view to_string(TextHandling t) { return t == TextHandling::kJoint ? "joint" : "cross"; }
std::string_view to_string(LinkKind k) {
  constexpr std::string_view n[] = {"nvswitch", "pcie", "pcie_host", "ici", "neuronlink", "xgmi"};
  return n[static_cast<int>(k)];
}
std::string_view to_string(DeviceFamily f) {
  constexpr std::string_view n[] = {"cuda", "tpu", "neuron", "rocm"};
  return n[static_cast<int>(f)];
}

}  // namespace cpplan
