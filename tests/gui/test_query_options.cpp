// The GUI's batch, topology and nodes: make_query applies them as `cpplan --batch --topology
// --nodes` does (the topology's hardware and nodes x its GPUs by default, the CLI's one-line
// errors), cpplan-gui's flags of the same names, and the query panel's widgets; the framework the
// ranking is restricted to (cpplan --framework) likewise, and a diffusers config (--model-config),
// the framework files (--framework-version) and every plan (--all).
#include <catch2/catch.hpp>

#include <QDoubleSpinBox>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>

#include "gui/args.h"
#include "gui/main_window.h"
#include "gui/plan_table_model.h"
#include "gui/planning.h"
#include "gui/query_panel.h"
#include "planner/frameworks.h"
#include "tests/gui/gui_support.h"

using cpplan::gui::QueryInput;
using cpplan::test::shared_catalog;

namespace {

QueryInput on_topology(const std::string& topology, int nodes) {
  QueryInput in;
  in.topology = topology;
  in.nodes = nodes;
  in.gpus = 0;        // the topology's
  in.hardware = "";   // the topology's
  return in;
}

std::string error_of(const QueryInput& in) {
  auto q = cpplan::gui::make_query(*shared_catalog(), in);
  return q ? std::string("(no error)") : q.error().message;
}

// A query panel on the shared catalog showing `in`, with the last query it emitted.
struct WatchedPanel {
  explicit WatchedPanel(const QueryInput& in) {
    QObject::connect(&panel, &cpplan::gui::QueryPanel::changed, [this](const QueryInput& q) { last = q; });
    panel.set_input(in);
  }
  int app = (cpplan::test::gui_app(), 0);  // the application before any widget
  cpplan::gui::QueryPanel panel{shared_catalog()};
  std::optional<QueryInput> last;
};

cpplan::gui::ParsedArgs parse(std::vector<const char*> argv) {
  argv.insert(argv.begin(), "cpplan-gui");
  return cpplan::gui::parse_args(static_cast<int>(argv.size()), argv.data(), "");
}

}  // namespace

TEST_CASE("A topology sets the hardware and GPU count, as the CLI's defaults", "[gui][query][topology]") {
  // profiles/topologies/dgx-h100.toml: hardware = "h100-sxm", gpus = 8
  auto q = cpplan::gui::make_query(*shared_catalog(), on_topology("dgx-h100", 2));
  REQUIRE(q);
  REQUIRE(q->topology != nullptr);
  CHECK(q->topology->name == "dgx-h100");
  CHECK(q->nodes == 2);
  CHECK(q->gpus == 16);
  CHECK(q->hardware->name == "h100-sxm");

  // 0 nodes (not given): one node, all of its GPUs; an explicit hardware profile stays
  QueryInput one = on_topology("8x-l40s-pcie", 0);
  one.hardware = "l20";
  q = cpplan::gui::make_query(*shared_catalog(), one);
  REQUIRE(q);
  CHECK(q->nodes == 1);
  CHECK(q->gpus == 8);
  CHECK(q->hardware->name == "l20");

  // fewer GPUs than one node holds
  QueryInput part = on_topology("dgx-h100", 0);
  part.gpus = 4;
  q = cpplan::gui::make_query(*shared_catalog(), part);
  REQUIRE(q);
  CHECK(q->gpus == 4);

  // no topology: none placed
  q = cpplan::gui::make_query(*shared_catalog(), QueryInput{});
  REQUIRE(q);
  CHECK(q->topology == nullptr);
  CHECK(q->nodes == 1);
}

