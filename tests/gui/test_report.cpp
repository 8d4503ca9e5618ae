// cpplan report's library (report/) over a real SQLite file written with data::Store: the
// figures (MAPE, Spearman, worst run per machine and plan kind, busbw medians and log-log
// interpolation), REPORT.md with the numbers recomputed here from the inserted values, and the
// PNGs (size, content, the y = x line); an empty database and one without predictions give a
// report that says so; an --out that cannot be written is one line. Off-screen Qt.
#include <catch2/catch.hpp>

#include <QColor>
#include <QImage>
#include <QSet>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <stdlib.h>
#include <string>
#include <vector>

#include "tests/support/machines.h"
#include "tests/support/temp_dir.h"
#include "data/store.h"
#include "report/report.h"

namespace fs = std::filesystem;
using cpplan::costmodel::Collective;
using cpplan::costmodel::CollectiveSample;
using cpplan::data::HardwareFingerprint;
using cpplan::data::RunRecord;
using cpplan::data::Store;
namespace report = cpplan::report;

namespace {

// Temp directories named cpplan-report-XXXXXX.
struct TempDir : cpplan::test::TempDir {
  TempDir() : cpplan::test::TempDir("cpplan-report-") {}
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

using cpplan::test::cpu_box;
using cpplan::test::gpu_box;

// What the test inserts, so that it can recompute every figure itself.
struct Inserted {
  std::string machine;  // report label
  std::string kind;
  std::string plan;
  double measured_ms, predicted_ms;
  long long id = 0;
};

RunRecord run_of(int ring, int ulysses, int tp, int cfg, double measured_ms, std::optional<double> predicted_ms) {
  RunRecord r;
  r.model = "flux-tiny";
  r.width = r.height = 128;
  r.steps = 4;
  r.warmup = 1;
  r.dtype = "float32";
  r.ring = ring;
  r.ulysses = ulysses;
  r.tp = tp;
  r.cfg = cfg;
  r.world_size = ring * ulysses * tp * cfg;
  r.attention_backend = "flash";
  r.status = "ok";
  r.started_at = "2025-01-01T00:00:00Z";
  r.finished_at = "2025-01-01T00:00:05Z";
  r.cpplan_version = "0.1.0";
  r.step_ms = measured_ms;
  r.steps_per_sec = 1e3 / measured_ms;
  r.predicted_step_ms = predicted_ms;
  r.predicted_hardware = predicted_ms ? "local" : "";
  r.step_times_ms = {measured_ms};
  return r;
}

CollectiveSample sample(Collective kind, int ranks, bool uneven, double bytes, double busbw_gbps) {
  CollectiveSample s;
  s.kind = kind;
  s.ranks = ranks;
  s.uneven = uneven;
  s.bytes = bytes;
  s.busbw_gbps = busbw_gbps;
  s.algbw_gbps = busbw_gbps;  // ranks 2: all_gather's factor is 1/2, not what this test checks
  s.time_us = bytes / (busbw_gbps * 1e3);
  return s;
}

const std::string kCpu = "Test CPU 9000 (box1)";
const std::string kGpu = "8 x NVIDIA H100 80GB HBM3 (node7)";

// Eight compared runs of five plan kinds on two machines, a failed run, a run without prediction;
// collective samples of two collectives (all_to_all even and uneven) and a calibration on the CPU.
std::vector<Inserted> fill(Store& store) {
  std::vector<Inserted> runs = {
      {kCpu, "single rank", "single GPU", 10, 12},    {kCpu, "Ulysses", "ulysses 2", 20, 15},
      {kCpu, "Ulysses", "ulysses 2", 8, 8.8},         {kCpu, "Ring", "ring 2", 30, 33},
      {kCpu, "Ring + CFG", "ring 2 x cfg 2", 40, 30}, {kCpu, "Ulysses", "ulysses 2", 12, 12.6},
      {kGpu, "Ulysses", "ulysses 2", 5, 5.5},         {kGpu, "TP", "tp 2", 3, 2.4},
  };
  for (Inserted& i : runs) {
    const int ring = i.plan.find("ring") != std::string::npos ? 2 : 1;
    const int ulysses = i.plan.find("ulysses") != std::string::npos ? 2 : 1;
    const int tp = i.plan.find("tp") != std::string::npos ? 2 : 1;
    const int cfg = i.plan.find("cfg") != std::string::npos ? 2 : 1;
    auto id = store.record_run(i.machine == kCpu ? cpu_box() : gpu_box(),
                               run_of(ring, ulysses, tp, cfg, i.measured_ms, i.predicted_ms));
    REQUIRE(id.ok());
    i.id = id.value();
  }
  RunRecord failed = run_of(1, 2, 1, 1, 1, std::nullopt);
  failed.status = "failed";
  failed.error = "rank 1: killed by signal 9";
  failed.step_ms.reset();
  failed.steps_per_sec.reset();
  failed.step_times_ms.clear();
  REQUIRE(store.record_run(cpu_box(), failed).ok());
  REQUIRE(store.record_run(cpu_box(), run_of(1, 2, 1, 1, 50, std::nullopt)).ok());

  cpplan::costmodel::MeasurementSet set;
  // all_gather, 2 ranks: 1 KiB x 4 ... 16 MiB, busbw 0.5 GB/s x 2 per step of 4; three samples at
  // 1 MiB (busbw 2, 9, 4: median 4).
  double busbw = 0.5;
  for (double bytes = 1024; bytes <= 16 * 1048576.0; bytes *= 4, busbw *= 2)
    set.collectives.push_back(sample(Collective::kAllGather, 2, false, bytes, bytes == 1048576 ? 2 : busbw));
  set.collectives.push_back(sample(Collective::kAllGather, 2, false, 1048576, 9));
  set.collectives.push_back(sample(Collective::kAllGather, 2, false, 1048576, 4));
  // all_to_all, 2 ranks: 1 KiB -> 1, 16 KiB -> 16, 256 KiB -> 32 GB/s; uneven at 1 KiB and 1 MiB.
  set.collectives.push_back(sample(Collective::kAllToAll, 2, false, 1024, 1));
  set.collectives.push_back(sample(Collective::kAllToAll, 2, false, 16 * 1024, 16));
  set.collectives.push_back(sample(Collective::kAllToAll, 2, false, 256 * 1024, 32));
  set.collectives.push_back(sample(Collective::kAllToAll, 2, true, 1024, 0.5));
  set.collectives.push_back(sample(Collective::kAllToAll, 2, true, 1048576, 8));
  REQUIRE(store.record_measurements(cpu_box(), set, "probe").ok());

  cpplan::costmodel::Calibration c;
  c.fitted_at = "2025-01-02T00:00:00Z";
  c.features = {"gemm_ms", "step_const_ms"};
  c.coefficients = {1.1, 0.5};
  c.runs = 6;
  c.folds = 3;
  c.mape_before = 0.313;
  c.mape_after = 0.118;
  c.rank_corr_before = 0.8;
  c.rank_corr_after = 0.94;
  REQUIRE(store.record_calibration(cpu_box(), c).ok());
  return runs;
}

double mape_of(const std::vector<const Inserted*>& runs) {
  double sum = 0;
  for (const Inserted* r : runs) sum += std::abs(r->predicted_ms - r->measured_ms) / r->measured_ms;
  return sum / static_cast<double>(runs.size());
}

// Spearman without ties: 1 - 6 sum d^2 / (n (n^2 - 1)).
double spearman_of(const std::vector<const Inserted*>& runs) {
  auto ranks = [&](auto value) {
    std::vector<double> r(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i)
      for (std::size_t j = 0; j < runs.size(); ++j) r[i] += value(runs[j]) < value(runs[i]) ? 1 : 0;
    return r;
  };
  const auto rp = ranks([](const Inserted* r) { return r->predicted_ms; });
  const auto rm = ranks([](const Inserted* r) { return r->measured_ms; });
  double d2 = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) d2 += (rp[i] - rm[i]) * (rp[i] - rm[i]);
  const double n = static_cast<double>(runs.size());
  return 1 - 6 * d2 / (n * (n * n - 1));
}

template <class Pred>
std::vector<const Inserted*> select(const std::vector<Inserted>& runs, Pred pred) {
  std::vector<const Inserted*> out;
  for (const Inserted& r : runs)
    if (pred(r)) out.push_back(&r);
  return out;
}

// Pixels within `tolerance` (per channel) of `colour`, and the number of distinct colours.
int pixels_near(const QImage& image, QColor colour, int tolerance = 24) {
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      if (std::abs(c.red() - colour.red()) <= tolerance && std::abs(c.green() - colour.green()) <= tolerance &&
          std::abs(c.blue() - colour.blue()) <= tolerance)
        ++n;
    }
  return n;
}

