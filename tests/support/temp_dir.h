#pragma once
// A fresh directory under the temp directory (mkdtemp), removed with its contents at scope end.

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace cpplan::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "cpplan-test-") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cpplan::test
