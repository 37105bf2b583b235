#include "sluice/io/shard_writer.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "output_file.h"
#include "sample_encoding.h"
#include "sluice/error.h"
#include "sluice/io/tfrecord.h"
#include "tar_format.h"
#include "tfrecord_format.h"

namespace sluice::io {
namespace fs = std::filesystem;

namespace {

std::string shard_name(std::size_t index, const std::string& format) {
  char text[32];
  std::snprintf(text, sizeof text, "shard-%06zu.", index);
  return text + format;
}

}  // namespace

struct ShardWriter::Impl {
  ShardWriterOptions options;
  std::vector<detail::EncodedField> fields;
  Manifest manifest;
  bool was_complete = false;
  std::uint64_t kept_samples = 0;
  std::size_t kept_shards = 0;

  // The shard being written.
  std::optional<detail::OutputFile> out;
  std::string out_name;
  std::uint64_t out_samples = 0;
  std::vector<std::uint64_t> record_offsets;  // tfrecord: for the index
  std::uint64_t next_batch = 0, next_row = 0;
  detail::TarSample tar_sample;  // tar: the sample's members, by reference
  std::string encoded;           // tfrecord: the serialized Example

  std::string path(const std::string& name) const { return (fs::path(options.dir) / name).string(); }
  bool tar() const { return options.format == "tar"; }

  // Bytes the sample adds to a shard, and where the shard's end adds more.
  std::uint64_t end_bytes() const { return tar() ? 2 * detail::kTarBlock : 0; }

  void open_next() {
    out_name = shard_name(manifest.shards.size(), options.format);
    out.emplace(path(out_name) + ".tmp");
    out_samples = 0;
    record_offsets.clear();
  }

  void close_current() {
    if (!out) return;
    if (tar()) {
      static const std::byte zero[2 * detail::kTarBlock] = {};
      out->write(std::span(zero, sizeof zero));
    }
    out->finish();
    const std::string final_path = path(out_name);
    detail::publish_file(out->path(), final_path);
    if (!tar()) {
      TFRecordIndex index;
      index.offsets = record_offsets;
      index.offsets.push_back(out->bytes());
      write_tfrecord_index(tfrecord_index_path(final_path, ""), index);
    }
    manifest.shards.push_back({out_name, out_samples, out->bytes(), out->checksum()});
    manifest.resume_batch = next_batch;
    manifest.resume_row = next_row;
    write_manifest(options.dir, manifest);
    out.reset();
  }

  // Keeps the shards an earlier run of the same conversion completed.
  void adopt(Manifest old) {
    const bool same = old.shard_format == manifest.shard_format && old.cut_samples == manifest.cut_samples &&
                      old.cut_bytes == manifest.cut_bytes && old.fields == manifest.fields;
    if (!same)
      throw Error(options.dir + " holds another conversion (its manifest.json differs in format, shard "
                  "size or fields); write to a new folder or delete it");
    std::size_t good = 0;
    for (; good < old.shards.size(); ++good) {
      if (old.shards[good].name != shard_name(good, options.format)) break;
      if (!check_shard(options.dir, old.shards[good]).empty()) break;
    }
    was_complete = old.complete && good == old.shards.size();
    if (good < old.shards.size()) {  // position after the last good shard is unknown: start over there
      if (good == 0) {
        old.resume_batch = old.resume_row = 0;
      } else {
        throw Error(options.dir + ": shard " + old.shards[good].name +
                    " does not match the manifest; delete the folder and write it again");
      }
    }
    old.shards.resize(good);
    manifest.shards = old.shards;
    manifest.resume_batch = old.resume_batch;
    manifest.resume_row = old.resume_row;
    manifest.complete = was_complete;
    kept_shards = good;
    kept_samples = manifest.samples();
  }