int distinct_colours(const QImage& image) {
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) colours.insert(image.pixel(x, y));
  return colours.size();
}

// The line of a markdown table whose first cell is `first`.
std::string row_of(const std::string& md, const std::string& first) {
  const std::string start = "| " + first + " |";
  std::size_t at = md.find("\n" + start);
  if (at == std::string::npos) return "";
  ++at;
  return md.substr(at, md.find('\n', at) - at);
}

const QColor kIdentityRed(0xd6, 0x27, 0x28);
const QColor kFirstKindBlue(0x1f, 0x77, 0xb4);

}  // namespace

TEST_CASE("the report's figures are the runs' MAPE, Spearman and worst run per machine and plan kind",
          "[gui][report]") {
  TempDir dir;
  auto store = Store::open(dir.file("runs.db"));
  REQUIRE(store.ok());
  const auto runs = fill(store.value());
  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  const report::Figures& f = figures.value();

  CHECK(f.runs_total == 10);
  CHECK(f.runs_ok == 9);
  CHECK(f.runs_failed == 1);
  CHECK(f.runs_without_prediction == 1);
  REQUIRE(f.points.size() == 8);
  REQUIRE(f.machines.size() == 2);
  CHECK(f.machines[0].label == kCpu);
  CHECK(f.machines[0].runs_compared == 6);
  CHECK(f.machines[0].collective_samples == 15);
  REQUIRE(f.machines[0].calibration.has_value());
  CHECK(f.machines[0].calibration->version == 1);
  CHECK_FALSE(f.machines[1].calibration.has_value());

  REQUIRE(f.overall.has_value());
  CHECK(f.overall->mape == Approx(mape_of(select(runs, [](auto&) { return true; }))));
  CHECK(*f.overall->spearman == Approx(spearman_of(select(runs, [](auto&) { return true; }))));
  REQUIRE(f.by_kind.size() == 5);  // alphabetical
  CHECK(f.by_kind[0].group == "Ring");
  CHECK(f.by_kind[3].group == "Ulysses");
  const auto ulysses = select(runs, [](const Inserted& r) { return r.kind == "Ulysses"; });
  CHECK(f.by_kind[3].runs == 4);
  CHECK(f.by_kind[3].mape == Approx(mape_of(ulysses)));
  CHECK(*f.by_kind[3].spearman == Approx(spearman_of(ulysses)));
  CHECK(f.by_kind[3].worst.run_id == runs[1].id);  // 15 predicted vs 20 measured: -25%
  CHECK_FALSE(f.by_kind[0].spearman.has_value());  // one Ring run: no rank correlation
  REQUIRE(f.by_machine.size() == 2);
  CHECK(f.by_machine[1].mape == Approx(mape_of(select(runs, [](const Inserted& r) { return r.machine == kGpu; }))));
}

