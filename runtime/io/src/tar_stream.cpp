#include "sluice/io/tar_stream.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "file_util.h"
#include "sluice/error.h"
#include "sluice/io/manifest.h"
#include "stream_order.h"
#include "tar_format.h"

namespace sluice::io {

TarStream::TarStream(std::vector<std::string> shards, StreamOptions options)
    : shards_(std::move(shards)), options_(options) {
  reset(0);
}

TarStream::~TarStream() { close_shard(); }

void TarStream::close_shard() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
  gz_ = nullptr;
  have_lookahead_ = false;
}

void TarStream::reset(std::uint64_t epoch) {
  close_shard();
  order_ = detail::stream_shards(static_cast<std::uint32_t>(shards_.size()), options_, epoch);
  rng_.seed(detail::stream_seed(options_, epoch));
  next_shard_ = 0;
  read_count_ = 0;
  buffer_.clear();
  skips_.clear();
}

bool TarStream::open_next_shard() {
  close_shard();
  while (next_shard_ < order_.size()) {
    shard_ = order_[next_shard_++];
    position_ = 0;
    record_ = 0;
    const std::string& path = shards_[shard_];
    std::string msg;
    try {
      verify_listed_shard(path);  // a written dataset's shard: its checksum first (manifest.h)
    } catch (const Error& e) {
      if (options_.on_error == OnError::fail) throw;
      skips_.add(read_count_, e.what());
      continue;
    }
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz) {
      gzbuffer(gz, 256 * 1024);
      gz_ = gz;
      // zlib reads a file that is no gzip stream as it is; one named as
      // gzip must be one, or its bytes would be parsed as a tar.
      const bool named_gzip = path.ends_with(".tgz") || path.ends_with(".gz");
      if (!named_gzip || gzdirect(gz) == 0) return true;
      close_shard();
      msg = path + ": not a gzip file (no 1f 8b magic at byte 0), though its name says gzip";
    } else {
      msg = "cannot open " + path + ": " + std::strerror(errno);
    }
    if (options_.on_error == OnError::fail) throw Error(msg);
    skips_.add(read_count_, msg);
  }
  return false;
}

// Reads the next regular member of the open shard; false at its end (or, under
// on_error = skip, at a corrupt spot, after noting it).
bool TarStream::read_member(std::string& key, Member& member, std::uint64_t& offset) {
  gzFile gz = static_cast<gzFile>(gz_);
  const std::string& path = shards_[shard_];
  auto read_exact = [&](void* dst, std::uint64_t n) -> bool {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      unsigned chunk = static_cast<unsigned>(std::min<std::uint64_t>(n, 1u << 30));
      int r = gzread(gz, p, chunk);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::uint64_t>(r);
      position_ += static_cast<std::uint64_t>(r);
    }
    return true;
  };
  // Reads n bytes into `out`, growing it as the data arrives: a header that
  // claims more than the stream holds fails at the end of the data, having
  // allocated no more than the data present plus one chunk.
  auto read_growing = [&](std::vector<std::byte>& out, std::uint64_t n) -> bool {
    constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
    out.clear();
    while (out.size() < n) {
      const std::size_t at = out.size();
      out.resize(at + static_cast<std::size_t>(std::min(kChunk, n - at)));
      if (!read_exact(out.data() + at, out.size() - at)) return false;
    }
    return true;
  };
  auto skip = [&](std::uint64_t n) -> bool {
    std::array<std::byte, 64 * 1024> scratch;
    while (n > 0) {
      const std::uint64_t chunk = std::min<std::uint64_t>(n, scratch.size());
      if (!read_exact(scratch.data(), chunk)) return false;
      n -= chunk;
    }
    return true;
  };
  // A zlib failure is the cause of whatever the tar reader saw: it is named
  // first, with the compressed byte offset zlib had reached.
  auto bad = [&](const std::string& why) {
    int errnum = 0;
    const char* zmsg = gzerror(gz, &errnum);
    std::string msg = detail::at_offset(path, position_, why);
    if (errnum != Z_OK && errnum != Z_STREAM_END) {
      std::string_view z = zmsg;  // "PATH: what"
      if (z.starts_with(path + ": ")) z.remove_prefix(path.size() + 2);
      msg = path + ": gzip " + (errnum == Z_BUF_ERROR ? "stream truncated" : "data corrupt") +
            " at compressed byte offset " + std::to_string(gzoffset(gz)) + ": zlib: " + std::string(z) +
            " (the tar reader was at uncompressed byte " + std::to_string(position_) + ")";
    }
    if (options_.on_error == OnError::fail) throw Error(msg);
    skips_.add(read_count_, msg);
    return false;
  };
  std::string next_path;
  std::array<std::byte, detail::kTarBlock> block;
  for (;;) {
    const std::uint64_t header_at = position_;
    int r = gzread(gz, block.data(), detail::kTarBlock);
    if (r == 0) {  // end of the stream without the end-of-archive blocks: cut short (or zlib failed)
      int errnum = Z_OK;
      gzerror(gz, &errnum);
      if (errnum == Z_OK || errnum == Z_STREAM_END) {
        return bad("the archive ends without its end-of-archive blocks: it was cut short");
      }
      return bad("end of data");
    }
    if (r < static_cast<int>(detail::kTarBlock)) return bad("truncated tar header");
    position_ += detail::kTarBlock;
    detail::TarHeader h;
    std::string why;
    if (!detail::parse_tar_header(block, h, why)) {
      position_ = header_at;
      return bad(why);
    }
    if (h.entry == detail::TarEntry::end) {
      // The gzip trailer's CRC-32 and length check the whole stream: read up
      // to it, or a corruption that still inflated would pass unseen.
      while (gzdirect(gz) == 0 && gzread(gz, block.data(), detail::kTarBlock) > 0) {
      }
      int errnum = Z_OK;
      gzerror(gz, &errnum);
      return errnum == Z_OK || errnum == Z_STREAM_END ? false : bad("after the tar end blocks");
    }
    const std::uint64_t padded = detail::tar_padded(h.size);
    if (h.entry == detail::TarEntry::file) {
      const std::string name = next_path.empty() ? h.path : next_path;
      std::string_view k, f;
      if (!detail::webdataset_split(name, k, f)) {  // a hidden file: in no sample
        if (!skip(padded)) return bad("truncated tar member " + name);
        next_path.clear();
        continue;
      }
      key.assign(k);
      member.field.assign(f);
      offset = position_;
      if (!read_growing(member.bytes, h.size))
        return bad("truncated tar member " + name + " (" + std::to_string(h.size) + " bytes declared)");
      if (!skip(padded - h.size)) return bad("truncated padding after tar member " + name);
      return true;
    }
    if (h.entry != detail::TarEntry::pax && h.entry != detail::TarEntry::gnu_longname) {
      if (!skip(padded)) return bad("truncated tar member " + h.path);  // directories, links, ...
      next_path.clear();
      continue;
    }
    // A pax header or GNU long name names the next member: a path, never megabytes.
    constexpr std::uint64_t kMaxNameData = std::uint64_t{1} << 20;
    if (h.size > kMaxNameData) {
      position_ = header_at;
      return bad("tar " + std::string(h.entry == detail::TarEntry::pax ? "pax header" : "long name") + " of " +
                 std::to_string(h.size) + " bytes (at most " + std::to_string(kMaxNameData) + ")");
    }
    std::string data(padded, '\0');
    if (!read_exact(data.data(), padded)) return bad("truncated tar member " + h.path);
    data.resize(h.size);
    next_path = h.entry == detail::TarEntry::pax ? detail::pax_path(data) : std::string(data.c_str());
  }
}