TEST_CASE("Bad topology, nodes, GPU and batch values are the CLI's one-line errors", "[gui][query][errors]") {
  QueryInput no_topology;
  no_topology.nodes = 2;
  CHECK(error_of(no_topology) == "--nodes = 2: h100-sxm's profile describes no node ([node]): name the box with --topology or --topology-file, or give --gpus alone (8 GPUs per node)");

  QueryInput wrong_gpus = on_topology("dgx-h100", 2);
  wrong_gpus.gpus = 12;
  CHECK(error_of(wrong_gpus) == "--gpus = 12: must equal --nodes x dgx-h100's 8 GPUs = 16 (or leave --gpus out)");

  QueryInput too_many = on_topology("dgx-h100", 0);
  too_many.gpus = 9;
  CHECK(error_of(too_many) == "--gpus = 9: must be at most dgx-h100's 8 GPUs (add --nodes N for more)");

  // 131072 GPUs at most: 16384 nodes of 8
  CHECK(error_of(on_topology("dgx-h100", 16385)) == "--nodes = 16385: must be between 1 and 16384");

  // No GPU count and no topology: the CLI asks nvidia-smi. The test machines have no GPU; where
  // nvidia-smi lists some, the query plans for them and this line does not apply.
  QueryInput no_gpus;
  no_gpus.gpus = 0;
  const std::string no_gpus_error = error_of(no_gpus);
  if (no_gpus_error != "(no error)")
    CHECK(no_gpus_error ==
          "--gpus: required (the number of GPUs; nvidia-smi lists none here), e.g. cpplan --gpus 4 --res 1024x1024");

  QueryInput batch;
  batch.batch = 0;
  CHECK(error_of(batch) == "--batch = 0: must be between 1 and 65536");

  const std::string unknown = error_of(on_topology("dgx-h900", 1));
  CHECK(unknown.rfind("--topology = dgx-h900:", 0) == 0);
  CHECK(unknown.find('\n') == std::string::npos);
}

TEST_CASE("The batch decides which data-parallel plans are valid", "[gui][query][batch]") {
  // dp replicas each generate their own images: dp 2 needs an even batch, dp 4 a multiple of 4
  auto dp_valid = [](int batch, int dp) {
    QueryInput in;
    in.gpus = 4;
    in.batch = batch;
    const auto r = cpplan::gui::compute_plans(shared_catalog(), in, 1);
    REQUIRE(r.error.empty());
    REQUIRE(r.query->batch == batch);
    return std::any_of(r.report.plans.begin(), r.report.plans.end(),
                       [dp](const auto& p) { return p.plan.config.dp_degree == dp && p.plan.valid(); });
  };
  CHECK(!dp_valid(1, 2));
  CHECK(dp_valid(2, 2));
  CHECK(!dp_valid(2, 4));
  CHECK(dp_valid(4, 4));
  CHECK(!dp_valid(3, 2));
}

TEST_CASE("cpplan-gui takes --batch, --topology and --nodes as the CLI does", "[gui][query][args]") {
  auto ok = parse({"--topology", "dgx-h100", "--nodes", "2", "--batch", "2"});
  REQUIRE(ok.exit_code == -1);
  CHECK(ok.options.input.topology == "dgx-h100");
  CHECK(ok.options.input.nodes == 2);
  CHECK(ok.options.input.batch == 2);
  CHECK(ok.options.input.gpus == 0);         // the topology's: 16
  CHECK(ok.options.input.hardware.empty());  // the topology's: h100-sxm

  auto plain = parse({});
  REQUIRE(plain.exit_code == -1);
  CHECK(plain.options.input.gpus == 4);
  CHECK(plain.options.input.hardware == "h100-sxm");
  CHECK(plain.options.input.batch == 1);
  CHECK(plain.options.input.nodes == 0);

  auto nodes_alone = parse({"--nodes", "2"});
  CHECK(nodes_alone.exit_code == 3);
  CHECK(nodes_alone.message == "cpplan-gui: --nodes = 2: h100-sxm's profile describes no node ([node]): name the box with --topology or --topology-file, or give --gpus alone (8 GPUs per node)");
  auto bad_batch = parse({"--batch", "two"});
  CHECK(bad_batch.exit_code == 3);
  CHECK(bad_batch.message == "cpplan-gui: --batch = two: must be an integer");
  auto bad_nodes = parse({"--topology", "dgx-h100", "--nodes", "0"});
  CHECK(bad_nodes.exit_code == 3);
  CHECK(bad_nodes.message == "cpplan-gui: --nodes = 0: must be between 1 and 16384");
  auto mismatch = parse({"--topology", "dgx-h100", "--nodes", "2", "--gpus", "8"});
  CHECK(mismatch.exit_code == 3);
  CHECK(mismatch.message == "cpplan-gui: --gpus = 8: must equal --nodes x dgx-h100's 8 GPUs = 16 (or leave --gpus out)");
  auto unknown = parse({"--topology", "nope"});
  CHECK(unknown.exit_code == 3);
  CHECK(unknown.message.rfind("cpplan-gui: --topology = nope:", 0) == 0);
}

