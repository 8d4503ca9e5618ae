#include "executor/mesh.h"

#include "executor/rendezvous.h"

#include <array>
#include <string>

namespace cpplan::executor {

namespace {

// Axis order, innermost first, and their degrees.
constexpr int kAxes = 6;
std::array<int, kAxes> degrees(const ParallelConfig& c) {
  return {c.tp(), c.ulysses(), c.ring(), c.pp(), c.cfg_degree, c.dp_degree};
}

}  // namespace

MeshCoords mesh_coords(int rank, const ParallelConfig& c) {
  const auto d = degrees(c);
  const int fs_rank = rank % c.fs();
  std::array<int, kAxes> x{};
  for (int i = 0; i < kAxes; ++i) {
    x[i] = rank % d[i];
    rank /= d[i];
  }
  return {x[0], x[1], x[2], x[3], x[4], x[5], c.ulysses(), c.ring() * c.ulysses(), c.pp(), fs_rank, c.fs()};
}

Mesh::Mesh(c10::intrusive_ptr<c10d::Store> store, int rank, const ParallelConfig& config,
           std::chrono::milliseconds timeout, const at::Device& device, CollectiveTiming timing) {
  const auto d = degrees(config);
  coords_ = mesh_coords(rank, config);
  const std::array<int, kAxes> x = {coords_.tp, coords_.ulysses, coords_.ring, coords_.pp, coords_.cfg, coords_.dp};
  const int world = static_cast<int>(config.world_size());

  // A group varies the axes in `axes` and fixes the others; its name encodes the fixed
  // coordinates so that every member joins the same rendezvous and no one else does.
  auto make = [&](const std::string& name, std::initializer_list<int> axes) {
    int size = 1, my_rank = 0, stride = 1;
    std::string key = name;
    for (int i = 0; i < kAxes; ++i) {
      const bool varies = std::find(axes.begin(), axes.end(), i) != axes.end();
      if (varies) {
        my_rank += x[i] * stride;
        stride *= d[i];
        size *= d[i];
      } else {
        key += "/" + std::to_string(x[i]);
      }
    }
    if (size == 1) return Comm();
    return Comm(new_group(store, key, my_rank, size, timeout, device), my_rank, size, &stats_,
                device.is_cuda() ? Transport::kNccl : Transport::kGloo, timing);
  };
  world_ = world > 1 ? make("world", {0, 1, 2, 3, 4, 5}) : Comm();
  tp_ = make("tp", {0});
  ulysses_ = make("ulysses", {1});
  ring_ = make("ring", {2});
  cp_ = make("cp", {1, 2});  // ulysses inner: cp rank = ring * u + ulysses
  pp_ = make("pp", {3});     // group rank = stage
  cfg_ = make("cfg", {4});
  dp_ = make("dp", {5});
  // Not an axis of the mesh: F consecutive ranks (docs/usage.md "Fully sharded weights"), created
  // last on every rank like the axes' groups, so that no two ranks wait on each other's order.
  const int fs = config.fs();
  if (fs > 1)
    fs_ = Comm(new_group(store, "fs/" + std::to_string(rank / fs), coords_.fs, fs, timeout, device), coords_.fs, fs,
               &stats_, device.is_cuda() ? Transport::kNccl : Transport::kGloo, timing);
}

}  // namespace cpplan::executor
