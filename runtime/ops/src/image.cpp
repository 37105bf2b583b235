#include "sluice/ops/image.h"

#include <string>

#include "fail.h"

namespace sluice::ops {

Image packed_image(void* data, int height, int width, int channels, DType dtype) {
  Image image{data, height, width, channels, dtype, 0};
  image.stride = image.row_bytes();
  return image;
}

void check_image(const Image& image, const char* what) {
  if (image.data == nullptr) fail_op(what, "the image has no data");
  if (image.height <= 0 || image.width <= 0) {
    fail_op(what, "the image is " + std::to_string(image.width) + "x" + std::to_string(image.height));
  }
  if (image.channels < 1 || image.channels > 4) {
    fail_op(what, "images have 1 to 4 channels, not " + std::to_string(image.channels));
  }
  if (image.dtype != DType::u8 && image.dtype != DType::u16) {
    fail_op(what, "images are uint8 or uint16, not " + std::string(dtype_name(image.dtype)));
  }
  if (image.stride < image.row_bytes()) {
    fail_op(what, "the row stride " + std::to_string(image.stride) + " is less than a row (" +
                      std::to_string(image.row_bytes()) + " bytes)");
  }
}

}  // namespace sluice::ops
