// encode_jpeg: libjpeg-turbo's compressor into memory.
#include <cstddef>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "sluice/error.h"
#include "sluice/ops/encode.h"

namespace sluice::ops {
namespace {

// All libjpeg state of one encode, plain C data only: error_exit longjmps
// back to encode_jpeg, and nothing between there and libjpeg owns a C++
// object with a destructor. The output grows in malloc'd memory (no C++
// allocation, which could throw, inside a libjpeg callback).
struct Session {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  jpeg_destination_mgr dest;
  std::jmp_buf jump;
  unsigned char* buffer;
  std::size_t capacity;
  bool out_of_memory;
  char message[JMSG_LENGTH_MAX];
};
static_assert(std::is_trivially_destructible_v<Session>);

Session& session_of(j_common_ptr cinfo) { return *static_cast<Session*>(cinfo->client_data); }

void on_error_exit(j_common_ptr cinfo) noexcept {
  Session& s = session_of(cinfo);
  cinfo->err->format_message(cinfo, s.message);
  std::longjmp(s.jump, 1);
}

void on_emit_message(j_common_ptr, int) noexcept {}  // an encoder's warnings change nothing written

void dest_init(j_compress_ptr cinfo) noexcept {
  Session& s = session_of(reinterpret_cast<j_common_ptr>(cinfo));
  s.dest.next_output_byte = s.buffer;
  s.dest.free_in_buffer = s.capacity;
}

boolean dest_grow(j_compress_ptr cinfo) noexcept {
  Session& s = session_of(reinterpret_cast<j_common_ptr>(cinfo));
  const std::size_t used = s.capacity;  // the whole buffer is full when libjpeg calls this
  const std::size_t grown = s.capacity * 2;
  auto* p = static_cast<unsigned char*>(std::realloc(s.buffer, grown));
  if (!p) {
    s.out_of_memory = true;
    std::snprintf(s.message, sizeof s.message, "out of memory for %zu bytes of JPEG", grown);
    std::longjmp(s.jump, 1);
  }
  s.buffer = p;
  s.capacity = grown;
  s.dest.next_output_byte = p + used;
  s.dest.free_in_buffer = grown - used;
  return TRUE;
}

void dest_term(j_compress_ptr) noexcept {}

// Owns one Session for one call.
class Compressor {
 public:
  explicit Compressor(std::size_t initial) {
    std::memset(&s_, 0, sizeof s_);
    s_.cinfo.err = jpeg_std_error(&s_.err);
    s_.err.error_exit = on_error_exit;
    s_.err.emit_message = on_emit_message;
    s_.cinfo.client_data = &s_;
    s_.capacity = initial < 4096 ? 4096 : initial;
    s_.buffer = static_cast<unsigned char*>(std::malloc(s_.capacity));
    if (!s_.buffer) throw std::bad_alloc();
  }
  ~Compressor() {
    jpeg_destroy_compress(&s_.cinfo);
    std::free(s_.buffer);
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  // Runs the whole compression; false (with message()) when libjpeg failed.
  bool run(const Image& image, int quality) noexcept {
    if (setjmp(s_.jump) != 0) return false;
    jpeg_create_compress(&s_.cinfo);
    s_.dest.init_destination = dest_init;
    s_.dest.empty_output_buffer = dest_grow;
    s_.dest.term_destination = dest_term;
    s_.cinfo.dest = &s_.dest;
    s_.cinfo.image_width = static_cast<JDIMENSION>(image.width);
    s_.cinfo.image_height = static_cast<JDIMENSION>(image.height);
    s_.cinfo.input_components = image.channels;
    s_.cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&s_.cinfo);
    jpeg_set_quality(&s_.cinfo, quality, TRUE);
    jpeg_start_compress(&s_.cinfo, TRUE);
    const auto* base = static_cast<const unsigned char*>(image.data);
    while (s_.cinfo.next_scanline < s_.cinfo.image_height) {
      JSAMPROW row = const_cast<JSAMPROW>(base + s_.cinfo.next_scanline * image.stride);
      jpeg_write_scanlines(&s_.cinfo, &row, 1);
    }
    jpeg_finish_compress(&s_.cinfo);
    return true;
  }

  const unsigned char* data() const { return s_.buffer; }
  std::size_t size() const { return s_.capacity - s_.dest.free_in_buffer; }
  const char* message() const { return s_.message; }

 private:
  Session s_;
};

}  // namespace

void encode_jpeg(const Image& image, const JpegEncodeOptions& options, std::vector<std::byte>& out) {
  check_image(image, "encode_jpeg");
  if (image.dtype != DType::u8 || (image.channels != 1 && image.channels != 3))
    throw Error("encode_jpeg takes uint8 images of 1 (gray) or 3 (RGB) channels; got " +
                std::to_string(image.channels) + " channels of " + std::string(dtype_name(image.dtype)));
  if (options.quality < 1 || options.quality > 100)
    throw Error("encode_jpeg: quality " + std::to_string(options.quality) + " is not in 1..100");
  if (image.width > JPEG_MAX_DIMENSION || image.height > JPEG_MAX_DIMENSION)
    throw Error("encode_jpeg: " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                " is larger than a JPEG can be (" + std::to_string(JPEG_MAX_DIMENSION) + " pixels a side)");
  // A first guess at the size: a quarter of the pixels' bytes, plus headers.
  Compressor c(static_cast<std::size_t>(image.width) * image.height * image.channels / 4 + 1024);
  if (!c.run(image, options.quality)) throw Error(std::string("encode_jpeg: ") + c.message());
  out.resize(c.size());
  std::memcpy(out.data(), c.data(), c.size());
}

}  // namespace sluice::ops
