#pragma once
// A query (what the user asks) and a plan (one parallel assignment for it).

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/cache.h"
#include "core/framework.h"
#include "core/hardware.h"
#include "core/model.h"
#include "core/parallel_config.h"
#include "core/precision.h"
#include "core/runtime.h"
#include "core/sequence.h"
#include "core/topology.h"
#include "core/violation.h"

namespace cpplan {

// Everything the planner needs besides the parallel config; models and hardware are borrowed
// from a ProfileCatalog that outlives the query.
struct Query {
  const ModelProfile* model = nullptr;
  const HardwareProfile* hardware = nullptr;
  int gpus = 1;
  Resolution resolution;
  int frames = 1;
  int steps = 28;
  int batch = 1;                 // images generated together (split over dp replicas)
  Sequence sequence;
  AttentionBackend backend = AttentionBackend::kFlash;
  // --attention-backend was given: every framework runs `backend`. Else each framework is judged
  // with its own pick on the GPU (FrameworkProfile::kernels_for), `backend` being the pricing one's.
  bool backend_asked = false;
  // What the framework that prices the query launches on its GPU (profiles/frameworks [[kernels]]):
  // the elementwise kinds it fuses; null: the runtime's own kernels (the executor, a probed GPU).
  const FrameworkKernels* kernels = nullptr;
  const FrameworkProfile* kernels_framework = nullptr;  // whose kernels those are
  // The number format of the transformer's linear layers (--dtype): their weights' bytes, their
  // GEMMs' tensor peak and the activations' quantization (core/precision.h).
  Precision precision;
  // A step cache (--cache, core/cache.h): which steps reuse the middle blocks' residual; none by default.
  CacheSpec cache;
  // --dtype any or a list, --cache any or a list: the formats and the caches the ranking prices every
  // plan with, each format with each cache (planner::Planner::plan; `precision` and `cache` above are
  // the first of each). Empty: that axis is `precision` or `cache` alone.
  std::vector<Precision> precisions;
  std::vector<CacheSpec> caches;
  bool ranks_precisions() const { return !precisions.empty(); }
  bool ranks_caches() const { return !caches.empty(); }
  // The framework's runtime (host costs, fusion); nullptr: kernel launches only.
  const RuntimeProfile* runtime = nullptr;
  // Forced placements; unset: the planner picks, per plan, the fastest that fits.
  std::optional<TextEncoderPlacement> text_encoder;
  std::optional<VaePlacement> vae;
  // A pipeline of two transformers (Wan2.2 A14B) keeps the one not denoising in host memory and
  // loads each before its steps (--offload-idle-transformer); off: both on every GPU.
  bool offload_idle_transformer = false;
  // Host memory of one node, GiB (--host-mem; else the hardware profile's typical node, or this
  // machine's for --hardware local); 0: unknown, no host-memory verdict.
  double host_memory_gib = 0;
  // With --topology: the node's devices and links, replicated over `nodes` nodes; the planner
  // then places every plan's axes on devices (planner/topology/). nullptr: today's layout rule.
  const Topology* topology = nullptr;
  int nodes = 1;
  // What each framework runs (profiles/frameworks/), indexed by Framework; a null entry runs nothing.
  std::array<const FrameworkProfile*, kFrameworkCount> frameworks{};
};

struct Plan {
  ParallelConfig config;
  CpVariant variant = CpVariant::kNone;
  std::vector<Violation> violations;  // every broken rule, in validate()'s order; empty means valid
  bool valid() const { return violations.empty(); }
  std::vector<std::string> reasons() const { return messages(violations); }  // their messages
};

}  // namespace cpplan
