#pragma once
// NumPy .npy (format 1.0, little-endian float32, C order): rank 0's final latents.

#include <ATen/ATen.h>

#include <string>

#include "core/result.h"

namespace cpplan::executor {

Result<bool> write_npy(const std::string& path, const at::Tensor& t);
Result<at::Tensor> read_npy(const std::string& path);

}  // namespace cpplan::executor