TEST_CASE("The query panel's batch, topology and nodes reach the query", "[gui][query][panel]") {
  cpplan::test::gui_app();
  cpplan::gui::QueryPanel panel(shared_catalog());
  QComboBox* topology = panel.topology_box();
  // "none", then every topology of the catalog (cpplan list topologies)
  REQUIRE(topology->count() == static_cast<int>(shared_catalog()->topologies().size()) + 1);
  CHECK(topology->itemText(0) == "none");
  CHECK(topology->findText("dgx-h100") > 0);
  CHECK(topology->findText("4x-rtx4090-pcie") > 0);
  CHECK(!panel.nodes_box()->isEnabled());
  CHECK(panel.input().topology.empty());
  CHECK(panel.input().nodes == 0);

  std::optional<QueryInput> last;
  QObject::connect(&panel, &cpplan::gui::QueryPanel::changed, [&](const QueryInput& in) { last = in; });
  topology->setCurrentIndex(topology->findText("4x-rtx4090-pcie"));
  REQUIRE(last);
  CHECK(last->topology == "4x-rtx4090-pcie");
  CHECK(last->nodes == 1);
  CHECK(last->gpus == 4);            // the node's 4 GPUs
  CHECK(last->hardware == "rtx4090");
  CHECK(panel.nodes_box()->isEnabled());

  panel.nodes_box()->setValue(3);
  CHECK(last->nodes == 3);
  CHECK(last->gpus == 12);
  panel.batch_box()->setValue(6);
  CHECK(last->batch == 6);
  REQUIRE(cpplan::gui::make_query(*shared_catalog(), *last));

  topology->setCurrentIndex(0);
  CHECK(last->topology.empty());
  CHECK(last->nodes == 0);
  // rtx4090 describes its usual server ([node], 8 GPUs): nodes of it stay open, as the CLI's --nodes
  // without --topology; 2 of them are 16 GPUs. An H100 (NVSwitch, no [node]) has none.
  CHECK(panel.nodes_box()->isEnabled());
  panel.nodes_box()->setValue(2);
  CHECK(last->nodes == 2);
  CHECK(last->gpus == 16);
  REQUIRE(cpplan::gui::make_query(*shared_catalog(), *last));
  panel.hardware_box()->setCurrentIndex(panel.hardware_box()->findText("h100-sxm"));
  CHECK(!panel.nodes_box()->isEnabled());
  CHECK(last->nodes == 0);

  // set_input with the topology's defaults left open ("" hardware, 0 GPUs) fills them in
  panel.set_input(on_topology("dgx-h100", 2));
  CHECK(last->topology == "dgx-h100");
  CHECK(last->nodes == 2);
  CHECK(last->gpus == 16);
  CHECK(last->hardware == "h100-sxm");
}

