// Scanning a tar shard into its index, and the index's sidecar file (see
// sluice/io/tar_index.h).
#include "sluice/io/tar_index.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "file_util.h"
#include "sluice/error.h"
#include "tar_format.h"

namespace sluice::io {
namespace {

constexpr std::string_view kMagic = "sluice tar index 1\n";

// A cursor over the sidecar's bytes; every read checks what is left, and a
// failure names the file and the byte.
class IndexText {
 public:
  IndexText(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(name_ + ": not a valid tar index at byte " + std::to_string(at_) + ": " + why +
                " (rebuild it with `sluice index` beside its shard)");
  }
  void literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) {
      if (at_ + word.size() > text_.size() && word.substr(0, text_.size() - at_) == text_.substr(at_))
        fail("the file ends early (truncated?)");
      fail("expected \"" + printable(word) + "\"");
    }
    at_ += word.size();
  }
  std::uint64_t number() {
    const std::size_t from = at_;
    std::uint64_t value = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[at_] - '0');
      if (value > (UINT64_MAX - digit) / 10) fail("a number too large");
      value = value * 10 + digit;
      ++at_;
    }
    if (at_ == from) fail(at_ == text_.size() ? "the file ends early (truncated?)" : "expected a number");
    return value;
  }
  std::string string() {
    const std::uint64_t length = number();
    literal(":");
    if (length > text_.size() - at_) fail("a name of " + std::to_string(length) + " bytes past the file's end (truncated?)");
    std::string s(text_.substr(at_, length));
    at_ += length;
    return s;
  }
  std::size_t left() const { return text_.size() - at_; }
  bool at_end() const { return at_ == text_.size(); }

 private:
  static std::string printable(std::string_view s) {
    std::string out;
    for (char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out;
  }
  std::string_view text_;
  const std::string& name_;
  std::size_t at_ = 0;
};

}  // namespace

TarIndex scan_tar(const std::string& path, OnError on_error, SkipLog* skips) {
  detail::Fd fd = detail::open_read(path);
  TarIndex index;
  const std::uint64_t size = detail::file_size(fd.get(), path);
  index.shard_bytes = size;
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_RANDOM);  // headers only: no read-ahead of the data

  std::array<std::byte, detail::kTarBlock> block;
  std::uint64_t offset = 0;
  std::string next_path;            // from a pax or GNU long-name entry
  bool open_sample = false;
  auto stop = [&](const std::string& why) {
    std::string msg = detail::at_offset(path, offset, why);
    if (on_error == OnError::fail) throw Error(msg);
    if (skips) skips->add(index.samples.size(), msg);
  };
  if (size >= 2 && detail::pread_full(fd.get(), std::span(block).first(2), 0, path) == 2 &&
      block[0] == std::byte{0x1f} && block[1] == std::byte{0x8b})
    throw Error(path + ": gzip-compressed tar cannot be read at random offsets; read it with "
                       "TarStream (streaming), or decompress it to a plain .tar");

  bool ended = false;  // by the end-of-archive blocks, as every tar writer ends one
  while (offset < size) {
    if (detail::pread_full(fd.get(), block, offset, path) < block.size()) {
      stop("truncated tar header (" + std::to_string(size - offset) + " bytes left)");
      break;
    }
    detail::TarHeader h;
    std::string why;
    if (!detail::parse_tar_header(block, h, why)) {
      stop(why);
      break;
    }
    if (h.entry == detail::TarEntry::end) {
      ended = true;
      break;
    }
    const std::uint64_t data = offset + detail::kTarBlock;
    if (h.size > size || data + h.size > size) {
      stop("truncated tar member " + h.path + ": " + std::to_string(h.size) + " bytes declared, " +
           std::to_string(size - data) + " left");
      break;
    }
    if (h.entry == detail::TarEntry::pax || h.entry == detail::TarEntry::gnu_longname) {
      std::string text(h.size, '\0');
      detail::pread_full(fd.get(), std::as_writable_bytes(std::span(text)), data, path);
      next_path = h.entry == detail::TarEntry::pax ? detail::pax_path(text)
                                                   : std::string(text.c_str());
    } else if (h.entry == detail::TarEntry::file) {
      const std::string member = next_path.empty() ? h.path : next_path;
      next_path.clear();
      std::string_view key, field;
      if (!detail::webdataset_split(member, key, field)) {  // a hidden file: in no sample
        offset = data + detail::tar_padded(h.size);
        continue;
      }
      if (!open_sample || key != index.samples.back().key) {
        index.samples.push_back({std::string(key), {}});
        open_sample = true;
      }
      std::vector<TarIndexMember>& members = index.samples.back().members;
      const auto twice = std::find_if(members.begin(), members.end(),
                                      [&](const TarIndexMember& m) { return m.field == field; });
      if (twice != members.end()) {
        const std::string why = detail::second_member_error(member, key) + " (the first at byte " + std::to_string(twice->offset - detail::kTarBlock) + ")";
        index.samples.pop_back();  // not whole: left out, with the rest of the shard under skip
        stop(why);
        break;
      }
      members.push_back({std::string(field), data, h.size});
    } else {
      next_path.clear();
    }
    offset = data + detail::tar_padded(h.size);
  }
  // Cut at a member boundary, the archive would look whole but for its end
  // blocks (GNU tar: "Unexpected EOF in archive"), and its last sample could
  // lack members.
  if (!ended && offset >= size) {
    stop("the archive ends without its end-of-archive blocks after " + std::to_string(index.samples.size()) +
         " samples: it was cut short");
  }
  return index;
}