TEST_CASE("busbw curves take the median of a size and interpolate log-log inside the measured range",
          "[gui][report]") {
  TempDir dir;
  auto store = Store::open(dir.file("runs.db"));
  REQUIRE(store.ok());
  fill(store.value());
  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  const auto& curves = figures.value().busbw;
  REQUIRE(curves.size() == 3);  // all_gather, all_to_all even, all_to_all uneven
  CHECK(curves[0].collective_name() == "all_gather");
  CHECK(curves[0].points.size() == 8);
  CHECK(*curves[0].busbw_at(1048576) == Approx(4.0));  // median of 2, 9, 4
  CHECK(*curves[0].busbw_at(4096) == Approx(1.0));
  CHECK_FALSE(curves[0].busbw_at(512).has_value());
  CHECK_FALSE(curves[0].busbw_at(256 * 1048576.0).has_value());
  CHECK(curves[1].collective_name() == "all_to_all");
  // log-log: 1 KiB -> 1, 16 KiB -> 16 puts 4 KiB at 4; 16 KiB -> 16, 256 KiB -> 32 puts 64 KiB at sqrt(512).
  CHECK(*curves[1].busbw_at(4096) == Approx(4.0));
  CHECK(*curves[1].busbw_at(65536) == Approx(std::sqrt(16.0 * 32.0)));
  CHECK(curves[2].collective_name() == "all_to_all (uneven)");
}

