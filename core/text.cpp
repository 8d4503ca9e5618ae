#include "core/text.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <numeric>
#include <utility>

#include "core/units.h"

namespace cpplan {

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  const int threshold = std::max<int>(2, static_cast<int>(name.size()) / 3);
  std::vector<std::pair<int, std::string>> scored;
  for (const auto& c : candidates) {
    int d = edit_distance(name, c);
    const bool prefix = !name.empty() && (c.rfind(name, 0) == 0 || name.rfind(c, 0) == 0);
    if (prefix) d = std::min(d, 1);
    if (d <= threshold) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < limit; ++i) out.push_back(scored[i].second);
  return out;
}

std::string join_or(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

std::size_t find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: sequence length and the allowed range of the second byte (Unicode table 3-7).
    int length = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b == 0xe0) length = 3, lo = 0xa0;
    else if (b == 0xed) length = 3, hi = 0x9f;  // no surrogates
    else if (b >= 0xe1 && b <= 0xef) length = 3;
    else if (b == 0xf0) length = 4, lo = 0x90;
    else if (b == 0xf4) length = 4, hi = 0x8f;  // nothing above U+10FFFF
    else if (b >= 0xf1 && b <= 0xf3) length = 4;
    else return i;
    if (i + length > text.size()) return i;
    for (int k = 1; k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xbf)) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

std::string human_bytes(double bytes) {
  constexpr std::pair<double, const char*> kUnits[] = {{kGiB, "GiB"}, {kMiB, "MiB"}, {1024.0, "KiB"}};
  for (const auto& [size, name] : kUnits) {
    if (bytes >= size) {
      const double n = bytes / size;
      return n == std::floor(n) ? fmt::format("{:.0f} {}", n, name) : fmt::format("{:.1f} {}", n, name);
    }
  }
  return fmt::format("{:.0f} B", bytes);
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace cpplan
