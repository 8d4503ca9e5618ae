#pragma once
// Small string helpers shared by the loaders and the CLI.

#include <string>
#include <string_view>
#include <vector>

namespace cpplan {

// Edit distance (insertions, deletions, substitutions), for "did you mean" suggestions.
int edit_distance(std::string_view a, std::string_view b);

// Up to `limit` candidates closest to `name` (distance <= max(2, |name|/3), or sharing a prefix),
// closest first; empty when nothing is close.
std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t limit = 3);

// "a, b or c"
std::string join_or(const std::vector<std::string>& items);

// `text` fit to echo in a one-line message: control characters as C escapes (\n, \t, \x1b), so
// that input quoted in an error can neither break its line nor drive the terminal.
std::string printable(std::string_view text);

// The current time as ISO-8601 UTC to the second ("2026-11-29T18:13:31Z"), as runs,
// measurements and calibrations record it.
std::string now_utc();

// A byte count for people: "8 B", "1 KiB", "128 MiB", "1.5 GiB" (binary units, one decimal
// unless whole).
std::string human_bytes(double bytes);

// Index of the first byte that does not start a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed, as in TOML); npos when all is well.
std::size_t find_invalid_utf8(std::string_view text);

}  // namespace cpplan
