#include "executor/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace cpplan::executor {

Result<bool> write_npy(const std::string& path, const at::Tensor& t) {
  const at::Tensor data = t.to(at::kFloat).contiguous();
  std::ostringstream shape;
  shape << '(';
  for (int64_t d : data.sizes()) shape << d << ", ";
  shape << ')';
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape.str() + ", }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to 64 bytes, ends in \n
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{path + ": cannot open for writing"};
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data.data_ptr()), static_cast<std::streamsize>(data.numel() * 4));
  if (!out) return Error{path + ": write failed"};
  return true;
}

Result<at::Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[10];
  if (!in.read(magic, 10) || std::memcmp(magic, "\x93NUMPY\x01\x00", 8) != 0)
    return Error{path + ": not a version-1 .npy file"};
  const std::size_t len = static_cast<unsigned char>(magic[8]) | (static_cast<unsigned char>(magic[9]) << 8);
  std::string header(len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(len));
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    return Error{path + ": only little-endian float32 C-order arrays are read"};
  const auto open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  std::vector<int64_t> shape;
  std::istringstream dims(header.substr(open + 1, close - open - 1));
  for (std::string part; std::getline(dims, part, ',');)
    if (part.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(part));
  at::Tensor t = at::empty(shape, at::kFloat);
  if (!in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * 4)))
    return Error{path + ": truncated data"};
  return t;
}

}  // namespace cpplan::executor
