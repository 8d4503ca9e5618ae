#include "imports/nccl_tests.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <utility>

#include "core/text.h"

namespace cpplan::imports {

using costmodel::busbw_factor;
using costmodel::Collective;
using costmodel::CollectiveSample;

namespace {

constexpr std::array<std::pair<std::string_view, Collective>, 5> kTests = {{
    {"all_reduce_perf", Collective::kAllReduce},
    {"all_gather_perf", Collective::kAllGather},
    {"alltoall_perf", Collective::kAllToAll},
    {"reduce_scatter_perf", Collective::kReduceScatter},
    {"sendrecv_perf", Collective::kSendRecv},
}};
constexpr std::string_view kImported =
    "cpplan imports all_reduce_perf, all_gather_perf, alltoall_perf, reduce_scatter_perf and sendrecv_perf (and "
    "their MPI builds, *_perf_mpi)";

// Text table column labels, as the messages name them.
constexpr std::string_view kSize = "size(B)";
constexpr std::string_view kTime = "time(us)";
constexpr std::string_view kAlgbw = "algbw(GB/s)";
constexpr std::string_view kBusbw = "busbw(GB/s)";
constexpr std::string_view kWrong = "#wrong";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}

// Drops one launcher prefix: "12: " (srun --label), "[1,0]<stdout>:" (mpirun --tag-output) or
// "[pod/NAME/CONTAINER] " (kubectl logs --prefix, as MPIJob logs are collected).
std::string_view strip_one_prefix(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_space(line[i])) ++i;
  std::size_t digits = i;
  while (digits < line.size() && is_digit(line[digits])) ++digits;
  if (digits > i && digits < line.size() && line[digits] == ':') return line.substr(digits + 1);
  if (i < line.size() && line[i] == '[') {
    for (std::string_view tag : {"]<stdout>:", "]<stderr>:"}) {
      const std::size_t at = line.find(tag, i);
      if (at != std::string_view::npos) return line.substr(at + tag.size());
    }
    const std::size_t close = line.find(']', i);
    if (line.compare(i, 5, "[pod/") == 0 && close != std::string_view::npos) return line.substr(close + 1);
  }
  return line;
}

// Drops every launcher prefix (kubectl's before mpirun's, say).
std::string_view strip_launcher_prefix(std::string_view line) {
  for (std::string_view next = strip_one_prefix(line); next.size() < line.size(); next = strip_one_prefix(line))
    line = next;
  return line;
}

// A log line of NCCL's (`host:pid:tid [dev] NCCL INFO|WARN ...`), wherever it falls in the table.
bool is_nccl_log(std::string_view line) {
  return line.find(" NCCL INFO ") != std::string_view::npos || line.find(" NCCL WARN ") != std::string_view::npos;
}

