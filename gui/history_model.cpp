#include "gui/history_model.h"

#include <filesystem>
#include <fmt/format.h>

#include "core/parallel_config.h"
#include "session/engine/calibration.h"

namespace cpplan::gui {

namespace {


std::string opt(const std::optional<double>& v, const char* format = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

// The line `cpplan run` printed for a run whose host was contended; empty otherwise.
std::string contended(const data::RunRecord& r) {
  const auto steal = session::steal_fraction(r);
  return steal ? session::contended_run_line(*steal) : std::string();
}

}  // namespace

Result<std::vector<data::StoredRun>> load_history(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::vector<data::StoredRun>{};
  auto store = data::Store::open(path);
  if (!store) return store.error();
  return store.value().runs();
}

std::string machine_name(const data::StoredRun& r) {
  const auto& h = r.hardware;
  if (!h.gpu_name.empty()) return h.gpu_count > 1 ? fmt::format("{} x {}", h.gpu_count, h.gpu_name) : h.gpu_name;
  return h.cpu_name.empty() ? h.device_kind : h.cpu_name;
}

std::optional<double> prediction_error(const data::RunRecord& r) {
  if (!r.step_ms || !r.predicted_step_ms || *r.step_ms <= 0) return std::nullopt;
  return (*r.predicted_step_ms - *r.step_ms) / *r.step_ms;
}

std::string run_details(const data::StoredRun& s) {
  const data::RunRecord& r = s.run;
  std::string out = fmt::format("run {} ({}){}\n", s.id, r.status, r.error.empty() ? "" : ": " + r.error);
  out += fmt::format("model {} at {}x{}{}, {} steps (+{} warm-up), {}, attention {}, seed {}\n", r.model, r.width,
                     r.height, r.frames > 1 ? fmt::format(", {} frames", r.frames) : "", r.steps, r.warmup, r.dtype,
                     r.attention_backend, r.seed);
  out += fmt::format("plan {} ({}), {} ranks, rotate {}{}\n", plan_label(data::parallel_config(r)),
                     display_name(classify(data::parallel_config(r).context_parallel_config)), r.world_size, r.rotate_method,
                     r.convert_to_fp32 ? "" : ", no fp32");
  out += fmt::format("measured: {} ms/step median (p10 {}, p90 {}), {} steps/s; compute {} + comm {} ms; "
                     "peak {} MiB; {} bytes sent per step\n",
                     opt(r.step_ms), opt(r.step_ms_p10), opt(r.step_ms_p90), opt(r.steps_per_sec), opt(r.compute_ms),
                     opt(r.comm_ms), r.peak_mem_bytes ? fmt::format("{:.0f}", *r.peak_mem_bytes / 1048576.0) : "-",
                     opt(r.bytes_sent, "{:.0f}"));
  if (const std::string line = contended(r); !line.empty()) out += line + '\n';
  const auto err = prediction_error(r);
  // The measured peak is the transformer's denoising loop's: its like is the transformer peak
  // (recorded since schema v4); the whole pipeline's peak is a deployment's, shown apart.
  auto mib = [](const std::optional<double>& bytes, const char* absent) {
    return bytes ? fmt::format("{:.0f} MiB", *bytes / 1048576.0) : std::string(absent);
  };
  out += fmt::format("predicted on {}: {} ms/step, {} steps/s{}; transformer peak {}, whole pipeline {}\n",
                     r.predicted_hardware.empty() ? "-" : r.predicted_hardware, opt(r.predicted_step_ms),
                     opt(r.predicted_steps_per_sec), err ? fmt::format(" (error {:+.1f}%)", *err * 100) : "",
                     mib(r.predicted_transformer_peak_bytes, "- (not recorded)"), mib(r.predicted_peak_mem_bytes, "-"));
  const auto& h = s.hardware;
  out += fmt::format("machine: {} on {} ({}; driver {}, CUDA {}, NCCL {}, torch {})\n", machine_name(s), h.host,
                     h.device_kind, h.driver.empty() ? "-" : h.driver, h.cuda.empty() ? "-" : h.cuda,
                     h.nccl.empty() ? "-" : h.nccl, h.torch.empty() ? "-" : h.torch);
  out += fmt::format("started {}, finished {}, cpplan {}\n", r.started_at, r.finished_at, r.cpplan_version);
  if (!r.step_times_ms.empty()) {
    out += "step ms:";
    for (double t : r.step_times_ms) out += fmt::format(" {:.3f}", t);
    out += '\n';
  }
  for (const auto& [name, value] : r.metrics) out += fmt::format("{} = {}\n", name, value);
  return out;
}

void HistoryModel::set_runs(std::vector<data::StoredRun> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

int HistoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int HistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const data::StoredRun& s = runs_[index.row()];
  const data::RunRecord& r = s.run;
  const auto err = prediction_error(r);
  auto number = [](const std::optional<double>& v) { return v ? QVariant(*v) : QVariant(); };
  switch (role) {
    case kModelRole: return QString::fromStdString(r.model);
    case kMachineRole: return QString::fromStdString(machine_name(s));
    case kProfileRole: return QString::fromStdString(r.predicted_hardware);
    case Qt::ToolTipRole: {
      const std::string tip = r.error.empty() ? contended(r) : r.error;
      return tip.empty() ? QVariant() : QString::fromStdString(tip);
    }
    case kSortRole:
      switch (index.column()) {
        case kId: return s.id;
        case kMeasuredMs: return number(r.step_ms);
        case kPredictedMs: return number(r.predicted_step_ms);
        case kError: return number(err);
        case kSteal: return number(session::steal_fraction(r));
        default: return data(index, Qt::DisplayRole);
      }
    case Qt::DisplayRole:
      switch (index.column()) {
        case kId: return s.id;
        case kFinished: return QString::fromStdString(r.finished_at);
        case kModel: return QString::fromStdString(r.model);
        case kSize:
          return r.frames > 1 ? QStringLiteral("%1x%2x%3").arg(r.width).arg(r.height).arg(r.frames)
                              : QStringLiteral("%1x%2").arg(r.width).arg(r.height);
        case kPlan: return QString::fromStdString(plan_label(data::parallel_config(r)));
        case kVariant: {
          const std::string_view v = display_name(classify(data::parallel_config(r).context_parallel_config));
          return QString::fromUtf8(v.data(), static_cast<int>(v.size()));
        }
        case kMachine: return QString::fromStdString(machine_name(s));
        case kStatus: return QString::fromStdString(r.status);
        case kMeasuredMs: return r.step_ms ? QString::number(*r.step_ms, 'f', 2) : QString();
        case kPredictedMs: return r.predicted_step_ms ? QString::number(*r.predicted_step_ms, 'f', 2) : QString();
        case kError: return err ? QStringLiteral("%1%").arg(*err * 100, 0, 'f', 1) : QString();
        case kSteal: {
          const auto steal = session::steal_fraction(r);
          return steal ? QStringLiteral("%1%").arg(*steal * 100, 0, 'f', 1) : QString();
        }
        default: return {};
      }
    default: return {};
  }
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"run",     "finished", "model",   "size",         "plan",
                                                   "CP variant", "machine", "status", "step ms", "predicted ms",
                                                   "error",   "host steal"};
  return section >= 0 && section < kColumnCount ? QString::fromLatin1(kNames[section]) : QVariant();
}

HistoryFilterProxy::HistoryFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(HistoryModel::kSortRole);
}

void HistoryFilterProxy::set_model_filter(const QString& model) {
  model_ = model;
  invalidateRowsFilter();
}

void HistoryFilterProxy::set_hardware_filter(const QString& hardware) {
  hardware_ = hardware;
  invalidateRowsFilter();
}

bool HistoryFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QModelIndex i = sourceModel()->index(source_row, 0, source_parent);
  if (!model_.isEmpty() && i.data(HistoryModel::kModelRole).toString() != model_) return false;
  if (!hardware_.isEmpty() && i.data(HistoryModel::kMachineRole).toString() != hardware_ &&
      i.data(HistoryModel::kProfileRole).toString() != hardware_)
    return false;
  return true;
}

}  // namespace cpplan::gui
