#pragma once
// PipeFusion on real ranks (xDiT's displaced patch pipeline; docs/pipefusion.md, "Executor"): a
// rank is one stage of one pipeline and holds its stage's blocks (core/pipefusion's split). Stage 0
// embeds and owns the latents, the last stage projects out and sends the velocity back to stage 0.
// The first W steps run the whole sequence through the stages; later steps send the M patches of
// xDiT's split (whole latent rows) one after another, each block attending a patch's queries
// against its buffer of the full sequence's K/V (fresh for this step's patches so far, the previous
// step's for the rest); a joint model's text states travel once per step, with patch 0.

#include <ATen/ATen.h>

#include <vector>

#include "executor/mesh.h"
#include "executor/runner.h"

namespace cpplan::executor {

// The K/V buffers of one stage, one per self-attention call in forward order (a block may have
// two: SD3.5-medium's image-only attention), each of the full sequence [B, H_local, S, hd].
class PatchKvCache {
 public:
  // Where the next forward pass's tokens lie: `text` joint text tokens in front (0 for
  // cross-attention models), then the image tokens `image_index` (ascending, on the device) of the
  // `image_tokens` of the whole image; `text_valid` [B, text] the text's key mask, or undefined.
  void begin_forward(const at::Tensor& image_index, int64_t image_tokens, int64_t text, const at::Tensor& text_valid);
  // The next self-attention call: writes k, v of the pass's tokens into its buffer and attends q
  // against the whole buffer. q, k, v: [B, H, text + patch, hd] (joint) or [B, H, patch, hd].
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

 private:
  struct Buffer {
    at::Tensor k, v;
  };
  Buffer& buffer(std::size_t call, const at::Tensor& like, int64_t tokens);
  void write(at::Tensor& buffer, const at::Tensor& x, int64_t front) const;

  std::vector<Buffer> buffers_;
  std::size_t next_ = 0;
  at::Tensor index_, text_valid_;
  int64_t image_tokens_ = 0, text_ = 0;
};

// One rank of a PipeFusion plan (spec.config.pp() > 1, no context parallelism): builds its stage,
// runs the denoising loop, and gathers the figures; rank 0 (stage 0) ends with the final latents.
RunFigures run_pipefusion_rank(const RunSpec& spec, Mesh& mesh, int rank, int world);

}  // namespace cpplan::executor