std::string tar_index_path(const std::string& shard) { return detail::sidecar_path(shard, "", ".idx"); }

void write_tar_index(const std::string& index_path, const TarIndex& index) {
  detail::write_atomically(index_path, [&](std::ostream& out) {
    out << kMagic << "shard_bytes " << index.shard_bytes << "\nsamples " << index.samples.size() << '\n';
    for (const TarIndexSample& s : index.samples) {
      out << "s " << s.key.size() << ':' << s.key << ' ' << s.members.size() << '\n';
      for (const TarIndexMember& m : s.members)
        out << "m " << m.field.size() << ':' << m.field << ' ' << m.offset << ' ' << m.size << '\n';
    }
    out << "end\n";
  });
}

TarIndex parse_tar_index(std::string_view text, const std::string& name) {
  IndexText in(text, name);
  if (text.substr(0, 17) != kMagic.substr(0, 17)) in.fail("no \"sluice tar index\" line: this is no tar index");
  in.literal(kMagic);
  TarIndex index;
  in.literal("shard_bytes ");
  index.shard_bytes = in.number();
  in.literal("\nsamples ");
  const std::uint64_t samples = in.number();
  in.literal("\n");
  // Each sample takes at least 16 bytes ("s 0: 1\nm 0: 0 0\n"): no count larger
  // than the file allows is reserved.
  if (samples > in.left() / 12) in.fail(std::to_string(samples) + " samples announced, more than the file can hold (truncated?)");
  index.samples.reserve(samples);
  std::uint64_t end = detail::kTarBlock;  // where the previous member's data ends; data follows a header
  for (std::uint64_t i = 0; i < samples; ++i) {
    TarIndexSample& s = index.samples.emplace_back();
    in.literal("s ");
    s.key = in.string();
    in.literal(" ");
    const std::uint64_t members = in.number();
    in.literal("\n");
    if (members == 0) in.fail("sample " + std::to_string(i) + " has no member");
    if (members > in.left() / 9) in.fail(std::to_string(members) + " members announced, more than the file can hold (truncated?)");
    s.members.reserve(members);
    for (std::uint64_t j = 0; j < members; ++j) {
      TarIndexMember& m = s.members.emplace_back();
      in.literal("m ");
      m.field = in.string();
      in.literal(" ");
      m.offset = in.number();
      in.literal(" ");
      m.size = in.number();
      in.literal("\n");
      if (m.offset < end)
        in.fail("member " + s.key + "." + m.field + " at byte " + std::to_string(m.offset) +
                " overlaps the one before it or the shard's first header");
      if (m.offset > index.shard_bytes || m.size > index.shard_bytes - m.offset)
        in.fail("member " + s.key + "." + m.field + " (" + std::to_string(m.size) + " bytes at " +
                std::to_string(m.offset) + ") lies past the shard's " + std::to_string(index.shard_bytes) + " bytes");
      end = m.offset + m.size;
    }
  }
  in.literal("end\n");
  if (!in.at_end()) in.fail("bytes after \"end\"");
  return index;
}

TarIndex read_tar_index(const std::string& index_path, const std::string& name) {
  std::ifstream in(index_path, std::ios::binary);
  if (!in) throw Error("cannot open tar index " + index_path + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw Error("cannot read tar index " + index_path);
  return parse_tar_index(bytes.str(), name.empty() ? index_path : name);
}

std::string tar_index_mismatch(const TarIndex& index, const TarIndex& scanned) {
  if (index.shard_bytes != scanned.shard_bytes)
    return "the index says " + std::to_string(index.shard_bytes) + " bytes, the shard holds " +
           std::to_string(scanned.shard_bytes);
  const std::size_t n = std::min(index.samples.size(), scanned.samples.size());
  for (std::size_t i = 0; i < n; ++i) {
    const TarIndexSample& a = index.samples[i];
    const TarIndexSample& b = scanned.samples[i];
    const std::string at = "sample " + std::to_string(i) + ": ";
    if (a.key != b.key) return at + "the index says key \"" + a.key + "\", the shard holds \"" + b.key + "\"";
    if (a.members.size() != b.members.size())
      return at + "the index says " + std::to_string(a.members.size()) + " members, the shard holds " +
             std::to_string(b.members.size());
    for (std::size_t m = 0; m < a.members.size(); ++m) {
      const TarIndexMember& x = a.members[m];
      const TarIndexMember& y = b.members[m];
      if (x.field != y.field || x.offset != y.offset || x.size != y.size)
        return at + "the index says " + a.key + "." + x.field + " (" + std::to_string(x.size) + " bytes at byte " +
               std::to_string(x.offset) + "), the shard holds " + b.key + "." + y.field + " (" +
               std::to_string(y.size) + " bytes at byte " + std::to_string(y.offset) + ")";
    }
  }
  if (index.samples.size() != scanned.samples.size())
    return "the index says " + std::to_string(index.samples.size()) + " samples, the shard holds " +
           std::to_string(scanned.samples.size());
  return {};
}

}  // namespace sluice::io
