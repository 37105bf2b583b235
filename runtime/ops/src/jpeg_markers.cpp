#include "jpeg_markers.h"

#include <array>
#include <cstring>

namespace sluice::ops {
namespace {

constexpr std::uint8_t kSOF2 = 0xC2, kDHT = 0xC4, kSOI = 0xD8, kEOI = 0xD9, kSOS = 0xDA, kDQT = 0xDB,
                       kDRI = 0xDD, kCOM = 0xFE;
bool is_app(int marker) { return marker >= 0xE0 && marker <= 0xEF; }

// Walks markers as libjpeg's next_marker does: from `pos`, passes over
// entropy-coded data (a 0xFF followed by 0x00 or a restart marker), fill
// bytes and anything else between segments.
class Walker {
 public:
  Walker(std::span<const std::uint8_t> file, std::size_t pos) : data_(file.data()), size_(file.size()), pos_(pos) {}

  // The next marker, its two bytes passed over; -1 when the data ends first.
  int next_marker() {
    while (pos_ < size_) {
      const void* ff = std::memchr(data_ + pos_, 0xFF, size_ - pos_);
      if (ff == nullptr) break;
      const std::size_t i = static_cast<std::size_t>(static_cast<const std::uint8_t*>(ff) - data_);
      if (i + 1 >= size_) break;
      const std::uint8_t code = data_[i + 1];
      if (code == 0xFF) {
        pos_ = i + 1;  // a fill byte: the next 0xFF may start the marker
      } else if (code == 0x00 || (code >= 0xD0 && code <= 0xD7)) {
        pos_ = i + 2;  // a stuffed 0xFF, or a restart marker
      } else {
        marker_at_ = i;
        pos_ = i + 2;
        return code;
      }
    }
    pos_ = size_;
    return -1;
  }

  // The segment after the marker just read: its bytes past the length
  // field; false when its length is impossible or runs past the data.
  bool segment(std::span<const std::uint8_t>& body) {
    if (pos_ + 2 > size_) return false;
    const std::size_t length = std::size_t{data_[pos_]} << 8 | data_[pos_ + 1];
    if (length < 2 || pos_ + length > size_) return false;
    body = {data_ + pos_ + 2, length - 2};
    pos_ += length;
    return true;
  }

  std::size_t marker_at() const { return marker_at_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_;
  std::size_t marker_at_ = 0;
};

// A Huffman table's code lengths as libjpeg accepts them when it builds the
// table for a scan (jpeg_make_d_derived_tbl): no length runs out of codes,
// and the all-ones code stays unused.
bool huffman_codes_fit(const std::uint8_t* counts) {
  long code = 0;
  int longest = 0;
  for (int length = 1; length <= 16; ++length) {
    if (counts[length - 1] != 0) longest = length;
  }
  for (int length = 1; length <= longest; ++length) {
    code += counts[length - 1];
    if (code >= (1L << length)) return false;
    code <<= 1;
  }
  return true;
}

// What a progressive walk knows of the AC Huffman tables so far (libjpeg's
// get_dht rules: a bad segment is a fatal error).
struct AcTables {
  std::array<bool, 4> defined{};
  std::array<bool, 4> usable{};

