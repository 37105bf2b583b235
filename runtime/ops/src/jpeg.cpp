#include "jpeg.h"

// jpeglib.h wants size_t and FILE declared first.
#include <cstdio>
#include <cstring>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <string>
#include <type_traits>
#include <vector>

#include "fail.h"
#include "jpeg_markers.h"
#include "sluice/ops/geometry.h"

namespace sluice::ops {
namespace {

// TurboJPEG's TJFLAG_LIMITSCANS: a progressive JPEG may need one pass over its
// coefficients per scan, so thousands of tiny scans make a small file slow.
constexpr int kMaxScans = 500;

enum class Failure { none, fatal, truncated, strict_warning, too_many_scans };

// A libjpeg data source over some byte ranges of the file, in order: the
// file with scans left out (see Decompressor::skip_unneeded_scans). At their
// end it does what jpeg_mem_src does: warns of a premature end and supplies
// an end-of-image marker.
struct SpanSource {
  jpeg_source_mgr pub;
  const std::uint8_t* data;
  const ByteRange* spans;
  std::size_t count;
  std::size_t next;
};

void span_init(j_decompress_ptr) noexcept {}
void span_term(j_decompress_ptr) noexcept {}

boolean span_fill(j_decompress_ptr cinfo) noexcept {
  static const JOCTET fake_eoi[2] = {0xFF, JPEG_EOI};
  SpanSource& src = *reinterpret_cast<SpanSource*>(cinfo->src);
  while (src.next < src.count && src.spans[src.next].begin == src.spans[src.next].end) ++src.next;
  if (src.next == src.count) {
    WARNMS(cinfo, JWRN_JPEG_EOF);
    src.pub.next_input_byte = fake_eoi;
    src.pub.bytes_in_buffer = 2;
    return TRUE;
  }
  const ByteRange& span = src.spans[src.next++];
  src.pub.next_input_byte = src.data + span.begin;
  src.pub.bytes_in_buffer = span.end - span.begin;
  return TRUE;
}

void span_skip(j_decompress_ptr cinfo, long count) noexcept {
  if (count <= 0) return;
  jpeg_source_mgr& src = *cinfo->src;
  while (static_cast<std::size_t>(count) > src.bytes_in_buffer) {
    count -= static_cast<long>(src.bytes_in_buffer);
    span_fill(cinfo);
  }
  src.next_input_byte += count;
  src.bytes_in_buffer -= static_cast<std::size_t>(count);
}

// All libjpeg state of one decode, plain C data only: libjpeg's error_exit
// longjmps back to guarded() below, and nothing between there and libjpeg
// may own a C++ object with a destructor.
struct Session {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  jpeg_progress_mgr progress;
  SpanSource spans;
  std::jmp_buf jump;
  bool strict;
  Failure failure;
  int first_warning;               // msg_code of the first warning, -1 for none
  char warning[JMSG_LENGTH_MAX];   // its text
  char message[JMSG_LENGTH_MAX];   // the text of what ended the decode
};
static_assert(std::is_trivially_destructible_v<Session>);

Session& session_of(j_common_ptr cinfo) { return *static_cast<Session*>(cinfo->client_data); }

[[noreturn]] void stop(j_common_ptr cinfo, Failure failure) noexcept {
  Session& s = session_of(cinfo);
  s.failure = failure;
  std::longjmp(s.jump, 1);
}

// libjpeg callbacks: they never throw; they record and longjmp.
void on_error_exit(j_common_ptr cinfo) noexcept {
  cinfo->err->format_message(cinfo, session_of(cinfo).message);
  stop(cinfo, Failure::fatal);
}

void on_emit_message(j_common_ptr cinfo, int level) noexcept {
  if (level >= 0) return;  // trace messages
  Session& s = session_of(cinfo);
  jpeg_error_mgr& err = *cinfo->err;
  ++err.num_warnings;
  if (s.first_warning < 0) {
    s.first_warning = err.msg_code;
    err.format_message(cinfo, s.warning);
  }
  if (err.msg_code == JWRN_JPEG_EOF || s.strict) {
    err.format_message(cinfo, s.message);
    stop(cinfo, err.msg_code == JWRN_JPEG_EOF ? Failure::truncated : Failure::strict_warning);
  }
}

void on_progress(j_common_ptr cinfo) noexcept {
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > kMaxScans) {
    stop(cinfo, Failure::too_many_scans);
  }
}

// Runs `step` (libjpeg calls) with `s.jump` set: false when libjpeg failed.
// The step's captures and locals must be trivially destructible, since a
// longjmp out of libjpeg unwinds them without running destructors.
template <typename Step>
bool guarded(Session& s, const Step& step) noexcept {
  static_assert(std::is_trivially_destructible_v<Step>);
  if (setjmp(s.jump) != 0) return false;
  step();
  return true;
}

// Owns one Session: created fresh per call and destroyed on every path.
class Decompressor {
 public:
  Decompressor(std::string_view name, bool strict) : name_(name) {
    std::memset(&s_, 0, sizeof s_);
    s_.strict = strict;
    s_.first_warning = -1;
    s_.cinfo.err = jpeg_std_error(&s_.err);
    s_.err.error_exit = on_error_exit;
    s_.err.emit_message = on_emit_message;
    s_.cinfo.client_data = &s_;
    if (!guarded(s_, [this] { jpeg_create_decompress(&s_.cinfo); })) {
      jpeg_destroy_decompress(&s_.cinfo);
      fail("cannot start libjpeg");
    }
    s_.progress.progress_monitor = on_progress;
    s_.cinfo.progress = &s_.progress;
  }
  ~Decompressor() { jpeg_destroy_decompress(&s_.cinfo); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  JpegHeader read_header(const std::uint8_t* bytes, std::size_t size) {
    file_ = {bytes, size};
    run("not a readable JPEG", [this, bytes, size] {
      jpeg_mem_src(&s_.cinfo, bytes, static_cast<unsigned long>(size));
      jpeg_read_header(&s_.cinfo, TRUE);
    });
    JpegHeader h{static_cast<int>(s_.cinfo.image_width), static_cast<int>(s_.cinfo.image_height), 3};
    if (s_.cinfo.jpeg_color_space == JCS_GRAYSCALE) h.channels = 1;
    if (s_.cinfo.jpeg_color_space == JCS_CMYK || s_.cinfo.jpeg_color_space == JCS_YCCK) h.channels = 4;
    return h;
  }

  // Output size at 1/divisor, in `color`, with libjpeg's (and PIL's)
  // defaults: ISLOW DCT, fancy upsampling.
  void configure(J_COLOR_SPACE color, int divisor) {
    s_.cinfo.out_color_space = color;
    s_.cinfo.scale_num = 1;
    s_.cinfo.scale_denom = static_cast<unsigned>(divisor);
    s_.cinfo.dct_method = JDCT_ISLOW;
    s_.cinfo.do_fancy_upsampling = TRUE;
    run("corrupt JPEG", [this] { jpeg_calc_output_dimensions(&s_.cinfo); });
  }
  int output_width() const { return static_cast<int>(s_.cinfo.output_width); }
  int output_height() const { return static_cast<int>(s_.cinfo.output_height); }
  int output_components() const { return s_.cinfo.output_components; }

  // For a progressive JPEG, before start(): leaves out the AC scans of the
  // components whose DCT scale keeps only the DC coefficient (an 8x8 block
  // becomes one pixel, jpeg_idct_1x1), when jpeg_skippable_scans finds the
  // file complete and well-formed. The pixels are those of a decode that
  // reads every scan: libjpeg's block smoothing, which would guess the
  // missing coefficients, is off, and a complete file would not use it.
  // Returns whether it left anything out.
  bool skip_unneeded_scans() {
    if (!s_.cinfo.progressive_mode || s_.cinfo.num_components > 4) return false;
    std::uint32_t dc_only = 0;
    for (int c = 0; c < s_.cinfo.num_components; ++c) {
      if (s_.cinfo.comp_info[c].DCT_scaled_size == 1) dc_only |= 1u << c;
    }
    if (dc_only == 0 || !jpeg_skippable_scans(file_, dc_only, kMaxScans, spans_) || spans_.empty()) return false;
    // The source has read the headers up to the first scan's data, which is
    // a DC scan: what is left out lies ahead. Keep what lies between.
    const std::size_t at = position();
    if (spans_.front().begin < at) return false;
    std::size_t kept_from = at;
    for (ByteRange& r : spans_) {
      const std::size_t skipped_to = r.end;
      r = {kept_from, r.begin};
      kept_from = skipped_to;
    }
    spans_.push_back({kept_from, file_.size()});
    SpanSource& src = s_.spans;
    src.pub.init_source = span_init;
    src.pub.fill_input_buffer = span_fill;
    src.pub.skip_input_data = span_skip;
    src.pub.resync_to_restart = jpeg_resync_to_restart;
    src.pub.term_source = span_term;
    src.data = file_.data();
    src.spans = spans_.data();
    src.count = spans_.size();
    src.next = 1;
    src.pub.next_input_byte = file_.data() + spans_[0].begin;
    src.pub.bytes_in_buffer = spans_[0].end - spans_[0].begin;
    s_.cinfo.src = &src.pub;
    s_.cinfo.do_block_smoothing = FALSE;
    return true;
  }

  // Starts the output pass (for a progressive JPEG this reads every scan).
  void start() {
    run("corrupt JPEG", [this] { jpeg_start_decompress(&s_.cinfo); });
  }

  // An iMCU in output pixels: the unit jpeg_crop_scanline aligns to, and the
  // reach of fancy upsampling's context across a block edge.
  int imcu_width() const { return s_.cinfo.min_DCT_scaled_size * s_.cinfo.max_h_samp_factor; }
  int imcu_height() const { return s_.cinfo.min_DCT_scaled_size * s_.cinfo.max_v_samp_factor; }

  // Whether crop_columns gives the columns of the whole decode. Not when
  // libjpeg smooths the blocks of a progressive JPEG whose coefficients are
  // not all refined (a file cut short, or ended early by its own EOI): a
  // cropped output pass smooths the bottom block rows differently. After start().
  bool may_crop_columns() const {
    if (!s_.cinfo.progressive_mode || !s_.cinfo.do_block_smoothing || s_.cinfo.coef_bits == nullptr) return true;
    for (int c = 0; c < s_.cinfo.num_components; ++c) {
      for (int k = 0; k < DCTSIZE2; ++k) {
        if (s_.cinfo.coef_bits[c][k] != 0) return false;
      }
    }
    return true;
  }

  // Narrows the output to columns [x, x + width), widened left to an iMCU
  // boundary: returns the first column, and the output width becomes the
  // widened width. Between start() and the first scanline.
  int crop_columns(int x, int width) {
    JDIMENSION first = static_cast<JDIMENSION>(x), count = static_cast<JDIMENSION>(width);
    run("corrupt JPEG", [this, &first, &count] { jpeg_crop_scanline(&s_.cinfo, &first, &count); });
    return static_cast<int>(first);
  }

  // Decodes the next image.height scanlines into `image` (output_width wide).
  void read_rows(const Image& image) {
    run("corrupt JPEG", [this, &image] {
      JSAMPROW rows[16];
      int done = 0;
      while (done < image.height) {
        const int count = std::min(16, image.height - done);
        for (int i = 0; i < count; ++i) rows[i] = image.row<JSAMPLE>(done + i);
        done += static_cast<int>(jpeg_read_scanlines(&s_.cinfo, rows, static_cast<JDIMENSION>(count)));
      }
    });
  }

  // Passes over the next `count` scanlines (entropy-decoding them in a
  // single-scan JPEG, so damage there still shows), unless they reach the end.
  void skip_rows(int count) {
    if (count <= 0) return;
    run("corrupt JPEG", [this, count] { jpeg_skip_scanlines(&s_.cinfo, static_cast<JDIMENSION>(count)); });
  }

  // Whether the rest of a single-scan JPEG, after the rows read so far, is
  // only entropy-coded data and segments libjpeg passes over, up to its
  // end-of-image marker (jpeg_rest_is_plain): then decoding the remaining
  // rows could only bring warnings, and a decode that wants no more rows may
  // stop.
  bool rest_is_plain() {
    bool multiple_scans = true;
    run("corrupt JPEG", [this, &multiple_scans] { multiple_scans = jpeg_has_multiple_scans(&s_.cinfo); });
    return !multiple_scans && jpeg_rest_is_plain(file_, position(), s_.cinfo.unread_marker);
  }

  // Reads the rest of the file, to its end-of-image marker.
  void finish() {
    run("corrupt JPEG", [this] { jpeg_finish_decompress(&s_.cinfo); });
  }

 private:
  // Where jpeg_mem_src's reading stands in the file; past its end when the
  // source supplies a made-up end marker.
  std::size_t position() const {
    const auto at = reinterpret_cast<std::uintptr_t>(s_.cinfo.src->next_input_byte);
    const auto begin = reinterpret_cast<std::uintptr_t>(file_.data());
    if (at < begin || at - begin > file_.size()) return file_.size() + 1;
    return static_cast<std::size_t>(at - begin);
  }

  template <typename Step>
  void run(const char* what, const Step& step) {
    if (!guarded(s_, step)) fail(what);
  }

  [[noreturn]] void fail(const char* what) const {
    std::string message;
    switch (s_.failure) {
      case Failure::truncated: message = std::string("truncated JPEG: ") + s_.message; break;
      case Failure::strict_warning:
        message = std::string("JPEG warning (an error under DecodeOptions::strict): ") + s_.message;
        break;
      case Failure::too_many_scans:
        message = "corrupt JPEG: more than " + std::to_string(kMaxScans) + " progressive scans";
        break;
      default: message = std::string(what) + ": " + s_.message; break;
    }
    if (s_.failure == Failure::fatal && s_.first_warning >= 0) {
      message += std::string(" (after the warning: ") + s_.warning + ")";
    }
    fail_file(name_, message);
  }

  Session s_;
  std::string_view name_;
  std::span<const std::uint8_t> file_;
  std::vector<ByteRange> spans_;  // scans to leave out, then the ranges kept
};

}  // namespace

JpegHeader jpeg_header(const std::uint8_t* bytes, std::size_t size, std::string_view name, bool strict) {
  Decompressor d(name, strict);
  return d.read_header(bytes, size);
}

namespace {

// jpeg_decode, leaving out what the pixels do not need when `partial`;
// `skipped_scans` says whether it did leave out scans.
Image decode(const std::uint8_t* bytes, std::size_t size, std::string_view name, const JpegDecode& options,
             bool partial, Buffer& out, StoredLayout& layout, JpegHeader& header, bool& skipped_scans) {
  Decompressor d(name, options.strict);
  header = d.read_header(bytes, size);
  check_pixel_limit(name, header.width, header.height, options.max_pixels);
  J_COLOR_SPACE color = JCS_EXT_RGB;
  layout = StoredLayout::rgb;
  if (header.channels == 4) {
    color = JCS_CMYK, layout = StoredLayout::cmyk_inverted;
  } else if (header.channels == 1 || options.channels == 1) {
    color = JCS_GRAYSCALE, layout = StoredLayout::gray;
  } else if (options.channels == 4) {
    color = JCS_EXT_RGBA, layout = StoredLayout::rgba;
  }
  d.configure(color, options.divisor);
  skipped_scans = partial && d.skip_unneeded_scans();
  d.start();
  if (!options.region) {
    Image image = packed_image(nullptr, d.output_height(), d.output_width(), d.output_components());
    image.data = out.reserve(image.stride * static_cast<std::size_t>(image.height), name);
    d.read_rows(image);
    d.finish();
    return image;
  }
  const Rect& r = *options.region;
  const int full_width = d.output_width(), full_height = d.output_height();
  // One iMCU of margin around the region (see jpeg.h).
  const int left = std::max(0, r.x - d.imcu_width());
  const int right = std::min(full_width, r.x + r.width + d.imcu_width());
  const int top = std::max(0, r.y - d.imcu_height());
  const int bottom = r.y + r.height;
  const int first_column =
      right - left < full_width && d.may_crop_columns() ? d.crop_columns(left, right - left) : 0;
  // The band of rows decoded, and one spare row for the image's last scanline.
  Image band = packed_image(nullptr, bottom - top, d.output_width(), d.output_components());
  band.data = out.reserve(band.stride * static_cast<std::size_t>(band.height + 1), name);
  d.skip_rows(top);
  d.read_rows(band);
  // The rows below the region matter only for the damage they could reveal.
  const bool stop = bottom < full_height && partial && d.rest_is_plain();
  if (!stop) {
    if (bottom < full_height) {
      d.skip_rows(full_height - bottom - 1);
      Image last = band;
      last.data = band.row<std::byte>(band.height);
      last.height = 1;
      d.read_rows(last);
    }
    d.finish();
  }
  return crop(band, Rect{r.x - first_column, r.y - top, r.width, r.height});
}

}  // namespace

Image jpeg_decode(const std::uint8_t* bytes, std::size_t size, std::string_view name, const JpegDecode& options,
                  Buffer& out, StoredLayout& layout, JpegHeader& header) {
  bool skipped_scans = false;
  try {
    return decode(bytes, size, name, options, !options.strict, out, layout, header, skipped_scans);
  } catch (const Error&) {
    if (!skipped_scans) throw;
  }
  // A file that fails without some of its scans fails as reading them all
  // fails: a warning in a skipped scan is part of that error's message, and
  // the walk (jpeg_markers) does not check every segment libjpeg refuses.
  return decode(bytes, size, name, options, false, out, layout, header, skipped_scans);
}

}  // namespace sluice::ops