bool TarStream::read_group(Group& group) {
  group.members.clear();
  for (;;) {
    if (!gz_ && !open_next_shard()) return false;
    if (!have_lookahead_) {
      if (!read_member(lookahead_key_, lookahead_, lookahead_offset_)) {
        close_shard();
        continue;
      }
      have_lookahead_ = true;
    }
    // The lookahead member starts this group; gather members with its key.
    group.key = lookahead_key_;
    group.shard = shard_;
    group.record = record_++;
    group.offset = lookahead_offset_;
    group.id = read_count_++;
    std::size_t used = 0;
    auto take = [&](Member& from) {
      if (used == group.members.size()) group.members.emplace_back();
      std::swap(group.members[used++], from);
    };
    take(lookahead_);
    have_lookahead_ = false;
    std::string key;
    Member m;
    std::uint64_t off;
    bool twice = false;  // a member name the sample already has (as scan_tar: an error)
    while (gz_ && read_member(key, m, off)) {
      if (key != group.key) {
        lookahead_key_ = std::move(key);
        std::swap(lookahead_, m);
        lookahead_offset_ = off;
        have_lookahead_ = true;
        break;
      }
      const auto end = group.members.begin() + static_cast<std::ptrdiff_t>(used);
      if (std::find_if(group.members.begin(), end, [&](const Member& x) { return x.field == m.field; }) != end) {
        const std::string msg =
            detail::at_offset(shards_[shard_], off, detail::second_member_error(key + "." + m.field, key));
        if (options_.on_error == OnError::fail) throw Error(msg);
        skips_.add(group.id, msg);  // the sample is not whole: left out, with the rest of the shard
        twice = true;
        break;
      }
      take(m);
    }
    if (twice) {
      close_shard();
      have_lookahead_ = false;
      continue;
    }
    if (!have_lookahead_) close_shard();
    group.members.resize(used);
    return true;
  }
}

bool TarStream::next(Sample& out) {
  Group* g = &current_;
  if (options_.shuffle_buffer == 0) {
    if (!read_group(current_)) return false;
  } else {
    while (buffer_.size() < options_.shuffle_buffer) {
      Group fresh;
      if (!read_group(fresh)) break;
      buffer_.push_back(std::move(fresh));
    }
    if (buffer_.empty()) return false;
    std::uniform_int_distribution<std::size_t> pick(0, buffer_.size() - 1);
    const std::size_t j = pick(rng_);
    std::swap(current_, buffer_[j]);
    if (!read_group(buffer_[j])) {
      std::swap(buffer_[j], buffer_.back());
      buffer_.pop_back();
    }
  }
  out.reset(g->id, shards_[g->shard], g->key, -1, g->record, g->offset);
  for (const Member& m : g->members) out.fields.push_back({m.field, m.bytes});
  return true;
}

}  // namespace sluice::io
