// sluice/ops/geometry.h: crop, random resized crop, resize, flip, pad.
//
// Every op works on uint8 and uint16 images of 1 to 4 channels and writes a
// destination the caller provides (a batch slot, scratch, the source itself
// where said). Errors (mismatched channels or dtypes, a region outside the
// image) throw sluice::Error.
//
// Thread safety: the free functions are safe to call concurrently on
// disjoint destinations. A Resampler is not thread-safe: one per worker.
#pragma once

#include "sluice/export.h"

#include <array>
#include <cstddef>
#include <vector>

#include "sluice/ops/image.h"
#include "sluice/ops/normalize.h"
#include "sluice/ops/random.h"

namespace sluice::ops {

// A view of `rect` inside `image` (no copy). Throws if it is not inside.
SLUICE_API Image crop(const Image& image, const Rect& rect);

// Copies src into dst; same size, channels and dtype.
SLUICE_API void copy(const Image& src, const Image& dst);

// Mirrors left to right into dst (same size; dst may be src itself).
SLUICE_API void flip_horizontal(const Image& src, const Image& dst);

// Copies src into dst at (top, left) and sets the rest of dst to `fill`
// (per channel, in the image's dtype). src must fit inside dst there.
SLUICE_API void pad(const Image& src, const Image& dst, int top, int left,
         const std::array<int, 4>& fill = {0, 0, 0, 0});

// torchvision's RandomResizedCrop.get_params (the Inception sampling): up to
// `attempts` draws of an area fraction in [scale_min, scale_max] and a log-
// uniform aspect ratio in [ratio_min, ratio_max] whose rectangle fits; the
// position is then uniform. If none fits: the largest centred crop whose
// aspect ratio is within range. Three draws per attempt (area, ratio, then x
// and y on success), rounded half-to-even as Python's round().
struct SLUICE_API RandomResizedCropOptions {
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  int attempts = 10;
};
SLUICE_API Rect random_resized_crop(int width, int height, UniformSource uniform,
                         const RandomResizedCropOptions& options = {});

// bilinear: PIL's BILINEAR (a triangle filter widened by the shrink factor, so
// downscaling antialiases, as torchvision on PIL images does); area: PIL's BOX
// (the mean over each output pixel's footprint, OpenCV's INTER_AREA).
enum class Filter : unsigned char { bilinear, area };

// Resamples with PIL's separable convolution, in 22-bit fixed point for uint8
// (bit-identical to Pillow's ImagingResample) and single precision for uint16.
// Holds the filter coefficients and the intermediate image, reused across
// calls: no allocation once it has seen the largest sizes.
class SLUICE_API Resampler {
 public:
  // Resizes the region `box` of src (continuous coordinates, within src) to the
  // whole of dst. Same channels and dtype.
  void resize(const Image& src, const Box& box, const Image& dst, Filter filter = Filter::bilinear);
  void resize(const Image& src, const Image& dst, Filter filter = Filter::bilinear);

  // resize() of `box` to an out_height x out_width image, then normalize()
  // of that image into dst, in one pass over the output rows: each row is
  // resampled, then flipped, normalized and written in dst's layout and dtype
  // while it is in cache, with no intermediate image. Bit for bit the values
  // of the two calls. Throws as they do.
  void resize_normalize(const Image& src, const Box& box, int out_height, int out_width, void* dst,
                        const NormalizeOptions& options, Filter filter = Filter::bilinear);

 private:
  struct Coefficients {
    std::vector<int> bounds;  // per output pixel: first input pixel, count
    std::vector<double> weights;  // per output pixel: `taps` weights
    std::vector<int> fixed;      // the weights in fixed point (uint8 path)
    std::vector<float> single;   // the weights as float (uint16 path)
    int taps = 0;
  };
  static void compute(Coefficients& c, int in_size, double in0, double in1, int out_size, Filter filter);
  // The pixels of `full` that `box` touches; `inside` is the box within them.
  static Image region(const Image& full, const Box& box, Box& inside);
  void horizontal_pass(const Image& src, int first, const Image& out);
  // The horizontally resampled rows the vertical pass reads (src itself when
  // no horizontal pass is needed); rebases vertical_'s bounds on them.
  Image rows_for_vertical(const Image& src, int out_width, bool need_horizontal);
  // Output rows y: computed into row(y), then emit(y, row(y)).
  void vertical_pass(const Image& between, int out_height, const auto& row, const auto& emit);

  Coefficients horizontal_, vertical_;
  std::vector<std::byte> between_;   // the horizontally resampled rows
  std::vector<std::byte> row_sums_;  // one output row being accumulated
  std::vector<std::byte> out_row_;   // resize_normalize: one output row before normalizing
};

}  // namespace sluice::ops