  // Deletes what is not a listed shard (or its index): partial shards of a
  // killed run, and *.tmp files.
  void remove_leftovers() {
    for (const auto& entry : fs::directory_iterator(options.dir)) {
      const std::string name = entry.path().filename().string();
      if (name == kManifestName) continue;
      bool listed = false;
      for (const auto& s : manifest.shards)
        if (name == s.name || name == s.name + ".idx") listed = true;
      const bool ours = name.rfind("shard-", 0) == 0 || name == std::string(kManifestName) + ".tmp";
      if (!listed && ours) fs::remove(entry.path());
    }
  }
};

ShardWriter::ShardWriter(ShardWriterOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = std::move(options);
  if (m.options.format != "tar" && m.options.format != "tfrecord")
    throw Error("unknown shard format '" + m.options.format + "' (tar or tfrecord)");
  if ((m.options.shard_samples == 0) == (m.options.shard_bytes == 0))
    throw Error("give either shard samples or shard bytes");
  m.manifest.shard_format = m.options.format;
  m.manifest.cut_samples = m.options.shard_samples;
  m.manifest.cut_bytes = m.options.shard_bytes;
  m.manifest.fields = m.options.fields;
  m.fields = detail::prepare_fields(m.manifest.fields);  // its entries point at these

  std::error_code ec;
  fs::create_directories(m.options.dir, ec);
  if (ec) throw Error("cannot create " + m.options.dir + ": " + ec.message());
  std::optional<Manifest> old = read_manifest(m.options.dir);
  if (old) {
    m.adopt(std::move(*old));
  } else {
    for (const auto& entry : fs::directory_iterator(m.options.dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("shard-", 0) != 0 && name != std::string(kManifestName) + ".tmp")
        throw Error(m.options.dir + " is not empty and has no manifest.json (it holds " + name +
                    "); write to an empty or new folder");
    }
  }
  m.remove_leftovers();
}

ShardWriter::~ShardWriter() {
  if (impl_ && impl_->out) {
    const std::string tmp = impl_->out->path();
    impl_->out.reset();
    ::unlink(tmp.c_str());
  }
}

std::uint64_t ShardWriter::resume_batch() const { return impl_->manifest.resume_batch; }
std::uint64_t ShardWriter::resume_row() const { return impl_->manifest.resume_row; }
std::uint64_t ShardWriter::samples_kept() const { return impl_->kept_samples; }
std::size_t ShardWriter::shards_kept() const { return impl_->kept_shards; }
bool ShardWriter::already_complete() const { return impl_->was_complete; }
const Manifest& ShardWriter::manifest() const { return impl_->manifest; }

void ShardWriter::add(std::uint64_t id, std::span<const std::span<const std::byte>> values,
                      std::uint64_t next_batch, std::uint64_t next_row) {
  Impl& m = *impl_;
  if (m.manifest.complete) throw Error(m.options.dir + ": add after finish");
  if (values.size() != m.fields.size())
    throw Error("sample " + std::to_string(id) + " has " + std::to_string(values.size()) +
                " fields; the shards have " + std::to_string(m.fields.size()));
  for (std::size_t i = 0; i < m.fields.size(); ++i) {
    const auto& f = m.fields[i];
    if (!f.bytes && values[i].size() != f.elements * dtype_size(f.dtype))
      throw Error("sample " + std::to_string(id) + ", field '" + f.spec->name + "': " +
                  std::to_string(values[i].size()) + " bytes, expected " +
                  std::to_string(f.elements * dtype_size(f.dtype)));
  }
  const std::string key = detail::sample_key(id);
  std::uint64_t size;
  if (m.tar()) {
    m.tar_sample.encode(key, m.fields, values);
    size = m.tar_sample.size();
  } else {
    detail::encode_example(key, m.fields, values, m.encoded);
    size = detail::kTFRecordOverhead + m.encoded.size();
  }
  // The cut, decided here in sample order (see the header).
  if (m.out) {
    const bool full = m.options.shard_samples ? m.out_samples >= m.options.shard_samples
                                              : m.out->bytes() + size + m.end_bytes() > m.options.shard_bytes;
    if (full) m.close_current();
  }
  if (!m.out) m.open_next();
  m.record_offsets.push_back(m.out->bytes());
  if (m.tar()) {
    m.tar_sample.write([&](std::span<const std::byte> piece) { m.out->write(piece); });
  } else {
    const auto data = std::as_bytes(std::span(m.encoded.data(), m.encoded.size()));
    m.out->write(detail::tfrecord_header(data));
    m.out->write(data);
    m.out->write(detail::tfrecord_footer(data));
  }
  ++m.out_samples;
  m.next_batch = next_batch;
  m.next_row = next_row;
}

const Manifest& ShardWriter::finish() {
  Impl& m = *impl_;
  if (m.manifest.complete) return m.manifest;
  m.close_current();
  m.manifest.complete = true;
  write_manifest(m.options.dir, m.manifest);
  return m.manifest;
}

}  // namespace sluice::io
