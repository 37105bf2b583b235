// jpeg_markers.h: a JPEG's marker structure, read without decoding.
//
// The JPEG decoder uses it to leave entropy-coded data undecoded when the
// pixels it asks for do not depend on that data, and only where leaving it
// out cannot change what the decode returns:
//  - every byte is still walked, so a file that ends early, or whose markers
//    do not add up, is found; the decoder then reads the whole file as it
//    would otherwise, and libjpeg reports the damage in its own words;
//  - only data whose damage libjpeg would merely warn about is left out
//    (entropy-coded data: a corrupt Huffman code is a warning), and the
//    decoder leaves nothing out under DecodeOptions::strict, where any
//    warning is an error;
//  - only segments libjpeg treats as opaque are accepted in what is left out
//    (APPn, COM and, between progressive scans, DQT and DRI); a Huffman table
//    or a scan header there is checked as libjpeg checks it, and anything
//    else makes the walk give up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::ops {

struct ByteRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// The rest of a single-scan JPEG, from `pos` inside its entropy-coded data:
// true when it is entropy-coded data with restart markers, then only APPn and
// COM segments, then the end-of-image marker. `pending_marker`: a marker
// libjpeg has already read (its unread_marker), whose two bytes end at
// `pos`; 0 for none.
bool jpeg_rest_is_plain(std::span<const std::uint8_t> file, std::size_t pos, int pending_marker);

// The scans of a progressive JPEG that a decode need not read: the AC scans
// of the components in `dc_only` (bit i for the frame's i-th component),
// each from its SOS marker to the end of its entropy-coded data, in file
// order. Returns false, leaving `out` empty, unless the whole file is a
// complete, well-formed progressive JPEG (every coefficient of every
// component fully refined, at most `max_scans` scans, an end-of-image marker).
bool jpeg_skippable_scans(std::span<const std::uint8_t> file, std::uint32_t dc_only, int max_scans,
                          std::vector<ByteRange>& out);

}  // namespace sluice::ops
