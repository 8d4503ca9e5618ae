#pragma once
// Two machines' fingerprints for tests that fill a store: a 16-core CPU box and an 8-GPU node.

#include "data/store.h"

namespace cpplan::test {

inline data::HardwareFingerprint cpu_box() {
  data::HardwareFingerprint h;
  h.device_kind = "cpu";
  h.cpu_name = "Test CPU 9000";
  h.cpu_count = 16;
  h.torch = "1.13.1";
  h.host = "box1";
  return h;
}

inline data::HardwareFingerprint gpu_box() {
  data::HardwareFingerprint h;
  h.device_kind = "cuda";
  h.gpu_name = "NVIDIA H100 80GB HBM3";
  h.gpu_count = 8;
  h.cpu_name = "Test CPU 9000";
  h.host = "node7";
  return h;
}

}  // namespace cpplan::test