TEST_CASE("cpplan-gui takes --num-pipeline-patch and --pipefusion-warmup-steps as the CLI does", "[gui][query][pipefusion]") {
  const auto args = parse({"--gpus", "4", "--res", "1024x1024", "--num-pipeline-patch", "8", "--pipefusion-warmup-steps",
                           "3"});
  REQUIRE(args.exit_code == -1);
  CHECK(args.options.input.pipeline_patches == 8);
  CHECK(args.options.input.pipefusion_warmup_steps == 3);
  const auto r = cpplan::gui::compute_plans(shared_catalog(), args.options.input, 1);
  REQUIRE(r.error.empty());
  int pipefusion = 0;
  for (const auto& p : r.report.plans) {
    if (p.plan.config.pp() == 1) continue;
    ++pipefusion;
    CHECK(p.plan.config.pipefusion == cpplan::PipeFusionConfig{p.plan.config.pp(), 8, 3});
  }
  // P = 2 with ring, ulysses or cfg, and P = 4: one patch count each (dp 2 x P = 2 is not listed
  // for one image)
  CHECK(pipefusion == 4);
  // the CLI's bounds and lines
  const auto bad = parse({"--gpus", "4", "--num-pipeline-patch", "0"});
  CHECK(bad.exit_code == 3);
  CHECK(bad.message == "cpplan-gui: --num-pipeline-patch = 0: must be between 1 and 131072");
  const auto bad_warmup = parse({"--gpus", "4", "--pipefusion-warmup-steps", "x"});
  CHECK(bad_warmup.exit_code == 3);
  CHECK(bad_warmup.message == "cpplan-gui: --pipefusion-warmup-steps = x: must be an integer");
}

TEST_CASE("cpplan-gui's --framework: the CLI's values, its one-line error, the panel's combo",
          "[gui][query][framework]") {
  const auto diffusers = parse({"--framework", "diffusers"});
  REQUIRE(diffusers.exit_code == -1);
  CHECK(diffusers.options.input.framework == "diffusers");
  CHECK(parse({}).options.input.framework == "any");
  for (const char* name : {"xdit", "cache-dit", "any"}) CHECK(parse({"--framework", name}).exit_code == -1);

  const auto bad = parse({"--framework", "deepspeed"});
  CHECK(bad.exit_code == 3);  // as the CLI's invalid input
  CHECK(bad.message == "cpplan-gui: --framework = deepspeed: must be diffusers, xdit, cache-dit, sglang, vllm-omni, cpplan or any");
  // compute_plans says the same of a QueryInput no flag checked
  QueryInput in;
  in.framework = "deepspeed";
  const auto r = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  CHECK(r.error == "--framework = deepspeed: must be diffusers, xdit, cache-dit, sglang, vllm-omni, cpplan or any");
  CHECK(r.report.plans.empty());

  // The panel shows the flag's framework and emits the query with it.
  cpplan::test::gui_app();
  cpplan::gui::QueryPanel panel(shared_catalog());
  std::optional<QueryInput> last;
  QObject::connect(&panel, &cpplan::gui::QueryPanel::changed, [&](const QueryInput& q) { last = q; });
  panel.set_input(diffusers.options.input);
  CHECK(panel.framework_box()->currentText() == "diffusers");
  REQUIRE(last);
  CHECK(last->framework == "diffusers");
  panel.framework_box()->setCurrentIndex(panel.framework_box()->findText("xdit"));
  CHECK(last->framework == "xdit");
  CHECK(panel.input().framework == "xdit");
}

TEST_CASE("A framework keeps only the valid plans it runs and counts the others", "[gui][query][framework]") {
  // flux.1-dev at 1008x1008 on 4 GPUs: 8 valid plans (test_plan_table.cpp): 4 of the anything
  // modes, tp 4, and pipefusion 4 with 4, 8 and 16 patches. xDiT needs even splits (no anything
  // modes) and offers no tensor parallelism for FLUX (planner/frameworks.cpp): it runs the 3
  // PipeFusion plans and leaves out 5.
  QueryInput in;
  in.gpus = 4;
  in.width = in.height = 1008;
  const auto all = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  in.framework = "xdit";
  const auto xdit = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  REQUIRE(xdit.error.empty());
  REQUIRE(all.report.valid_count == 8);
  CHECK(xdit.report.framework == cpplan::planner::Framework::kXdit);
  CHECK(xdit.report.valid_count == 3);
  CHECK(xdit.report.hidden_count == 5);
  CHECK(xdit.report.invalid_count == all.report.invalid_count);  // invalid plans stay, with their reasons
  for (const auto& p : xdit.report.plans)
    if (p.plan.valid()) CHECK(p.frameworks.has(cpplan::planner::Framework::kXdit));
}