// The whole token as a finite double.
std::optional<double> number(std::string_view token) {
  double value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<long long> whole(std::string_view token) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

// The first `name_perf` or `name_perf_mpi` word in `text` ("./build/all_reduce_perf -b 8" ->
// "all_reduce_perf").
std::optional<std::string> perf_word(std::string_view text) {
  for (std::size_t at = text.find("_perf"); at != std::string_view::npos; at = text.find("_perf", at + 1)) {
    std::size_t end = at + 5;
    if (text.compare(end, 4, "_mpi") == 0) end += 4;  // the MPI build: all_reduce_perf_mpi
    if (end < text.size() && is_word(text[end])) continue;
    std::size_t start = at;
    while (start > 0 && is_word(text[start - 1])) --start;
    if (start < at) return std::string(text.substr(start, end - start));
  }
  return std::nullopt;
}

// A result row before the test and rank count are known.
struct Row {
  std::string where;        // "file:12" or "file: results[3]"
  std::string busbw_field;  // "column busbw(GB/s)" or "out_of_place.bus_bw"
  Bytes bytes = 0;
  Microseconds time_us = 0;
  GBps algbw_gbps = 0, busbw_gbps = 0;
};

// What the file says about itself, whichever format.
struct Parsed {
  std::string test;
  std::string test_where;  // where the test was named, for messages
  std::set<long long> rank_ids;
  long long threads = 0, gpus_per_thread = 0;  // nThread, nGpus
  long long ranks = 0;                         // stated directly (JSON)
  bool gpus = false;
  std::string gpu_name;
  std::map<long long, std::string> rank_hosts;  // the device list's "on HOST"
  std::optional<GBps> avg_busbw_gbps;
  std::vector<Row> rows;
  int zero_byte_rows = 0;
};

Error row_error(const std::string& where, std::string_view column, std::string_view value, std::string_view rule) {
  return Error{fmt::format("{}: column {} = '{}': {}", where, column, value, rule)};
}

// Checks one row's numbers; `field(c)` names column c in messages.
template <class Field>
Result<Row> make_row(std::string where, Field field, std::string busbw_field, double size, double time, double algbw,
                     double busbw) {
  auto bad = [&](std::string_view column, double value, std::string_view rule) {
    return Error{fmt::format("{}: {} = {}: {}", where, field(column), value, rule)};
  };
  if (size < 0 || size != std::floor(size)) return bad(kSize, size, "must be a whole number of bytes >= 0");
  if (time < 0 || (time == 0 && size > 0)) return bad(kTime, time, "must be a time > 0");
  if (algbw < 0) return bad(kAlgbw, algbw, "must be a bandwidth >= 0");
  if (busbw < 0) return bad(kBusbw, busbw, "must be a bandwidth >= 0");
  return Row{std::move(where), std::move(busbw_field), size, time, algbw, busbw};
}

// Out-of-place columns of a result row; nccl-tests' layout unless a "# size count ..." header says otherwise.
struct Columns {
  std::size_t size = 0, time = 5, algbw = 6, busbw = 7, wrong = 8;
};

// Takes the time, algbw, busbw and #wrong columns from a "# size count type ..." header.
void read_column_header(const std::vector<std::string_view>& tokens, Columns& cols) {
  auto first = [&](std::initializer_list<std::string_view> names, std::size_t fallback) {
    for (std::size_t i = 0; i < tokens.size(); ++i)
      for (std::string_view n : names)
        if (tokens[i] == n) return i;
    return fallback;
  };
  cols.time = first({"time"}, cols.time);
  cols.algbw = first({"algbw"}, cols.algbw);
  cols.busbw = first({"busbw"}, cols.busbw);
  cols.wrong = first({"#wrong", "error"}, cols.wrong);
}

// Reads one comment line (`body` follows the '#'): test name, threads and GPUs, ranks, column
// header or average bus bandwidth; other comments are ignored.
Result<bool> parse_comment(std::string_view body, const std::string& where, Columns& cols, Parsed& p) {
  const auto tokens = split(body);
  if (tokens.empty()) return true;
  constexpr std::string_view kStarting = "Collective test starting:";
  if (body.rfind(kStarting, 0) == 0) {
    const auto name = split(body.substr(kStarting.size()));
    if (name.empty()) return true;
    if (!p.rows.empty() && !p.test.empty() && p.test != name[0]) {
      return Error{fmt::format("{}: a second test ({}) after {}: import one test per file", where, name[0], p.test)};
    }
    p.test = std::string(name[0]);
    p.test_where = where;
    return true;
  }
  if (tokens[0] == "nThread" || tokens[0] == "nThreads") {
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] == "nThread" || tokens[i] == "nThreads") p.threads = whole(tokens[i + 1]).value_or(0);
      if (tokens[i] == "nGpus") p.gpus_per_thread = whole(tokens[i + 1]).value_or(0);
    }
    p.gpus = p.gpus || p.gpus_per_thread > 0;
    return true;
  }
  if (tokens[0] == "Rank" && tokens.size() > 1 && all_digits(tokens[1])) {
    const long long rank = *whole(tokens[1]);
    p.rank_ids.insert(rank);
    p.gpus = true;
    for (std::size_t i = 2; i + 1 < tokens.size(); ++i)
      if (tokens[i] == "on") p.rank_hosts[rank] = std::string(tokens[i + 1]);
    // "Rank 0 Group 0 Pid 123 on node01 device 0 [0x18] NVIDIA H100 80GB HBM3"
    const std::size_t bus = body.find(']');
    if (p.gpu_name.empty() && bus != std::string_view::npos) p.gpu_name = std::string(trim(body.substr(bus + 1)));
    return true;
  }
  if (tokens[0] == "size") {
    read_column_header(tokens, cols);
    return true;
  }
  if (body.rfind("Avg bus bandwidth", 0) == 0) {
    const std::size_t colon = body.find(':');
    const std::string_view value = colon == std::string_view::npos ? "" : trim(body.substr(colon + 1));
    const auto avg = number(value);
    if (!avg) return Error{fmt::format("{}: Avg bus bandwidth = '{}': not a number", where, value)};
    p.avg_busbw_gbps = *avg;
    return true;
  }
  if (p.test.empty()) {
    if (auto word = perf_word(body)) {
      p.test = *word;
      p.test_where = where;
    }
  }
  return true;
}