TEST_CASE("the report writes REPORT.md with the numbers of the inserted runs and non-blank PNGs", "[gui][report]") {
  TempDir dir;
  const std::string db = dir.file("runs.db");
  std::vector<Inserted> runs;
  {
    auto store = Store::open(db);
    REQUIRE(store.ok());
    runs = fill(store.value());
  }
  auto store = Store::open(db);
  REQUIRE(store.ok());
  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  const std::string out = dir.file("out/nested");  // created with its parent
  report::Options options;
  options.width_px = 800;
  options.height_px = 500;
  auto written = report::write_report(figures.value(), out, options);
  REQUIRE(written.ok());
  REQUIRE(written->markdown_path == out + "/REPORT.md");
  const std::string md = read_file(written->markdown_path);
  INFO(md);

  CHECK_THAT(md, Catch::Contains("- runs: 10 (9 ok, 1 failed, 0 cancelled)\n"
                                 "- compared with their prediction (ok, measured and predicted step time): 8\n"
                                 "- ok and measured, but recorded without a prediction: 1\n\n"));
  CHECK_THAT(row_of(md, kCpu), Catch::Contains("| cpu | torch 1.13.1 | 7 / 1 / 0 | 6 | 15 | 0 | v1 |"));
  CHECK_THAT(md, Catch::Contains("`" + cpu_box().key() + "`"));

  // Per plan kind and per machine: n, MAPE and Spearman recomputed from the inserted values.
  const auto ulysses = select(runs, [](const Inserted& r) { return r.kind == "Ulysses"; });
  CHECK(row_of(md, "Ulysses") ==
        fmt::format("| Ulysses | 4 | {:.1f}% | {:.2f} | #{} flux-tiny ulysses 2: -25.0% (15 vs 20 ms) |",
                    mape_of(ulysses) * 100, spearman_of(ulysses), runs[1].id));
  CHECK(row_of(md, "Ring + CFG") ==
        fmt::format("| Ring + CFG | 1 | 25.0% | - | #{} flux-tiny ring 2 x cfg 2: -25.0% (30 vs 40 ms) |", runs[4].id));
  const auto on_cpu = select(runs, [](const Inserted& r) { return r.machine == kCpu; });
  CHECK_THAT(row_of(md, kCpu + " | 6"), Catch::StartsWith(fmt::format("| {} | 6 | {:.1f}% | {:.2f} |", kCpu,
                                                                      mape_of(on_cpu) * 100, spearman_of(on_cpu))));
  const auto all = select(runs, [](auto&) { return true; });
  CHECK_THAT(md, Catch::Contains(fmt::format("| **all** | 8 | {:.1f}% | {:.2f} |", mape_of(all) * 100, spearman_of(all))));
  CHECK_THAT(row_of(md, "local"), Catch::StartsWith(fmt::format("| local | 8 | {:.1f}% |", mape_of(all) * 100)));

  // The calibration as stored, the busbw table (median, interpolated, out of range) and the links.
  CHECK_THAT(md, Catch::Contains(fmt::format("| {} | 1 | 2025-01-02T00:00:00Z | 6 | 3 | 31.3% | 11.8% | 0.80 | 0.94 |", kCpu)));
  CHECK(row_of(md, kCpu + " | all_gather") == fmt::format("| {} | all_gather | 2 | 1.00 | 4.00 | 4.00 | 64.00 | - | 64.00 at 16 MiB |", kCpu));
  CHECK(row_of(md, kCpu + " | all_to_all") == fmt::format("| {} | all_to_all | 2 | 4.00 | 22.63 | - | - | - | 32.00 at 256 KiB |", kCpu));
  CHECK_THAT(md, Catch::Contains("| all_to_all (uneven) | 2 | "));
  for (const char* link : {"![predicted vs measured step time](scatter.png)",
                           "![prediction error by plan kind](error-by-kind.png)",
                           "![busbw of all_gather vs message size](busbw-all_gather.png)",
                           "![busbw of all_to_all vs message size](busbw-all_to_all.png)"})
    CHECK_THAT(md, Catch::Contains(link));
  CHECK_THAT(md, !Catch::Contains("skipped"));

  REQUIRE(written->plots.size() == 4);
  for (const report::Plot& plot : written->plots) {
    INFO(plot.file);
    CHECK(plot.skipped.empty());
    QImage image;
    REQUIRE(image.load(QString::fromStdString(out + "/" + plot.file), "PNG"));
    CHECK(image.width() == 800);
    CHECK(image.height() == 500);
    CHECK(distinct_colours(image) > 100);  // text, axes, series, antialiasing: not a blank canvas
    CHECK(pixels_near(image, kFirstKindBlue) > 25);  // the first kind's dot(s) / the first curve
  }
  QImage scatter(QString::fromStdString(out + "/scatter.png"));
  // The y = x line crosses the plot area's diagonal (about 400 px long) in its own red.
  CHECK(pixels_near(scatter, kIdentityRed) > 300);
  QImage errors(QString::fromStdString(out + "/error-by-kind.png"));
  CHECK(pixels_near(errors, kIdentityRed) < 30);  // red marks y = x only
}