TEST_CASE("cpplan-gui takes --model-config, --framework-version and --all as the CLI does", "[gui][query][args]") {
  const std::string config = std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/diffusers/flux.1-dev/config.json";
  const auto ok = parse({"--model-config", config.c_str(), "--framework-version", "xdit-2025", "--all"});
  REQUIRE(ok.exit_code == -1);
  CHECK(ok.options.input.model_config == config);
  CHECK(ok.options.input.framework_versions == std::vector<std::string>{"xdit-2025"});
  CHECK(ok.options.input.all_plans);
  const auto plain = parse({});
  CHECK(plain.options.input.model_config.empty());
  CHECK(plain.options.input.framework_versions.empty());
  CHECK_FALSE(plain.options.input.all_plans);

  // --model-config replaces --model: both are a usage error, as in the CLI
  CHECK(parse({"--model", "flux.1-dev", "--model-config", config.c_str()}).exit_code == 2);
  // a config that cannot be read, an unknown framework file: the CLI's lines (exit 3)
  const auto missing = parse({"--model-config", "/no/such/config.json"});
  CHECK(missing.exit_code == 3);
  QueryInput missing_in;
  missing_in.model_config = "/no/such/config.json";
  const auto missing_error = cpplan::gui::resolve_model_config(shared_catalog(), missing_in);
  REQUIRE_FALSE(missing_error);
  CHECK(missing.message == "cpplan-gui: " + missing_error.error().message);
  CHECK_THAT(missing.message, Catch::Contains("/no/such/config.json"));
  CHECK(missing.message.find('\n') == std::string::npos);
  const auto unknown = parse({"--framework-version", "xdit-1999"});
  CHECK(unknown.exit_code == 3);
  QueryInput in;
  in.framework_versions = {"xdit-1999"};
  CHECK(unknown.message == "cpplan-gui: " + error_of(in));
}

TEST_CASE("The query panel's model config, framework versions and every-plan box reach the query",
          "[gui][query][panel]") {
  cpplan::test::gui_app();
  cpplan::gui::QueryPanel panel(shared_catalog());
  std::optional<QueryInput> last;
  QObject::connect(&panel, &cpplan::gui::QueryPanel::changed, [&](const QueryInput& in) { last = in; });
  CHECK(panel.model_config_button()->text() == "Model config...");
  CHECK_FALSE(panel.clear_config_button()->isEnabled());
  CHECK(panel.config_error_label()->isHidden());

  // a video model's pipeline config: its profile's defaults (frames enabled), the model list off
  const std::string config = std::string(CPPLAN_TEST_PROFILES) + "/../tests/data/diffusers/wan2.1-t2v-1.3b/config.json";
  REQUIRE(panel.set_model_config(QString::fromStdString(config)));
  REQUIRE(last);
  CHECK(last->model_config == config);
  CHECK_FALSE(panel.model_box()->isEnabled());
  const auto resolved = cpplan::gui::resolve_model_config(shared_catalog(), *last);
  REQUIRE(resolved);
  CHECK(resolved->input.model_config.empty());
  const cpplan::ModelProfile* m = resolved->catalog->find_model(resolved->input.model);
  REQUIRE(m != nullptr);
  CHECK(m->video);
  CHECK(last->width == m->default_width);
  CHECK(last->frames == m->default_frames);
  CHECK(shared_catalog()->find_model(resolved->input.model) == nullptr);  // the shared catalog is untouched
  CHECK(cpplan::gui::make_query(*resolved->catalog, resolved->input));

  // set_input shows a query's config, versions and every-plan choice; "" clears the config
  QueryInput in;
  in.framework_versions = {"xdit-2025"};
  in.all_plans = true;
  panel.set_input(in);
  CHECK(last->model_config.empty());
  CHECK(panel.model_box()->isEnabled());
  CHECK(last->framework_versions == std::vector<std::string>{"xdit-2025"});
  CHECK(last->all_plans);
  CHECK(panel.all_plans_box()->isChecked());
  CHECK(panel.framework_version_box(cpplan::Framework::kXdit)->currentIndex() == 1);
  panel.all_plans_box()->setChecked(false);
  CHECK_FALSE(last->all_plans);
  panel.framework_version_box(cpplan::Framework::kXdit)->setCurrentIndex(0);
  CHECK(last->framework_versions.empty());
}

