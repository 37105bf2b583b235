// .npz archives: numpy's zip files of .npy members (see sluice/io/npy.h).
//
// Only what numpy writes is read: one disk, members stored (method 0) or
// deflated (method 8), unencrypted, zip64 extra fields where numpy's zipfile
// puts them (always in the local header, in the central directory when a size
// or offset passes 4 GiB). The central directory is the authority for sizes,
// CRCs and offsets; a local header is read only for the length of its name
// and extra field, so its zip64 placeholder sizes do not matter.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "file_util.h"
#include "sluice/error.h"
#include "sluice/io/npy.h"

namespace sluice::io {
namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::uint64_t kEndBytes = 22;
constexpr std::uint64_t kCentralBytes = 46;
constexpr std::uint64_t kLocalBytes = 30;

// The little-endian n-byte integer at p.
std::uint64_t le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = n; i-- > 0;) v = v << 8 | static_cast<std::uint8_t>(p[i]);
  return v;
}

std::string hex32(std::uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

// zlib's CRC-32 of `bytes`, in steps zlib's size type can hold.
std::uint32_t crc32_of(std::span<const std::byte> bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  for (std::size_t left = bytes.size(); left > 0;) {
    const std::size_t n = std::min<std::size_t>(left, std::size_t{1} << 30);
    crc = ::crc32(crc, p, static_cast<uInt>(n));
    p += n;
    left -= n;
  }
  return static_cast<std::uint32_t>(crc);
}

// Inflates the raw deflate stream `packed` into exactly `out`. Throws
// sluice::Error prefixed by `where`, with the compressed byte offset
// (relative to the member's data, which starts at file offset `data_at`).
void inflate_member(std::span<const std::byte> packed, std::span<std::byte> out, const std::string& where,
                    std::uint64_t data_at) {
  z_stream z{};
  if (::inflateInit2(&z, -MAX_WBITS) != Z_OK) throw Error(where + ": zlib inflateInit2 failed");
  constexpr std::size_t kStep = std::size_t{1} << 30;
  std::size_t in_used = 0, out_used = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (z.avail_in == 0 && in_used < packed.size()) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(packed.data() + in_used));
      z.avail_in = static_cast<uInt>(std::min(kStep, packed.size() - in_used));
      in_used += z.avail_in;
    }
    if (z.avail_out == 0 && out_used < out.size()) {
      z.next_out = reinterpret_cast<Bytef*>(out.data() + out_used);
      z.avail_out = static_cast<uInt>(std::min(kStep, out.size() - out_used));
      out_used += z.avail_out;
    }
    if (z.avail_in == 0 && z.avail_out == 0) break;  // nothing left to give or room to fill
    rc = ::inflate(&z, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_used == packed.size()) break;
  }
  const std::uint64_t at = z.total_in;
  const std::uint64_t produced = z.total_out;
  const std::string msg = z.msg ? z.msg : "";
  ::inflateEnd(&z);
  auto fail = [&](const std::string& why) {
    throw Error(where + ": deflate data, compressed byte " + std::to_string(at) + " (file offset " +
                std::to_string(data_at + at) + "): " + why);
  };
  if (rc == Z_DATA_ERROR || rc == Z_STREAM_ERROR || rc == Z_MEM_ERROR || rc == Z_NEED_DICT)
    fail("zlib: " + (msg.empty() ? std::string("error ") + std::to_string(rc) : msg));
  if (rc != Z_STREAM_END) {
    if (produced >= out.size())
      fail("inflates to more than the " + std::to_string(out.size()) + " bytes the directory lists");
    fail("the deflate stream ends early after " + std::to_string(produced) + " of " +
         std::to_string(out.size()) + " bytes (truncated member)");
  }
  if (produced != out.size())
    fail("inflates to " + std::to_string(produced) + " bytes, the directory lists " + std::to_string(out.size()));
}

}  // namespace

bool looks_like_zip(std::span<const std::byte> head) {
  return head.size() >= 4 && (le(head.data(), 4) == kLocalSig || le(head.data(), 4) == kEndSig);
}