// Reads one result row (`tokens[0]` is a byte count) into p.rows; a row with wrong results fails.
Result<bool> parse_result_row(const std::vector<std::string_view>& tokens, const std::string& where,
                              const Columns& cols, Parsed& p) {
  const std::size_t needed = std::max({cols.size, cols.time, cols.algbw, cols.busbw, cols.wrong}) + 1;
  if (tokens.size() < needed) {
    return Error{fmt::format("{}: {} columns: a result row has at least {} (size count type redop root, then "
                             "time algbw busbw #wrong out-of-place)",
                             where, tokens.size(), needed)};
  }
  auto read = [&](std::size_t column, std::string_view label) -> Result<double> {
    const auto value = number(tokens[column]);
    if (!value) return row_error(where, label, tokens[column], "not a number");
    return *value;
  };
  const auto size = whole(tokens[cols.size]);
  if (!size) return row_error(where, kSize, tokens[cols.size], "not a whole number of bytes");
  auto time = read(cols.time, kTime);
  if (!time) return time.error();
  auto algbw = read(cols.algbw, kAlgbw);
  if (!algbw) return algbw.error();
  auto busbw = read(cols.busbw, kBusbw);
  if (!busbw) return busbw.error();
  const std::string_view wrong = tokens[cols.wrong];
  if (wrong != "N/A") {
    const auto count = number(wrong);
    if (!count) return row_error(where, kWrong, wrong, "not a number or N/A");
    if (*count > 0) return row_error(where, kWrong, wrong, "the collective returned wrong results; nothing imported");
  }
  auto row = make_row(
      where, [](std::string_view c) { return fmt::format("column {}", c); }, fmt::format("column {}", kBusbw),
      static_cast<double>(*size), *time, *algbw, *busbw);
  if (!row) return row.error();
  p.rows.push_back(std::move(row).value());
  return true;
}

// Reads nccl-tests' text output line by line: comments describe the run, digit-led lines are results.
Result<bool> parse_text(std::string_view text, const std::string& file, Parsed& p) {
  Columns cols;
  int line_no = 0;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view raw = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    const std::string_view line = trim(strip_launcher_prefix(raw));
    const std::string where = fmt::format("{}:{}", file, line_no);

    if (!line.empty() && line.front() == '#') {
      if (auto ok = parse_comment(trim(line.substr(1)), where, cols, p); !ok) return ok.error();
      continue;
    }
    const auto tokens = split(line);
    if (tokens.empty() || !all_digits(tokens[0]) || is_nccl_log(line)) continue;  // logs, blank lines
    if (auto ok = parse_result_row(tokens, where, cols, p); !ok) return ok.error();
  }
  return true;
}

// `key` with case and underscores ignored ("nGpus", "n_gpus", "ngpus" are one key).
std::string folded(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '_') continue;
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

// The header facts of a -J file: nccl-tests' JSON names them in its top level or a nested
// object such as "config"; keys are matched without regard to case or underscores.
void json_header(const nlohmann::json& object, const std::string& file, Parsed& p, int depth) {
  for (const auto& [key, value] : object.items()) {
    const std::string k = folded(key);
    if (k == "results") continue;
    if (value.is_object() && depth == 0) {
      json_header(value, file, p, depth + 1);
    } else if (value.is_number_integer()) {
      if (k == "nranks" || k == "worldsize") p.ranks = value.get<long long>();
      if (k == "nthread" || k == "nthreads") p.threads = value.get<long long>();
      if (k == "ngpus" || k == "ngpu") {
        p.gpus_per_thread = value.get<long long>();
        p.gpus = p.gpus || p.gpus_per_thread > 0;
      }
    } else if (value.is_string() && p.test.empty()) {
      if (auto word = perf_word(value.get<std::string>())) {
        p.test = *word;
        p.test_where = fmt::format("{}: {}", file, key);
      }
    } else if (value.is_array() && k == "devices" && depth <= 1) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        const auto& d = value[i];
        long long rank = static_cast<long long>(i);
        if (d.is_object() && d.contains("rank") && d["rank"].is_number_integer()) rank = d["rank"].get<long long>();
        p.rank_ids.insert(rank);
        p.gpus = true;
        if (p.gpu_name.empty() && d.is_object() && d.contains("name") && d["name"].is_string()) {
          p.gpu_name = d["name"].get<std::string>();
        }
      }
    } else if (value.is_number() && (k == "avgbusbandwidth" || k == "avgbusbw")) {
      p.avg_busbw_gbps = value.get<double>();
    }
  }
}

