#pragma once
// Which frameworks users run can execute a plan, why the others cannot, and the ready-to-paste
// configuration for them (diffusers Python, xDiT command line).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "costmodel/cost_model.h"

namespace cpplan::planner {

// The frameworks and what each runs are data (core/framework.h, profiles/frameworks/*.toml);
// the query carries the files it plans with (Query::frameworks).
using cpplan::Framework;
using cpplan::framework_from_string;
using cpplan::kFrameworkCount;
using cpplan::to_string;

struct FrameworkSet {
  unsigned bits = 0;
  bool has(Framework f) const { return bits & (1u << static_cast<int>(f)); }
  void add(Framework f) { bits |= 1u << static_cast<int>(f); }
  std::vector<std::string> names() const;
};

// The features a plan uses with its text encoders and VAE placed as `where`.
FeatureSet features_of(const Plan& p, const PipelinePlacement& where);
// Empty when `f` can run the (valid) plan with its text encoders and VAE placed as `where`, else
// the reason it cannot, from q.frameworks' file: the device family, the model's entry, the
// features it lacks (in Feature order), the features it refuses together. `where` unset: as the
// framework places them unasked: the query's forced placements, else the text encoders on every
// GPU (the largest sharded with the transformer's fully sharded weights where the framework does
// that, FrameworkModel::with_fully_shard) and the decode on one GPU.
std::string_view unsupported_reason(Framework f, const Query& q, const Plan& p,
                                    std::optional<PipelinePlacement> where = std::nullopt);
FrameworkSet frameworks_for(const Query& q, const Plan& p, std::optional<PipelinePlacement> where = std::nullopt);

// The two above with each framework file's entry for the query's model looked up once: the
// planner asks them of every plan of a query, and the lookup compares names.
class FrameworkOffers {
 public:
  explicit FrameworkOffers(const Query& q);
  std::string_view unsupported_reason(Framework f, const Query& q, const Plan& p,
                                      std::optional<PipelinePlacement> where = std::nullopt) const;
  FrameworkSet frameworks_for(const Query& q, const Plan& p, std::optional<PipelinePlacement> where = std::nullopt) const;
  // The placements of `pr` (its pipeline_options) with which `f` runs the plan.
  costmodel::PipelineOptionMask options_run(Framework f, const Query& q, const Plan& p,
                                            const costmodel::Prediction& pr) const;
  // The steps of the query's denoising that `f`'s cache leaves cached: the query's cache as it
  // schedules it (FrameworkCache::schedule; the query's own when it ships none).
  int cached_steps(Framework f) const { return offers_[static_cast<int>(f)].cached_steps; }
  // Whether `f`'s cache stores what the plan's cache does: false where its hook attaches to none
  // of the model's modules (FrameworkCache::runs_on), so that its run holds no cached residuals.
  bool stores_cache(Framework f) const { return offers_[static_cast<int>(f)].stores_cache; }

 private:
  struct Offer {
    const FrameworkProfile* fw = nullptr;  // null: no file loaded for the framework
    bool listed = false;                   // the file has an entry for the model
    FeatureSet features;                   // what it offers the model
    const FrameworkModel* entry = nullptr;  // the file's entry for the model (its degree limits)
    int cached_steps = 0;                   // of the query's steps, under its cache's own schedule
    bool stores_cache = true;               // its cache's hook attaches to the model (CacheSpec::hooked)
  };
  // Why the offer (with a file) cannot run valid plan `p` using `used`: the device family, the
  // model's entry, the features it lacks (in Feature order), its limits, the features it refuses
  // together; empty when it runs it.
  std::string_view refusal(const Offer& o, const Query& q, const Plan& p, FeatureSet used) const;
  // The placement the offer's framework uses unasked (unsupported_reason's `where` unset).
  PipelinePlacement unasked_placement(const Offer& o, const Query& q, const Plan& p) const;
  // Why the offer's degree limits or attention-backend rules refuse `p`; empty when none does.
  std::string_view limit_reason(const Offer& o, const Query& q, const Plan& p, FeatureSet used) const;
  std::array<Offer, kFrameworkCount> offers_;
};

// One keyword argument of a diffusers parallel config: an int, or (boolean) False/True as 0/1.
struct ConfigArgument {
  std::string name;
  int value = 0;
  bool boolean = false;
};
// ContextParallelConfig's keyword arguments for the plan's CP part (those off their default), and
// TensorParallelConfig's for its TP part; empty without that part.
std::vector<ConfigArgument> context_parallel_arguments(const ParallelConfig& c);
std::vector<ConfigArgument> tensor_parallel_arguments(const ParallelConfig& c);
std::string python_arguments(const std::vector<ConfigArgument>& args);  // "ulysses_degree=4, ulysses_anything=True"

// The lines of a diffusers script that load the pipeline (`pipeline`.from_pretrained(`repo`)) onto
// `device` ("cuda", "neuron", "tpu") with the text encoders placed as `te`; the prompt arguments of
// its call (the embeddings when the encoders were freed); the lines that save `out` (images or a
// video) at `indent`. The diffusers script's pieces, shared with cache-dit's (framework_scripts.h).
// Without `move_transformer` the transformers stay in host memory (the script shards them first).
std::string placement_lines(const ModelProfile& m, const std::string& pipeline, const std::string& repo,
                            TextEncoderPlacement te, std::string_view device, bool move_transformer = true);
std::string prompt_arguments(const ModelProfile& m, TextEncoderPlacement te);
// The line that makes the VAE decode tiled or sliced (diffusers' enable_tiling / enable_slicing);
// empty for a single or parallel decode.
std::string vae_lines(VaePlacement vae);
std::string output_lines(const ModelProfile& m, std::string_view indent);
// A distributed script's end: the pipeline called with the query's prompt, size, frames and steps
// (the same seed on every rank), rank 0 saving the output, the process group destroyed.
std::string generate_lines(const Query& q, TextEncoderPlacement te);
// diffusers' name of an attention backend, as set_attention_backend takes it ("flash", "sage", ...).
std::string_view diffusers_backend(AttentionBackend b);

// diffusers script for the plan (launch line in its first comment), with the lines that stream
// (offloaded) or free (sequential) the text encoders; precondition: diffusers can run it.
std::string diffusers_snippet(const Query& q, const Plan& p, const PipelinePlacement& where = {});
// xDiT's parallel flags for the plan ("--ulysses_degree", "4", "--ring_degree", "1", ...).
std::vector<std::string> xdit_parallel_args(const Plan& p, const PipelinePlacement& where = {});
// xDiT launch line; precondition: xDiT can run it.
std::string xdit_command(const Query& q, const Plan& p, const PipelinePlacement& where = {});
// What framework `f`'s launch text adds for the query's --dtype (its [[quantization]] entry): null
// for BF16 or a format it does not offer.
const FrameworkQuantization* quantization_of(const Query& q, Framework f);
// Framework `f`'s entry for the query's --cache (null: no cache, or one it does not ship).
const FrameworkCache* cache_of(const Query& q, Framework f);
// Its launch-text addition with the query's cache parameters in place of {F}, {B}, {W}, {MC}, {N},
// and its steps in place of {S}.
std::string cache_flag(const Query& q, const FrameworkCache& c);

}  // namespace cpplan::planner