NpzArchive::NpzArchive(std::string path) : path_(std::move(path)) {
  auto bad = [&](std::uint64_t offset, const std::string& why) {
    throw Error(detail::at_offset(path_, offset, "bad .npz archive: " + why));
  };
  detail::Fd fd = detail::open_read(path_);
  map_bytes_ = detail::file_size(fd.get(), path_);
  if (map_bytes_ < kEndBytes)
    bad(0, "not a zip archive: " + std::to_string(map_bytes_) + " bytes, too short for its end record");
  map_ = detail::map_read_only(fd.get(), map_bytes_, path_);
  const std::byte* m = map_.get();
  if (!looks_like_zip({m, map_bytes_}))
    bad(0, "not a zip archive (no PK signature); .npz files are zip archives written by numpy.savez");

  // The end-of-central-directory record: within the last 22 + 65535 bytes
  // (its comment may be up to 65535 bytes long).
  std::uint64_t end = map_bytes_;
  for (std::uint64_t at = map_bytes_ - kEndBytes;; --at) {
    if (le(m + at, 4) == kEndSig) {
      end = at;
      break;
    }
    if (at == 0 || map_bytes_ - at >= kEndBytes + 0xFFFF) break;
  }
  if (end == map_bytes_)
    bad(map_bytes_, "no end-of-central-directory record: the archive is truncated (or not a zip)");
  std::uint64_t count = le(m + end + 10, 2);
  std::uint64_t cd_size = le(m + end + 12, 4);
  std::uint64_t cd_offset = le(m + end + 16, 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    // Zip64: a locator just before the end record points at the zip64 end record.
    if (end < 20 || le(m + end - 20, 4) != kZip64LocatorSig) bad(end, "zip64 end locator missing");
    const std::uint64_t z = le(m + end - 20 + 8, 8);
    if (map_bytes_ < 56 || z > map_bytes_ - 56 || le(m + z, 4) != kZip64EndSig)
      bad(end - 20, "no zip64 end record at offset " + std::to_string(z));
    count = le(m + z + 32, 8);
    cd_size = le(m + z + 40, 8);
    cd_offset = le(m + z + 48, 8);
  }
  if (cd_offset > end || cd_size > end - cd_offset)
    bad(end, "the central directory (offset " + std::to_string(cd_offset) + ", " + std::to_string(cd_size) +
                 " bytes) lies outside the file: the archive is truncated or damaged");

  const std::uint64_t cd_end = cd_offset + cd_size;
  std::uint64_t at = cd_offset;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (cd_end - at < kCentralBytes || le(m + at, 4) != kCentralSig)
      bad(at, "central directory entry " + std::to_string(i) + " is missing or damaged");
    const std::byte* h = m + at;
    NpzMember e;
    const std::uint64_t flags = le(h + 8, 2);
    const std::uint64_t method = le(h + 10, 2);
    e.crc32 = static_cast<std::uint32_t>(le(h + 16, 4));
    e.compressed = le(h + 20, 4);
    e.size = le(h + 24, 4);
    const std::uint64_t name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    e.header_offset = le(h + 42, 4);
    if (cd_end - at - kCentralBytes < name_len + extra_len + comment_len)
      bad(at, "central directory entry " + std::to_string(i) + " runs past the directory");
    e.name.assign(reinterpret_cast<const char*>(h + kCentralBytes), name_len);
    const std::string member = "member '" + e.name + "': ";
    // Zip64 extended information (id 1): 64-bit values of the fields that
    // read all ones, in the order size, compressed size, header offset.
    const std::byte* x = h + kCentralBytes + name_len;
    const std::byte* x_end = x + extra_len;
    while (x_end - x >= 4) {
      const std::uint64_t id = le(x, 2), len = le(x + 2, 2);
      if (static_cast<std::uint64_t>(x_end - x - 4) < len) bad(at, member + "extra field runs past its entry");
      if (id == 1) {
        const std::byte* v = x + 4;
        auto take = [&](std::uint64_t& field) {
          if (field != 0xFFFFFFFF) return;
          if (x + 4 + len - v < 8) bad(at, member + "zip64 extra field too short");
          field = le(v, 8);
          v += 8;
        };
        take(e.size);
        take(e.compressed);
        take(e.header_offset);
      }
      x += 4 + len;
    }
    if (flags & 1) bad(at, member + "encrypted members are not supported");
    if (method != 0 && method != 8)
      bad(at, member + "compression method " + std::to_string(method) +
                  " is not supported (numpy writes stored or deflated members)");
    e.deflated = method == 8;
    if (!e.deflated && e.compressed != e.size)
      bad(at, member + "stored, yet its sizes differ (" + std::to_string(e.compressed) + " and " +
                  std::to_string(e.size) + ")");
    members_.push_back(std::move(e));
    at += kCentralBytes + name_len + extra_len + comment_len;
  }
}