Result<bool> parse_json(std::string_view text, const std::string& file, Parsed& p) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based; count the lines before it.
    const std::size_t byte = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n');
    return Error{fmt::format("{}:{}: not valid JSON: {}", file, line, e.what())};
  } catch (const nlohmann::json::exception& e) {
    // e.g. out_of_range.406: a number too large for a double ("1e999")
    return Error{fmt::format("{}: not valid JSON: {}", file, e.what())};
  }
  if (!doc.is_object()) return Error{fmt::format("{}: the JSON is not an object with results[]", file)};
  json_header(doc, file, p, 0);
  if (!doc.contains("results") || !doc["results"].is_array()) {
    return Error{fmt::format("{}: results: missing or not an array (nccl-tests -J output has results[])", file)};
  }
  const auto& results = doc["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = fmt::format("{}: results[{}]", file, i);
    const auto& r = results[i];
    if (!r.is_object()) return Error{fmt::format("{}: not an object", where)};
    auto field = [&](const nlohmann::json& object, std::string_view path, std::string_view name) -> Result<double> {
      if (!object.contains(name)) return Error{fmt::format("{}.{}: missing", where, path)};
      const auto& v = object[std::string(name)];
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        return Error{fmt::format("{}.{} = {}: not a number", where, path, v.dump())};
      }
      return v.get<double>();
    };
    auto size = field(r, "size", "size");
    if (!size) return size.error();
    if (!r.contains("out_of_place") || !r["out_of_place"].is_object()) {
      return Error{fmt::format("{}.out_of_place: missing or not an object", where)};
    }
    const auto& oop = r["out_of_place"];
    auto time = field(oop, "out_of_place.time", "time");
    if (!time) return time.error();
    auto algbw = field(oop, "out_of_place.alg_bw", "alg_bw");
    if (!algbw) return algbw.error();
    auto busbw = field(oop, "out_of_place.bus_bw", "bus_bw");
    if (!busbw) return busbw.error();
    if (oop.contains("nwrong")) {
      const auto& wrong = oop["nwrong"];
      const bool not_checked = wrong.is_null() || (wrong.is_string() && wrong.get<std::string>() == "N/A");
      if (!not_checked && !wrong.is_number()) {
        return Error{fmt::format("{}.out_of_place.nwrong = {}: not a number or N/A", where, wrong.dump())};
      }
      if (wrong.is_number() && wrong.get<double>() > 0) {
        return Error{fmt::format("{}.out_of_place.nwrong = {}: the collective returned wrong results; nothing imported",
                                 where, wrong.dump())};
      }
    }
    auto row = make_row(
        where,
        [](std::string_view c) {
          if (c == kSize) return std::string("size");
          if (c == kTime) return std::string("out_of_place.time");
          if (c == kAlgbw) return std::string("out_of_place.alg_bw");
          return std::string("out_of_place.bus_bw");
        },
        "out_of_place.bus_bw", *size, *time, *algbw, *busbw);
    if (!row) return row.error();
    p.rows.push_back(std::move(row).value());
  }
  return true;
}

// The test named only by the file name: a `*_perf` word, else exactly one collective's stem.
std::optional<std::string> test_from_file_name(std::string_view file) {
  const std::size_t slash = file.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  if (auto word = perf_word(base)) return word;
  std::optional<std::string> found;
  for (const auto& [name, kind] : kTests) {
    const std::string_view stem = name.substr(0, name.size() - 5);
    if (base.find(stem) == std::string_view::npos) continue;
    if (found) return std::nullopt;  // ambiguous
    found = std::string(name);
  }
  return found;
}

}  // namespace

std::optional<Collective> collective_from_nccl_test(std::string_view test) {
  if (test.size() > 4 && test.substr(test.size() - 4) == "_mpi") test.remove_suffix(4);
  for (const auto& [name, kind] : kTests) {
    if (test == name || test == name.substr(0, name.size() - 5)) return kind;
  }
  return std::nullopt;
}

