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

}  // namespace cpplan