TEST_CASE("The idle-transformer offload reaches the query from cpplan-gui's flag and the panel, as the CLI's",
          "[gui][query][panel]") {
  const auto ok = parse({"--model", "wan22-tiny", "--offload-idle-transformer"});
  REQUIRE(ok.exit_code == -1);
  CHECK(ok.options.input.offload_idle_transformer);
  CHECK_FALSE(parse({}).options.input.offload_idle_transformer);
  QueryInput two;
  two.model = "wan22-tiny";
  two.offload_idle_transformer = true;
  const auto q = cpplan::gui::make_query(*shared_catalog(), two);
  REQUIRE(q);
  CHECK(q->offload_idle_transformer);
  // A one-transformer model: the CLI's one line.
  QueryInput one;
  one.offload_idle_transformer = true;
  CHECK(error_of(one) == "--offload-idle-transformer: flux.1-dev has one transformer: nothing is idle to offload");

  // The panel's box: enabled for a pipeline of two transformers, off and disabled for one.
  cpplan::test::gui_app();
  cpplan::gui::QueryPanel panel(shared_catalog());
  std::optional<QueryInput> last;
  QObject::connect(&panel, &cpplan::gui::QueryPanel::changed, [&](const QueryInput& in) { last = in; });
  CHECK_FALSE(panel.offload_transformer_box()->isEnabled());  // flux.1-dev
  QueryInput in;
  in.model = "wan22-tiny";
  panel.set_input(in);
  CHECK(panel.offload_transformer_box()->isEnabled());
  panel.offload_transformer_box()->setChecked(true);
  REQUIRE(last);
  CHECK(last->offload_idle_transformer);
  in.model = "flux.1-dev";
  panel.set_input(in);
  CHECK_FALSE(panel.offload_transformer_box()->isEnabled());
  CHECK_FALSE(last->offload_idle_transformer);
}

TEST_CASE("The query panel's host memory is the CLI's --host-mem, and 0 the profile's", "[gui][query][memory]") {
  cpplan::test::gui_app();
  const auto catalog = cpplan::test::shared_catalog();
  cpplan::gui::QueryPanel panel(catalog);
  cpplan::gui::QueryInput in;
  in.gpus = 8;
  in.hardware = "l20";
  in.host_mem_gib = 256;
  panel.set_input(in);
  CHECK(panel.host_mem_box()->value() == 256);
  auto q = cpplan::gui::make_query(*catalog, panel.input());
  REQUIRE(q.ok());
  CHECK(q->host_memory_gib == 256);
  panel.host_mem_box()->setValue(0);
  CHECK(panel.host_mem_box()->text() == QStringLiteral("profile's"));
  q = cpplan::gui::make_query(*catalog, panel.input());
  REQUIRE(q.ok());
  CHECK(q->host_memory_gib == catalog->find_hardware("l20")->host_memory_gib);  // l20.toml [memory] host_gib
}

