#include "sluice/ops/decode_crop.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fail.h"

namespace sluice::ops {

void decode_crop(ImageDecoder& decoder, Resampler& resampler, const void* bytes, std::size_t size,
                 std::string_view name, const Box& box, void* dst, const DecodeCropOptions& options) {
  if (!(std::isfinite(box.x0) && std::isfinite(box.y0) && std::isfinite(box.x1) && std::isfinite(box.y1) &&
        box.x0 >= 0 && box.y0 >= 0 && box.x0 < box.x1 && box.y0 < box.y1 && box.x1 <= (1 << 30) &&
        box.y1 <= (1 << 30))) {
    fail_file(name, "the crop box (" + std::to_string(box.x0) + ", " + std::to_string(box.y0) + ", " +
                        std::to_string(box.x1) + ", " + std::to_string(box.y1) + ") is not a box inside an image");
  }
  if (options.height <= 0 || options.width <= 0) {
    fail_op("decode_crop", "the output is " + std::to_string(options.width) + "x" + std::to_string(options.height));
  }
  DecodeOptions decode = options.decode;
  decode.scale = std::max(options.height / (box.y1 - box.y0), options.width / (box.x1 - box.x0));
  const int x0 = static_cast<int>(std::floor(box.x0)), y0 = static_cast<int>(std::floor(box.y0));
  decode.region = Rect{x0, y0, static_cast<int>(std::ceil(box.x1)) - x0, static_cast<int>(std::ceil(box.y1)) - y0};
  const DecodedImage d = decoder.decode(bytes, size, name, decode);
  // The box in the decoded pixels, as a resize of the whole decode would see it.
  const double s = d.scale_divisor;
  const Box inside{box.x0 / s - d.region.x, box.y0 / s - d.region.y, box.x1 / s - d.region.x,
                   box.y1 / s - d.region.y};
  resampler.resize_normalize(d.image, inside, options.height, options.width, dst, options.normalize,
                             options.filter);
}

}  // namespace sluice::ops