TEST_CASE("step times spanning decades go on log axes with the y = x line across them", "[gui][report]") {
  TempDir dir;
  auto store = Store::open(dir.file("runs.db"));
  REQUIRE(store.ok());
  // 1 ms ... 900 ms: a linear axis would put every small run on the origin.
  for (const auto& [measured, predicted] : {std::pair{1.0, 1.3}, {4.0, 3.0}, {30.0, 33.0}, {200.0, 150.0},
                                            {900.0, 1000.0}})
    REQUIRE(store.value().record_run(cpu_box(), run_of(1, 2, 1, 1, measured, predicted)).ok());
  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  auto written = report::write_report(figures.value(), dir.file("out"));
  REQUIRE(written.ok());
  QImage scatter(QString::fromStdString(dir.file("out/scatter.png")));
  REQUIRE(scatter.width() == 960);
  REQUIRE(scatter.height() == 600);
  CHECK(pixels_near(scatter, kIdentityRed) > 300);
  // On log axes the five dots (Ulysses, the only kind: the first colour) stand apart, more than
  // 40 px from each other; on a linear axis 1, 4 and 30 ms would be one cluster at the origin.
  std::vector<int> columns;
  for (int x = 0; x < scatter.width(); ++x)
    for (int y = 0; y < scatter.height(); ++y)
      if (pixels_near(scatter.copy(x, y, 1, 1), kFirstKindBlue, 10) == 1) {
        columns.push_back(x);
        break;
      }
  std::vector<int> clusters;
  for (int x : columns)
    if (clusters.empty() || x - clusters.back() > 40) clusters.push_back(x);
    else clusters.back() = x;
  CHECK(clusters.size() >= 5);  // five dots (the legend's marker may add one)
}