TEST_CASE("cpplan-gui's --dtype: the CLI's formats and refusals, the panel's combo", "[gui][query][precision]") {
  const auto fp8 = parse({"--dtype", "fp8"});
  REQUIRE(fp8.exit_code == -1);
  CHECK(fp8.options.input.dtype == "fp8");
  CHECK(parse({}).options.input.dtype.empty());  // bf16
  const auto bad = parse({"--dtype", "fp16"});
  CHECK(bad.exit_code == 3);
  CHECK(bad.message ==
        "cpplan-gui: --dtype = fp16: must be bf16 | fp8 | fp8-row | fp8-static | fp8-weight-only | int8 | int8-weight-only | "
        "nvfp4 | mxfp4 | any (or several, separated by commas)");
  // The GPU refuses a format it has no tensor cores for, in the CLI's line; a format it runs plans
  // with its weights at the format's bytes (FLUX.1-dev's block linears in e4m3: less memory).
  QueryInput in;
  in.gpus = 2;
  in.dtype = fp8.options.input.dtype;
  const auto r = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  REQUIRE(r.error.empty());
  QueryInput bf16_in = in;
  bf16_in.dtype = "bf16";
  const auto bf16 = cpplan::gui::compute_plans(shared_catalog(), bf16_in, 1);
  // The transformer whole on every GPU (no TP, PipeFusion or fully sharded weights): its weights.
  auto whole_weights = [](const auto& report) {
    for (const auto& p : report.plans)
      if (p.predicted && p.plan.config.tp() == 1 && p.plan.config.pp() == 1 && p.plan.config.fs() == 1)
        return p.predicted->memory.transformer_weights;
    return 0.0;
  };
  REQUIRE(whole_weights(bf16.report) > 0);
  CHECK(whole_weights(r.report) < 0.75 * whole_weights(bf16.report));
  in.dtype = "nvfp4";
  const auto refused = cpplan::gui::compute_plans(shared_catalog(), in, 1);
  CHECK(refused.error.rfind("--dtype = nvfp4: nvfp4 GEMMs do not run on h100-sxm", 0) == 0);

  // The panel shows the flag's format and emits the query with the one picked.
  WatchedPanel watched(fp8.options.input);
  cpplan::gui::QueryPanel& panel = watched.panel;
  const std::optional<QueryInput>& last = watched.last;
  CHECK(panel.dtype_box()->currentText() == "fp8");
  panel.dtype_box()->setCurrentIndex(panel.dtype_box()->findText("fp8-row"));
  REQUIRE(last);
  CHECK(last->dtype == "fp8-row");
  CHECK(panel.input().dtype == "fp8-row");
}

