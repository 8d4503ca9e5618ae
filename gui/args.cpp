#include "gui/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <sstream>
#include <string_view>
#include <fmt/format.h>

#include "session/query/query_fields.h"
#include "session/query/query_flags.h"

namespace cpplan::gui {

namespace {

constexpr const char* kTabs[] = {"plans", "heatmap", "history", "run", "calibration", "sweep", "fleet", "recommendation"};

struct Invalid {
  std::string message;
};

// The query panel's values of the query flags, once session::build_query has accepted them (so
// every parse below succeeds; the parsers are the CLI's own, session/query/query.h).
QueryInput query_input(const session::Options& q, const planner::PlannerOptions& planner) {
  QueryInput in;
  in.model = q.model;
  in.model_config = q.model_config;
  in.framework_versions = q.framework_versions;
  in.all_plans = q.all;
  in.topology = q.topology;
  in.hardware = q.hardware;  // "" with a topology: the topology's
  in.gpus = q.gpus.empty() ? 0 : session::parse_int_field("--gpus", q.gpus);  // 0: the topology's
  in.batch = session::parse_int_field("--batch", q.batch);
  if (!q.res.empty()) {
    auto r = parse_resolution(q.res);
    if (!r) throw session::InvalidInput{r.error().message};
    in.width = r->width;
    in.height = r->height;
  }
  if (!q.frames.empty()) in.frames = session::parse_int_field("--frames", q.frames);
  if (!q.steps.empty()) in.steps = session::parse_int_field("--steps", q.steps);
  if (!q.nodes.empty()) in.nodes = session::parse_int_field("--nodes", q.nodes);
  if (const auto b = attention_backend_from_string(q.backend)) in.backend = *b;
  in.dtype = q.precision;
  in.cache = q.cache;
  const auto integer = [](std::string_view flag, const std::string& text) {
    return text.empty() ? std::nullopt : std::optional<int>(session::parse_int_field(flag, text));
  };
  in.cache_fn = integer("--cache-fn", q.cache_fn);
  in.cache_bn = integer("--cache-bn", q.cache_bn);
  in.cache_warmup = integer("--cache-warmup", q.cache_warmup);
  in.cache_every = integer("--cache-every", q.cache_every);
  in.cache_max_cached = integer("--cache-max-cached", q.cache_max_cached);
  if (!q.cache_hit_rate.empty()) in.cache_hit_rate = session::parse_number_field("--cache-hit-rate", q.cache_hit_rate);
  in.runtime = q.runtime;  // "": the framework's
  in.framework = q.framework;
  if (q.offload) in.text_encoder = TextEncoderPlacement::kOffloaded;
  in.offload_idle_transformer = q.offload_idle_transformer;
  if (!q.host_mem.empty()) in.host_mem_gib = session::parse_number_field("--host-mem", q.host_mem);
  if (!q.text_encoder.empty()) {
    TextEncoderPlacement te{};
    if (text_encoder_placement_from_string(q.text_encoder, te)) in.text_encoder = te;
  }
  if (!q.vae.empty()) {
    VaePlacement v{};
    if (vae_placement_from_string(q.vae, v)) in.vae = v;
  }
  in.pipeline_patches = planner.pipeline_patches;
  in.pipefusion_warmup_steps = planner.pipefusion_warmup_steps;
  return in;
}

}  // namespace

ParsedArgs parse_args(int argc, const char* const* argv, const std::string& exe) {
  ParsedArgs out;
  session::Options q;  // the query flags, declared once for both fronts
  std::string size;
  GuiOptions& o = out.options;
  CLI::App app{"cpplan-gui: explore the planner's configurations (Qt); the query flags are the CLI's", "cpplan-gui"};
  session::add_query_flags(app, q);
  app.add_flag(std::string(session::flag_of("no_anything")), q.no_anything, session::query_field("no_anything").help);
  session::add_field_option(app, "db", o.db);
  session::add_field_option(app, "cluster", o.cluster);
  app.add_option("--sweep-file", o.sweep_file, "the Sweep tab's sweep file (TOML; Start runs it)");
  app.add_option("--screenshot", o.screenshot, "render the window to this PNG once the plans are shown, then exit");
  app.add_option("--tab", o.tab, "tab shown first: plans | heatmap | history | run | calibration | sweep | fleet | recommendation");
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
    session::apply_gui_defaults(q);  // --gpus 4, --hardware h100-sxm: no nvidia-smi (session/query/query_flags.h)
    q.db = o.db;  // --hardware local: this machine's probes and calibration there
    q.cluster = o.cluster;
    o.profiles = q.profiles;
    auto catalog = ProfileCatalog::load(profile_search_path(q.profiles, exe));
    if (!catalog) throw session::InvalidInput{catalog.error().message};
    out.catalog = std::make_shared<const ProfileCatalog>(std::move(catalog).value());
    {
      // Every query flag checked by the CLI's parser, in its order and its words (cpplan's
      // build_query, then session::planner_options).
      std::ostringstream notes;
      const session::Context ctx = session::build_query(q, *out.catalog, notes);
    }
    const planner::PlannerOptions planner = session::planner_options(q, true);
    // The query fields the panel has no control for (the table's fronts): refused rather than dropped.
    for (const session::QueryField& f : session::query_fields())
      if (!f.accepted_by(session::kGuiFront) && session::field_set(q, f))
        throw session::InvalidInput{fmt::format("{} = {}: cpplan-gui's query panel has no field for it (cpplan takes it)",
                                                f.flag, session::field_text(q, f))};
    QueryInput& in = o.input;
    in = query_input(q, planner);
    in.db = o.db;
    in.cluster = o.cluster;
    in.allow_anything = !q.no_anything;

    if (!size.empty()) {
      auto r = parse_resolution(size);
      if (!r) throw Invalid{fmt::format("--size = {}: must be WIDTHxHEIGHT, e.g. 1480x920", size)};
      o.width = r->width;
      o.height = r->height;
    }
    if (std::find(std::begin(kTabs), std::end(kTabs), o.tab) == std::end(kTabs))
      throw Invalid{fmt::format("--tab = {}: must be plans, heatmap, history, run, calibration, sweep, fleet or recommendation", o.tab)};
    if (!o.screenshot.empty() && o.screenshot.find('.') == std::string::npos)
      throw Invalid{fmt::format("--screenshot = {}: must name an image file, e.g. shot.png", o.screenshot)};

    auto resolved = resolve_model_config(out.catalog, in);  // --model-config's profile added
    if (!resolved) throw Invalid{resolved.error().message};
    auto query = make_query(*resolved->catalog, resolved->input);  // as the panel's queries will be planned
    if (!query) throw Invalid{query.error().message};
    // --hardware local, --cluster: a database with what they need
    check_cost_model(resolved->catalog, resolved->input);
  } catch (const session::InvalidInput& e) {
    out.exit_code = 3;
    out.message = "cpplan-gui: " + e.message;
  } catch (const Invalid& e) {
    out.exit_code = 3;
    out.message = "cpplan-gui: " + e.message;
  }
  return out;
}

}  // namespace cpplan::gui