std::string NpzArchive::member_list() const {
  std::string list;
  for (const NpzMember& e : members_) {
    std::string_view name = e.name;
    if (name.ends_with(".npy")) name.remove_suffix(4);
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  return list.empty() ? "it has none" : "members: " + list;
}

NpyArray NpzArchive::array(std::string_view name) const {
  const std::string want = std::string(name) + (name.ends_with(".npy") ? "" : ".npy");
  const auto it = std::find_if(members_.begin(), members_.end(),
                               [&](const NpzMember& e) { return e.name == want || e.name == name; });
  if (it == members_.end())
    throw Error(path_ + ": no member '" + std::string(name) + "' in this .npz archive (" + member_list() + ")");
  const NpzMember& e = *it;
  const std::string where = path_ + ": member '" + e.name + "'";
  const std::byte* m = map_.get();
  const std::uint64_t h = e.header_offset;
  if (h > map_bytes_ || map_bytes_ - h < kLocalBytes || le(m + h, 4) != kLocalSig)
    throw Error(where + ": byte offset " + std::to_string(h) +
                ": no local file header there (the archive is truncated or damaged)");
  const std::uint64_t data_at = h + kLocalBytes + le(m + h + 26, 2) + le(m + h + 28, 2);
  if (data_at > map_bytes_ || e.compressed > map_bytes_ - data_at)
    throw Error(where + ": byte offset " + std::to_string(data_at) + ": its " + std::to_string(e.compressed) +
                " bytes run past the end of the file (" + std::to_string(map_bytes_) +
                " bytes): the archive is truncated");
  const std::span<const std::byte> packed(m + data_at, static_cast<std::size_t>(e.compressed));
  std::shared_ptr<const std::byte> storage;
  if (e.deflated) {
    // Deflate expands at most 1032:1: a larger listed size is corrupt, and must not size an allocation.
    if (e.size > std::numeric_limits<std::size_t>::max() / 2 || e.size / 1032 > e.compressed + 1)
      throw Error(where + ": the directory lists " + std::to_string(e.size) + " bytes inflated from " +
                  std::to_string(e.compressed) + " compressed, more than deflate can produce: the archive is corrupt");
    std::shared_ptr<std::byte[]> out(new std::byte[std::max<std::uint64_t>(e.size, 1)]);
    inflate_member(packed, {out.get(), static_cast<std::size_t>(e.size)}, where, data_at);
    storage = std::shared_ptr<const std::byte>(out, out.get());
  } else {
    storage = std::shared_ptr<const std::byte>(map_, packed.data());  // a view: shares the mapping
  }
  const std::uint32_t crc = crc32_of({storage.get(), static_cast<std::size_t>(e.size)});
  if (crc != e.crc32)
    throw Error(where + ": CRC-32 mismatch (the directory says " + hex32(e.crc32) + ", the data gives " +
                hex32(crc) + "): the member is corrupt");
  return NpyArray(path_, e.name, std::move(storage), static_cast<std::size_t>(e.size));
}

}  // namespace sluice::io