TEST_CASE("an empty database gives a report that says so, without plots", "[gui][report]") {
  TempDir dir;
  auto store = Store::open(dir.file("empty.db"));
  REQUIRE(store.ok());
  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  auto written = report::write_report(figures.value(), dir.file("out"));
  REQUIRE(written.ok());
  const std::string md = read_file(written->markdown_path);
  CHECK_THAT(md, Catch::Contains("The database is empty: no runs, samples or calibrations."));
  CHECK_THAT(md, Catch::Contains("No run has both a measured and a predicted step time"));
  CHECK_THAT(md, Catch::Contains("Plot \"predicted vs measured step time\" skipped: no run has both"));
  CHECK_THAT(md, Catch::Contains("No calibration is stored"));
  CHECK_THAT(md, Catch::Contains("Plot \"busbw vs message size\" skipped: no collective samples"));
  CHECK_THAT(md, !Catch::Contains("!["));
  for (const auto& entry : fs::directory_iterator(dir.file("out"))) CHECK(entry.path().filename() == "REPORT.md");
}

TEST_CASE("runs without predictions are counted and the comparison plots skipped", "[gui][report]") {
  TempDir dir;
  auto store = Store::open(dir.file("runs.db"));
  REQUIRE(store.ok());
  REQUIRE(store.value().record_run(cpu_box(), run_of(1, 2, 1, 1, 20, std::nullopt)).ok());
  REQUIRE(store.value().record_run(cpu_box(), run_of(2, 1, 1, 1, 30, std::nullopt)).ok());
  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  CHECK(figures.value().runs_without_prediction == 2);
  auto written = report::write_report(figures.value(), dir.file("out"));
  REQUIRE(written.ok());
  const std::string md = read_file(written->markdown_path);
  CHECK_THAT(md, Catch::Contains("predicted step time): 0\n- ok and measured, but recorded without a prediction: 2\n"));
  CHECK_THAT(md, Catch::Contains("nothing to compare (2 measured runs were recorded without a prediction)"));
  CHECK_THAT(md, Catch::Contains("Plot \"prediction error by plan kind\" skipped"));
  CHECK_FALSE(fs::exists(dir.file("out/scatter.png")));
}

TEST_CASE("an output directory that cannot be created is one line naming it", "[gui][report]") {
  TempDir dir;
  std::ofstream(dir.file("a-file")) << "x";
  const std::string out = dir.file("a-file/report");  // a regular file as parent: even root cannot
  auto ready = report::prepare_output_dir(out);
  REQUIRE_FALSE(ready.ok());
  CHECK_THAT(ready.error().message, Catch::StartsWith("--out " + out + ": cannot create the directory: "));
  CHECK(ready.error().message.find('\n') == std::string::npos);
  auto is_file = report::prepare_output_dir(dir.file("a-file"));
  REQUIRE_FALSE(is_file.ok());
  CHECK(is_file.error().message == "--out " + dir.file("a-file") + ": is not a directory");

  report::Figures empty;
  report::Options tiny;
  tiny.width_px = 10;
  auto refused = report::write_report(empty, dir.file("out"), tiny);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "width_px = 10: must be between 200 and 8192");
}

TEST_CASE("plan kinds name the CP variant and the other axes in use", "[gui][report]") {
  CHECK(report::plan_kind(run_of(1, 1, 1, 1, 1, 1.0)) == "single rank");
  CHECK(report::plan_kind(run_of(2, 2, 1, 1, 1, 1.0)) == "Unified");
  RunRecord anything = run_of(1, 3, 1, 1, 1, 1.0);
  anything.ulysses_anything = true;
  CHECK(report::plan_kind(anything) == "Ulysses Anything");
  RunRecord hybrid = run_of(1, 1, 2, 2, 1, 1.0);
  hybrid.dp = 2;
  CHECK(report::plan_kind(hybrid) == "TP + CFG + DP");
}