namespace {

// The hosts of the device list in order of first appearance, and the most ranks on one of them.
void place_ranks(const std::map<long long, std::string>& rank_hosts, NcclTestsFile& out) {
  std::map<std::string, int> per_host;
  for (const auto& [rank, host] : rank_hosts) {
    if (per_host[host]++ == 0) out.hosts.push_back(host);
    out.ranks_per_node = std::max(out.ranks_per_node, per_host[host]);
  }
}

Result<NcclTestsFile> parse_file(std::string_view text, std::string_view file_name, const NcclTestsOptions& options) {
  const std::string file(file_name);
  Parsed p;
  const std::string_view body = trim(text);
  auto parsed = !body.empty() && body.front() == '{' ? parse_json(text, file, p) : parse_text(text, file, p);
  if (!parsed) return parsed.error();
  if (p.rows.empty()) {
    return Error{fmt::format("{}: no result rows (lines of size count type redop root time algbw busbw ...)", file)};
  }

  if (!options.collective.empty()) {
    p.test = options.collective;
    p.test_where = file;
  } else if (p.test.empty()) {
    if (auto named = test_from_file_name(file)) {
      p.test = *named;
      p.test_where = file;
    }
  }
  if (p.test.empty()) {
    return Error{fmt::format("{}: cannot tell which test this is: no '# Collective test starting:' line and no *_perf "
                             "name in the header or the file name; name it (e.g. --collective all_reduce_perf)",
                             file)};
  }
  const auto kind = collective_from_nccl_test(p.test);
  if (!kind) return Error{fmt::format("{}: test {}: {}", p.test_where, p.test, kImported)};

  long long ranks = options.ranks;
  std::string ranks_from = fmt::format("--ranks {}", options.ranks);
  if (ranks <= 0) {
    if (p.ranks > 0) {
      ranks = p.ranks;
      ranks_from = fmt::format("nranks {} in the file", p.ranks);
    } else if (!p.rank_ids.empty()) {
      ranks = static_cast<long long>(p.rank_ids.size());
      ranks_from = fmt::format("{} ranks in the device list", ranks);
    } else if (p.gpus_per_thread > 0) {
      const long long threads = std::max(p.threads, 1LL);  // nccl-tests' default: one thread
      ranks = threads * p.gpus_per_thread;
      ranks_from = fmt::format("nThread {} x nGpus {}", threads, p.gpus_per_thread);
    } else {
      return Error{fmt::format("{}: cannot tell the number of ranks: no device list and no 'nThread T nGpus G' "
                               "header; pass --ranks N",
                               file)};
    }
  }
  if (ranks > (1 << 20)) return Error{fmt::format("{}: {} ranks ({}): more than cpplan plans for", file, ranks, ranks_from)};

  NcclTestsFile out;
  out.test = p.test;
  out.ranks = static_cast<int>(ranks);
  out.gpus = p.gpus;
  out.gpu_name = p.gpu_name;
  out.avg_busbw_gbps = p.avg_busbw_gbps;
  place_ranks(p.rank_hosts, out);
  // nccl-tests prints busbw = algbw x factor, both rounded to 0.01: a row that disagrees by more
  // than the rounding was measured on another number of ranks than the one assumed (e.g. an MPI
  // run, one GPU per process, whose device list was cut). Its sendrecv factor is 1 even alone.
  const double factor = *kind == Collective::kSendRecv ? 1.0 : busbw_factor(*kind, out.ranks);
  for (const Row& row : p.rows) {
    if (row.bytes == 0) continue;  // no bandwidth in it (nccl-tests prints 0.00)
    const double expected = row.algbw_gbps * factor;
    if (std::abs(row.busbw_gbps - expected) > 0.02 + 1e-3 * row.busbw_gbps) {
      return Error{fmt::format("{}: {} = {}: not algbw {} x {:.4g} ({}'s bus factor for {} ranks, from {}); the "
                               "rank count is wrong, pass --ranks N",
                               row.where, row.busbw_field, row.busbw_gbps, row.algbw_gbps, factor, p.test, out.ranks,
                               ranks_from)};
    }
    CollectiveSample s;
    s.kind = *kind;
    s.ranks = out.ranks;
    s.uneven = false;
    s.bytes = row.bytes;
    s.time_us = row.time_us;
    s.algbw_gbps = row.algbw_gbps;
    s.busbw_gbps = row.busbw_gbps;
    s.nodes = options.nodes > 0 ? options.nodes : std::max(1, out.nodes());
    out.samples.push_back(s);
  }
  if (out.samples.empty()) return Error{fmt::format("{}: only rows of 0 bytes: no bandwidth to import", file)};
  return out;
}

}  // namespace

Result<NcclTestsFile> parse_nccl_tests_file(std::string_view text, std::string_view file_name,
                                            const NcclTestsOptions& options) {
  auto parsed = parse_file(text, file_name, options);
  // Messages quote the file's tokens and keys, which may hold control characters: one line.
  if (!parsed) return Error{printable(parsed.error().message)};
  return parsed;
}

Result<std::vector<CollectiveSample>> parse_nccl_tests(std::string_view text, std::string_view file_name,
                                                       const NcclTestsOptions& options) {
  auto file = parse_nccl_tests_file(text, file_name, options);
  if (!file) return file.error();
  return std::move(file).value().samples;
}

}  // namespace cpplan::imports