  bool read(std::span<const std::uint8_t> body) {
    std::size_t at = 0;
    while (body.size() - at > 16) {
      const int index = body[at];
      const std::uint8_t* counts = body.data() + at + 1;
      std::size_t symbols = 0;
      for (int i = 0; i < 16; ++i) symbols += counts[i];
      at += 17;
      if (symbols > 256 || symbols > body.size() - at) return false;
      at += symbols;
      const int table = index & 0x0F;
      if ((index & ~0x1F) != 0 || table >= 4) return false;
      if (index & 0x10) {
        defined[table] = true;
        usable[table] = huffman_codes_fit(counts);
      }
    }
    return at == body.size();
  }
};

// The progression of one component: the precision each coefficient has
// (libjpeg's coef_bits), -1 before its first scan.
using Progression = std::array<int, 64>;

}  // namespace

bool jpeg_rest_is_plain(std::span<const std::uint8_t> file, std::size_t pos, int pending_marker) {
  if (pos > file.size()) return false;
  // A marker libjpeg has found is one it has read: its two bytes end at pos.
  if (pending_marker != 0 && (pos < 2 || file[pos - 2] != 0xFF || file[pos - 1] != pending_marker)) return false;
  Walker walk(file, pos);
  for (int marker = pending_marker;; marker = walk.next_marker()) {
    if (marker == kEOI) return true;
    const bool in_data = marker == 0 || (marker >= 0xD0 && marker <= 0xD7);  // none pending, or a restart
    std::span<const std::uint8_t> body;
    if (!in_data && (!(is_app(marker) || marker == kCOM) || !walk.segment(body))) return false;
  }
}

bool jpeg_skippable_scans(std::span<const std::uint8_t> file, std::uint32_t dc_only, int max_scans,
                          std::vector<ByteRange>& out) {
  out.clear();
  if (file.size() < 2 || file[0] != 0xFF || file[1] != kSOI) return false;
  Walker walk(file, 2);
  std::array<int, 4> ids{};  // the frame's component ids
  int components = 0;        // 0 until the frame header
  std::array<Progression, 4> progression;
  for (Progression& p : progression) p.fill(-1);
  AcTables tables;
  int scans = 0;
  bool skipping = false;  // the scan just read is to be skipped
  std::size_t scan_begin = 0;
  const auto give_up = [&out] {
    out.clear();
    return false;
  };
  for (;;) {
    const int marker = walk.next_marker();
    if (marker < 0) return give_up();
    if (skipping) out.push_back({scan_begin, walk.marker_at()});
    skipping = false;
    if (marker == kEOI) break;
    std::span<const std::uint8_t> body;
    if (!walk.segment(body)) return give_up();
    if (marker == kSOF2) {
      // P, Y, X, Nf, then (id, sampling, table) per component.
      if (components != 0 || body.size() < 6) return give_up();
      const int n = body[5];
      if (n < 1 || n > 4 || body.size() != 6 + 3 * static_cast<std::size_t>(n)) return give_up();
      for (int c = 0; c < n; ++c) ids[c] = body[6 + 3 * c];
      components = n;
    } else if (marker == kSOS) {
      // Ns, (id, tables) per component, Ss, Se, Ah/Al: libjpeg's get_sos and
      // start_pass_phuff_decoder checks, and a progression that adds up.
      if (components == 0 || ++scans > max_scans || body.empty()) return give_up();
      const int n = body[0];
      if (n < 1 || n > 4 || body.size() != 4 + 2 * static_cast<std::size_t>(n)) return give_up();
      const int ss = body[1 + 2 * n], se = body[2 + 2 * n], ah = body[3 + 2 * n] >> 4, al = body[3 + 2 * n] & 15;
      const bool dc = ss == 0;
      if (dc ? se != 0 : (ss > se || se > 63 || n != 1)) return give_up();
      if ((ah != 0 && al != ah - 1) || al > 13) return give_up();
      std::uint32_t seen = 0;
      for (int k = 0; k < n; ++k) {
        int c = 0;
        while (c < components && ids[c] != body[1 + 2 * k]) ++c;
        if (c == components || (seen & (1u << c)) != 0) return give_up();
        seen |= 1u << c;
        const int ac_table = body[2 + 2 * k] & 15;
        if (!dc && (ac_table >= 4 || !tables.defined[ac_table] || !tables.usable[ac_table])) return give_up();
        Progression& p = progression[c];
        if (!dc && p[0] < 0) return give_up();
        for (int i = ss; i <= se; ++i) {
          if (ah != (p[i] < 0 ? 0 : p[i]) || (ah != 0 && p[i] < 0)) return give_up();
          p[i] = al;
        }
        skipping = !dc && (dc_only & (1u << c)) != 0;
      }
      scan_begin = walk.marker_at();
    } else if (marker == kDHT) {
      if (!tables.read(body)) return give_up();
    } else if (!(marker == kDQT || marker == kDRI || marker == kCOM || is_app(marker))) {
      return give_up();
    }
  }
  for (int c = 0; c < components; ++c) {
    for (const int bits : progression[c]) {
      if (bits != 0) return give_up();
    }
  }
  return components != 0;
}

}  // namespace sluice::ops