TEST_CASE("peak memory compares the measured transformer peak with the predicted transformer peak, not the pipeline's",
          "[gui][report]") {
  TempDir dir;
  auto store = Store::open(dir.file("runs.db"));
  REQUIRE(store.ok());
  constexpr double kMiB = 1024.0 * 1024.0;
  // CPU: 200 MiB measured, 180 MiB predicted (-10%); 100 MiB measured, 130 MiB predicted (+30%).
  // GPU: 40 GiB measured, 38 GiB predicted (-5%). The whole pipeline's predicted peaks (far larger:
  // text encoders and the VAE) must not enter the figures.
  struct Peak {
    bool gpu;
    double measured, transformer, pipeline;
  };
  const std::vector<Peak> peaks = {{false, 200 * kMiB, 180 * kMiB, 9000 * kMiB},
                                   {false, 100 * kMiB, 130 * kMiB, 9000 * kMiB},
                                   {true, 40960 * kMiB, 38912 * kMiB, 70000 * kMiB}};
  std::vector<long long> ids;
  for (const Peak& p : peaks) {
    RunRecord r = run_of(1, 2, 1, 1, 10, 11);
    r.peak_mem_bytes = p.measured;
    r.predicted_transformer_peak_bytes = p.transformer;
    r.predicted_peak_mem_bytes = p.pipeline;
    auto id = store.value().record_run(p.gpu ? gpu_box() : cpu_box(), r);
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  RunRecord before_v4 = run_of(1, 2, 1, 1, 10, 11);  // as a v3 store recorded it: the pipeline's only
  before_v4.peak_mem_bytes = 150 * kMiB;
  before_v4.predicted_peak_mem_bytes = 9000 * kMiB;
  REQUIRE(store.value().record_run(cpu_box(), before_v4).ok());
  RunRecord pipeline = run_of(1, 2, 1, 1, 10, std::nullopt);  // a user's pipeline: the whole pipeline's peak
  pipeline.source = "pipeline";
  pipeline.peak_mem_bytes = 30000 * kMiB;
  REQUIRE(store.value().record_run(gpu_box(), pipeline).ok());

  auto figures = report::gather(store.value());
  REQUIRE(figures.ok());
  const report::Figures& f = figures.value();
  REQUIRE(f.memory_points.size() == 3);
  CHECK(f.memory_unpredicted == 1);  // the v3-style run; the pipeline run is not the executor's
  REQUIRE(f.memory_overall.has_value());
  CHECK(f.memory_overall->mape == Approx((0.10 + 0.30 + 0.05) / 3));
  CHECK(f.memory_overall->worst.run_id == ids[1]);
  REQUIRE(f.memory_by_machine.size() == 2);
  CHECK(f.memory_by_machine[0].group == kCpu);
  CHECK(f.memory_by_machine[0].runs == 2);
  CHECK(f.memory_by_machine[0].mape == Approx(0.20));
  CHECK(f.memory_by_machine[1].mape == Approx(0.05));

  const std::string md = report::markdown(f, {});
  CHECK_THAT(md, Catch::Contains("## Peak memory"));
  CHECK_THAT(md, Catch::Contains(fmt::format("| {} | 2 | 20.0% | #{} flux-tiny ulysses 2: +30.0% (130 MiB vs 100 MiB) |",
                                             kCpu, ids[1])));
  CHECK_THAT(md, Catch::Contains("| **all** | 3 | 15.0% |"));
  CHECK_THAT(md, Catch::Contains("1 executor runs with a measured peak have no predicted transformer peak: recorded "
                                 "before schema v4"));
}
