// Built with the fake LibTorch's ABI when cmake/TorchAbi.cmake imposes it: {fmt} and toml++ must
// still link and work (header-only), std::string crossing their interfaces.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <string>

int main() {
  const toml::table t = toml::parse("name = \"flux\"");
  const std::string name = t["name"].value_or(std::string());
  const std::string line = fmt::format("{} {} abi={}", name, 3, _GLIBCXX_USE_CXX11_ABI);
  fmt::print("{}\n", line);
  return line.rfind("flux 3 abi=", 0) == 0 ? 0 : 1;
}
