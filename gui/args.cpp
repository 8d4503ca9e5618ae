#include "gui/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <string_view>
#include <fmt/format.h>

namespace cpplan::gui {

namespace {

constexpr const char* kTabs[] = {"plans", "heatmap", "history", "run", "calibration", "sweep", "fleet"};

struct Invalid {
  std::string message;
};

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size())
    throw Invalid{fmt::format("{} = {}: must be an integer", flag, text)};
  if (ec == std::errc::result_out_of_range || v < lo || v > hi)
    throw Invalid{fmt::format("{} = {}: must be between {} and {}", flag, text, lo, hi)};
  return v;
}

// --framework, by the CLI's parser (session::framework_choice) and in its words.
void check_framework(const std::string& framework) {
  session::Options o;
  o.framework = framework;
  try {
    session::framework_choice(o);
  } catch (const session::InvalidInput& e) {
    throw Invalid{e.message};
  }
}

}  // namespace

ParsedArgs parse_args(int argc, const char* const* argv, const std::string& exe) {
  ParsedArgs out;
  // --gpus and --hardware default from --topology when it is given (as the CLI), else 4 x h100-sxm.
  std::string gpus, res, frames, model = "flux.1-dev", hardware, steps, backend = "flash", size;
  std::string pipeline_patches, pipefusion_warmup;
  std::string batch = "1", topology, nodes;
  std::string runtime = "diffusers", framework = "any", text_encoder, vae, model_config;
  std::vector<std::string> framework_versions;
  bool offload = false, no_anything = false, all = false;
  GuiOptions& o = out.options;
  CLI::App app{"cpplan-gui: explore the planner's configurations (Qt); the query flags are the CLI's", "cpplan-gui"};
  app.add_option("--gpus", gpus, "GPUs for one job (default 4)");
  app.add_option("--res", res, "WIDTHxHEIGHT in pixels (default: the model's)");
  app.add_option("--frames", frames, "frames, video models (default: the model's)");
  auto* model_option = app.add_option("--model", model, "model profile (default flux.1-dev)");
  app.add_option("--model-config", model_config,
                 "a diffusers transformer config.json or pipeline folder, instead of --model's profile")
      ->excludes(model_option);
  app.add_option("--hardware", hardware, "hardware profile (default: the topology's, else h100-sxm)");
  app.add_option("--steps", steps, "denoising steps (default: the model's)");
  app.add_option("--batch", batch, "images generated together (split over dp replicas)");
  app.add_option("--topology", topology, "place plans on a topology (cpplan list topologies)");
  app.add_option("--nodes", nodes, "nodes of the topology, joined by its network (default 1)");
  app.add_option("--attention-backend", backend, "flash | cudnn | sage | native");
  app.add_option("--runtime", runtime, "how the framework runs it: diffusers | xdit | compiled | cpplan (default diffusers)");
  app.add_option("--framework", framework,
                 "rank only the plans this framework runs: diffusers | xdit | cache-dit | any (default any)");
  app.add_option("--framework-version", framework_versions,
                 "a framework's older layout (cpplan list frameworks), e.g. xdit-2025; repeatable");
  app.add_flag("--all", all,
               "list every plan: the fully-sharded twins of every valid plan, data parallel for one image");
  app.add_option("--text-encoder", text_encoder,
                 "replicated | offloaded | sequential | sharded (default: the fastest that fits, per plan)");
  app.add_option("--vae", vae, "single | parallel (default: the fastest that fits, per plan)");
  app.add_option("--num-pipeline-patch", pipeline_patches, "PipeFusion patches M (default: P, 2P and 4P)");
  app.add_option("--pipefusion-warmup-steps", pipefusion_warmup,
                 "PipeFusion steps run synchronously before the patch pipeline (default 1, as xDiT)");
  app.add_flag("--offload-text-encoders", offload, "the same as --text-encoder offloaded");
  app.add_flag("--no-anything", no_anything, "do not enumerate Ulysses Anything / Ring Anything");
  app.add_option("--profiles", o.profiles, "extra profile directory (models/, hardware/); repeatable");
  app.add_option("--db", o.db, "SQLite database of runs (default $XDG_DATA_HOME/cpplan/cpplan.db)");
  app.add_option("--cluster", o.cluster, "price collectives from this cluster's nccl-tests imports in --db");
  app.add_option("--sweep-file", o.sweep_file, "the Sweep tab's sweep file (TOML; Start runs it)");
  app.add_option("--screenshot", o.screenshot, "render the window to this PNG once the plans are shown, then exit");
  app.add_option("--tab", o.tab, "tab shown first: plans | heatmap | history | run | calibration | sweep | fleet");
  app.add_option("--size", size, "window size WIDTHxHEIGHT (default 1480x920)");
  app.set_version_flag("--version", "cpplan-gui 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out.exit_code = 0;
    out.message = app.help();
    return out;
  } catch (const CLI::CallForVersion&) {
    out.exit_code = 0;
    out.message = "cpplan-gui 0.1.0";
    return out;
  } catch (const CLI::ParseError& e) {
    out.exit_code = 2;
    out.message = fmt::format("cpplan-gui: {} (see cpplan-gui --help)", e.what());
    return out;
  }

  try {
    QueryInput& in = o.input;
    in.db = o.db;  // --hardware local: this machine's probes and calibration there
    in.cluster = o.cluster;
    in.model = model;
    in.model_config = model_config;
    in.framework_versions = framework_versions;
    in.all_plans = all;
    in.topology = topology;
    in.hardware = !hardware.empty() || !topology.empty() ? hardware : "h100-sxm";
    in.gpus = !gpus.empty() ? parse_int("--gpus", gpus, 1, kMaxGpus) : topology.empty() ? 4 : 0;
    in.batch = parse_int("--batch", batch, 1, 65536);
    if (!res.empty()) {
      auto r = parse_resolution(res);
      if (!r) throw Invalid{r.error().message};
      in.width = r->width;
      in.height = r->height;
    }
    if (!frames.empty()) in.frames = parse_int("--frames", frames, 1, 100000);
    if (!steps.empty()) in.steps = parse_int("--steps", steps, 1, 100000);
    const auto b = attention_backend_from_string(backend);
    if (!b) throw Invalid{fmt::format("--attention-backend = {}: must be flash, cudnn, sage or native", backend)};
    in.backend = *b;
    // --runtime is checked against the catalog by make_query below; the placements as session/query.cpp does.
    in.runtime = runtime;
    in.framework = framework;
    check_framework(framework);
    if (offload && !text_encoder.empty() && text_encoder != "offloaded")
      throw Invalid{fmt::format("--offload-text-encoders: contradicts --text-encoder = {}", text_encoder)};
    if (offload) in.text_encoder = TextEncoderPlacement::kOffloaded;
    if (!text_encoder.empty()) {
      TextEncoderPlacement te{};
      if (!text_encoder_placement_from_string(text_encoder, te))
        throw Invalid{fmt::format("--text-encoder = {}: must be replicated, offloaded, sequential or sharded",
                                  text_encoder)};
      in.text_encoder = te;
    }
    if (!vae.empty()) {
      VaePlacement v{};
      if (!vae_placement_from_string(vae, v)) throw Invalid{fmt::format("--vae = {}: must be single or parallel", vae)};
      in.vae = v;
    }
    in.allow_anything = !no_anything;
    // The CLI's parser and bounds (session::planner_options), so both fronts refuse the same values.
    session::Options pipefusion;
    pipefusion.pipeline_patches = pipeline_patches;
    pipefusion.pipefusion_warmup = pipefusion_warmup;
    try {
      const planner::PlannerOptions parsed = session::planner_options(pipefusion, true);
      in.pipeline_patches = parsed.pipeline_patches;
      in.pipefusion_warmup_steps = parsed.pipefusion_warmup_steps;
    } catch (const session::InvalidInput& e) {
      throw Invalid{e.message};
    }
    if (!size.empty()) {
      auto r = parse_resolution(size);
      if (!r) throw Invalid{fmt::format("--size = {}: must be WIDTHxHEIGHT, e.g. 1480x920", size)};
      o.width = r->width;
      o.height = r->height;
    }
    if (std::find(std::begin(kTabs), std::end(kTabs), o.tab) == std::end(kTabs))
      throw Invalid{fmt::format("--tab = {}: must be plans, heatmap, history, run, calibration, sweep or fleet", o.tab)};
    if (!o.screenshot.empty() && o.screenshot.find('.') == std::string::npos)
      throw Invalid{fmt::format("--screenshot = {}: must name an image file, e.g. shot.png", o.screenshot)};

    auto catalog = ProfileCatalog::load(profile_search_path(o.profiles, exe));
    if (!catalog) throw Invalid{catalog.error().message};
    out.catalog = std::make_shared<const ProfileCatalog>(std::move(catalog).value());
    if (!nodes.empty()) {  // as session/query.cpp's resolve_topology: the bound is the topology's
      if (topology.empty()) throw Invalid{fmt::format("--nodes = {}: needs --topology or --topology-file", nodes)};
      auto t = out.catalog->topology(topology);
      if (!t) throw Invalid{t.error().message};
      in.nodes = parse_int("--nodes", nodes, 1, kMaxGpus / (*t)->gpus);
    }
    auto resolved = resolve_model_config(out.catalog, in);  // --model-config's profile added
    if (!resolved) throw Invalid{resolved.error().message};
    auto q = make_query(*resolved->catalog, resolved->input);  // every field checked the way the planner will see it
    if (!q) throw Invalid{q.error().message};
    try {
      // --hardware local, --cluster: a database with what they need
      check_cost_model(*resolved->catalog, resolved->input);
    } catch (const session::InvalidInput& e) {
      throw Invalid{e.message};
    }
  } catch (const Invalid& e) {
    out.exit_code = 3;
    out.message = "cpplan-gui: " + e.message;
  }
  return out;
}

}  // namespace cpplan::gui
