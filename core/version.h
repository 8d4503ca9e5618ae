#pragma once
// cpplan's version, as `--version` prints it and records store it.

namespace cpplan {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace cpplan