TEST_CASE("cpplan-gui's --cache and --dtype any: the flags, the panel's controls and the table's columns",
          "[gui][query][cache]") {
  // The flags, parsed by the CLI's code: any, a policy with its parameters, the CLI's refusals.
  const auto any = parse({"--cache", "any", "--dtype", "any", "--gpus", "8"});
  REQUIRE(any.exit_code == -1);
  CHECK(any.options.input.cache == "any");
  CHECK(any.options.input.dtype == "any");
  const auto db = parse({"--cache", "dbcache", "--cache-fn", "4", "--cache-hit-rate", "0.3"});
  REQUIRE(db.exit_code == -1);
  CHECK(db.options.input.cache_fn == 4);
  CHECK(db.options.input.cache_hit_rate == 0.3);
  const auto refused = parse({"--cache", "fbcache", "--cache-fn", "2"});
  CHECK(refused.exit_code == 3);
  CHECK(refused.message ==
        "cpplan-gui: --cache-fn = 2: --cache fbcache runs the first block alone (F1B0; dbcache sets others)");
  const auto unknown = parse({"--cache", "fbcache,lru"});
  CHECK(unknown.exit_code == 3);
  CHECK(unknown.message.rfind("cpplan-gui: --cache = lru: must be none, fbcache", 0) == 0);

  // The panel: the policy's parameters enabled where it takes them (FBCache is F1B0: no first or
  // last blocks; a threshold: no interval), and the query it emits is the CLI's options.
  WatchedPanel watched(db.options.input);
  cpplan::gui::QueryPanel& panel = watched.panel;
  const std::optional<QueryInput>& last = watched.last;
  CHECK(panel.cache_box()->currentText() == "dbcache");
  CHECK(panel.cache_fn_box()->value() == 4);
  CHECK(panel.cache_fn_box()->isEnabled());
  CHECK(panel.cache_bn_box()->isEnabled());
  CHECK_FALSE(panel.cache_every_box()->isEnabled());
  CHECK(panel.cache_hit_rate_box()->value() == Approx(0.3));
  CHECK(panel.cache_bn_box()->text() == "policy's");  // not given: the policy's (B0)
  panel.cache_box()->setCurrentIndex(panel.cache_box()->findText("fbcache"));
  REQUIRE(last);
  CHECK(last->cache == "fbcache");
  CHECK_FALSE(panel.cache_fn_box()->isEnabled());
  CHECK_FALSE(panel.cache_bn_box()->isEnabled());
  CHECK_FALSE(last->cache_fn);  // a box the policy does not take is not given
  CHECK(last->cache_hit_rate == Approx(0.3));
  const cpplan::session::Options o = cpplan::gui::options_of(*last);
  CHECK(o.cache == "fbcache");
  CHECK(o.cache_hit_rate == "0.3");
  CHECK(o.cache_fn.empty());
  panel.cache_box()->setCurrentIndex(panel.cache_box()->findText("taylorseer"));
  CHECK(panel.cache_every_box()->isEnabled());  // its interval
  CHECK_FALSE(panel.cache_hit_rate_box()->isEnabled());
  panel.cache_box()->setCurrentIndex(panel.cache_box()->findText("none"));
  for (QWidget* box : std::initializer_list<QWidget*>{panel.cache_fn_box(), panel.cache_bn_box(), panel.cache_warmup_box(),
                                                      panel.cache_every_box(), panel.cache_hit_rate_box(),
                                                      panel.cache_max_cached_box()})
    CHECK_FALSE(box->isEnabled());
  panel.dtype_box()->setCurrentIndex(panel.dtype_box()->findText("any"));
  panel.cache_box()->setCurrentIndex(panel.cache_box()->findText("any"));
  CHECK(last->dtype == "any");
  CHECK(last->cache == "any");

  // The plans of any x any: each with its format and cache, the table's columns showing them, as
  // `cpplan --dtype any --cache any` ranks them (the same first plan, format and cache).
  const auto r = cpplan::gui::compute_plans(shared_catalog(), any.options.input, 1);
  REQUIRE(r.error.empty());
  REQUIRE(r.query->ranks_precisions());
  REQUIRE(r.query->ranks_caches());
  cpplan::gui::PlanTableModel table;
  table.set_plans(r.report.plans);
  const auto& top = r.report.plans.front();
  CHECK(table.index(0, cpplan::gui::PlanTableModel::kDtype).data().toString().toStdString() == cpplan::to_string(top.precision));
  CHECK(table.index(0, cpplan::gui::PlanTableModel::kCache).data().toString().toStdString() ==
        std::string(cpplan::to_string(top.cache.policy)));
  CHECK(table.headerData(cpplan::gui::PlanTableModel::kCache, Qt::Horizontal).toString() == "cache");
  const std::string cli = cpplan::test::command_output(std::string(CPPLAN_BINARY) +
                                                       " --gpus 8 --hardware h100-sxm --dtype any --cache any --json");
  const auto j = nlohmann::json::parse(cli);
  CHECK(j["plans"][0]["label"] == cpplan::plan_label(top.plan.config));
  CHECK(j["plans"][0]["dtype"] == cpplan::to_string(top.precision));
  CHECK(r.report.valid_count == j["valid_plans"]);

  // The window shows the columns of the axes ranked, and hides them for a query of one of each.
  cpplan::test::TempDir dir;
  cpplan::gui::MainWindow w(shared_catalog(), QString::fromStdString(dir.file("runs.db")));
  const auto shown = [&](const QueryInput& in) {
    w.set_query(in);
    while (w.planning()) REQUIRE(cpplan::test::wait_for(&w, &cpplan::gui::MainWindow::plans_shown));
    REQUIRE(w.result()->error.empty());
    return std::pair(!w.plan_table()->isColumnHidden(cpplan::gui::PlanTableModel::kDtype),
                     !w.plan_table()->isColumnHidden(cpplan::gui::PlanTableModel::kCache));
  };
  QueryInput only_cache = any.options.input;
  only_cache.dtype.clear();
  CHECK(shown(only_cache) == std::pair(false, true));
  CHECK(shown(any.options.input) == std::pair(true, true));
  CHECK(w.status_text().contains("valid plans with a dtype and cache"));
  CHECK(shown(QueryInput{}) == std::pair(false, false));
}
