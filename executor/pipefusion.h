#pragma once
// PipeFusion on real ranks (xDiT's displaced patch pipeline; docs/pipefusion.md, "Executor"): a
// rank is one stage of one pipeline and holds its stage's blocks (core/pipefusion's split). Stage 0
// embeds and owns the latents, the last stage projects out and sends the velocity back to stage 0.
// The first W steps run the whole sequence through the stages; later steps send the M patches of
// xDiT's split (whole latent rows) one after another, each block attending a patch's queries
// against its buffer of the full sequence's K/V (fresh for this step's patches so far, the previous
// step's for the rest); a joint model's text states travel once per step, with patch 0. Long skips
// (HunyuanDiT) cross a stage boundary with the patch's hidden states, one more hidden-state tensor
// each; linear attention (SANA) sums its state over the buffer; a conv-GLU FFN reads the rows
// around its patch from a buffer of its input over the whole image.

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
  // `linear`: ReLU linear attention (SANA), its state built from the whole buffer: the sum of every
  // patch's K^T [V | 1], fresh or stale, as xDiT keeps a stale sum per patch.
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool linear = false);
  // The next conv-GLU FFN call (SANA): writes x [B, patch, C] into its buffer of the whole image
  // [B, S_img, C] and returns that buffer (the other patches' rows fresh or stale). Under CP (`cp`
  // of more than one rank, rows of `cols` tokens), every CP rank's first and last halo tokens of
  // each run of its pass (a row, a row and one token when the run starts or ends mid-row) are
  // all-gathered and written too: the rows around a rank's runs, fresh from this pass or an
  // earlier one of this step, or a step old.
  at::Tensor image_rows(const at::Tensor& x, Comm* cp = nullptr, int64_t cols = 0);
  // The pass's image tokens, ascending, on the device.
  const at::Tensor& image_index() const { return index_; }

  // Context parallelism inside the stage (xDiT's hybrid): CP rank c holds the c-th of k equal runs
  // of each pass's image tokens (and the c-th share of the split text, `text_split`, every pass),
  // and owns over the whole sequence the union of its runs, `owned[c]` (global image tokens, on
  // the device): the tokens of its share in a whole-sequence pass. Set once.
  void set_cp_layout(std::vector<at::Tensor> owned, std::vector<int64_t> text_split);
  bool cp() const { return !owned_.empty(); }
  // The image tokens of every CP rank in the next forward pass (after begin_forward).
  void begin_cp_forward(std::vector<at::Tensor> pass) { pass_ = std::move(pass); }
  // The next cached attention call under CP: k, v [B, H', n, hd], the split keys of CP ranks
  // [first, first + count) in rank order (each its text share, when they include the split text,
  // then its image run), written into this call's buffers of those ranks' owned keys, which come
  // back [B, H', owned, hd] in the order of a whole-sequence pass: what Ring passes around (a
  // rank's own), or Ulysses and Unified attend after their all-to-all (the u group's).
  std::pair<at::Tensor, at::Tensor> cached(const at::Tensor& k, const at::Tensor& v, int first, int count);

 private:
  struct Buffer {
    at::Tensor k, v;
  };
  Buffer& buffer(std::size_t call, const at::Tensor& like, int64_t tokens);
  void write(at::Tensor& buffer, const at::Tensor& x, int64_t front) const;

  std::vector<Buffer> buffers_;
  std::vector<at::Tensor> rows_;  // per conv-GLU call, [B, S_img, C]
  // Under CP: the split keys' ids (text j: j, image token i: T + i) of ranks [first, first +
  // count) in this pass (`pass`) or owned; T = the split text's tokens.
  at::Tensor key_ids(const std::vector<at::Tensor>& image, int first, int count, bool text) const;
  std::vector<at::Tensor> owned_, pass_;
  std::vector<int64_t> text_split_;
  std::size_t next_ = 0, next_rows_ = 0;
  at::Tensor index_, text_valid_;
  int64_t image_tokens_ = 0, text_ = 0;
};

// One rank of a PipeFusion plan (spec.config.pp() > 1, no context parallelism): builds its stage,
// runs the denoising loop, and gathers the figures; rank 0 (stage 0) ends with the final latents.
RunFigures run_pipefusion_rank(const RunSpec& spec, Mesh& mesh, int rank, int world);

}  // namespace cpplan::executor
