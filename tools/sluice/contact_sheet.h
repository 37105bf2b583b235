// contact_sheet.h: a batch field's images laid out in a grid, as one PNG a
// person can look at (sluice peek --png).
//
// A field is an image when each sample is [H, W, C] or [C, H, W] with C = 1
// (gray) or 3 (RGB); HWC is tried first. uint8 values are shown as they are;
// any other dtype (a normalized float image, say) is scaled from the sheet's
// [min, max] to [0, 255], so that the picture is visible whatever the
// normalization was.
//
// Thread safety: none; one sheet per thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sluice/batch.h"

namespace sluice::cli {

struct ImageLayout {
  int height = 0, width = 0, channels = 0;
  bool chw = false;
};

// The layout of each sample of `field`, or nullopt when it is no image.
std::optional<ImageLayout> image_layout(const FieldView& field);

class ContactSheet {
 public:
  static constexpr std::size_t kMaxTiles = 256;

  ContactSheet(ImageLayout layout, DType dtype) : layout_(layout), dtype_(dtype) {}

  // Adds every sample of a batch's field (of this layout and dtype), up to kMaxTiles in all.
  void add(const FieldView& field);
  std::size_t tiles() const { return tiles_.size(); }

  // Writes the grid (near-square, 2 px gaps) to `path` as a PNG. Throws
  // sluice::Error naming the path. Returns what was written, for the user:
  // "8 columns x 8 rows of 28 x 28 tiles (64 samples), CHW, float32 scaled from [-2.1, 2.6] to [0, 255]".
  std::string write(const std::string& path) const;

 private:
  ImageLayout layout_;
  DType dtype_;
  std::vector<std::vector<float>> tiles_;  // each sample's pixels, HWC
};

}  // namespace sluice::cli
