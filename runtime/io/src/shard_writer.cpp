#include "sluice/io/shard_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "file_util.h"
#include "output_file.h"
#include "publisher.h"
#include "sample_encoding.h"
#include "sluice/error.h"
#include "sluice/io/atomic_file.h"
#include "sluice/io/tar_index.h"
#include "sluice/io/tfrecord.h"
#include "sluice/remote/cache.h"
#include "sluice/remote/s3_listing.h"
#include "sluice/remote/upload.h"
#include "sluice/remote/url.h"
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

// Threads: the caller's thread writes shards; the Publisher's thread runs
// one shard's publication at a time (close_current's job). A job touches only
// what it captured, the read-only options and paths, and `uploader`, which
// the caller's thread leaves alone between the constructor and finish()
// (finish() waits for the last job first; Publisher's joins order the uses).
// Fork: the constructor's Uploader (the store's manifest, HEADs) is dropped
// before it returns, and the first job makes another, so the workers a
// Loader forks after the constructor inherit no curl handle, socket or loop.
struct ShardWriter::Impl {
  ShardWriterOptions options;
  std::string local;   // the folder shards are written to: options.dir, or the staging folder
  std::string remote;  // "s3://bucket/prefix/" when writing to a store, else ""
  // `local` itself, opened and flock'ed for the writer's life: a second
  // writer of the folder is refused instead of both failing on each other's
  // renames. The kernel drops the lock with the last descriptor of it (a
  // kill -9 too); no file is left in the folder for it.
  detail::Fd lock;
  std::unique_ptr<remote::Uploader> uploader;
  std::vector<detail::EncodedField> fields;
  Manifest manifest;
  bool was_complete = false;
  std::vector<std::string> notes;
  std::uint64_t kept_samples = 0;
  std::size_t kept_shards = 0;

  // The shard being written.
  std::shared_ptr<detail::OutputFile> out;
  std::string out_name;
  std::uint64_t out_samples = 0;
  std::vector<std::uint64_t> record_offsets;  // tfrecord: for the index
  std::uint64_t next_batch = 0, next_row = 0;
  detail::TarSample tar_sample;  // tar: the sample's members, by reference
  std::string encoded;           // tfrecord: the serialized Example
  detail::Publisher publisher;   // last: its destructor joins a running job first

  std::string path(const std::string& name) const { return (fs::path(local) / name).string(); }
  std::string url(const std::string& name) const { return remote + name; }
  remote::Uploader& store() {
    if (!uploader) {
      remote::UploadOptions up;
      if (options.remote_retries) up.transfer.max_retries = *options.remote_retries;
      if (options.remote_timeout_ms) up.transfer.stall_timeout_ms = *options.remote_timeout_ms;
      uploader = std::make_unique<remote::Uploader>(std::move(up));
    }
    return *uploader;
  }
  bool tar() const { return options.format == "tar"; }

  // Bytes the sample adds to a shard, and where the shard's end adds more.
  std::uint64_t end_bytes() const { return tar() ? 2 * detail::kTarBlock : 0; }

  void open_next() {
    out_name = shard_name(manifest.shards.size(), options.format);
    out = std::make_shared<detail::OutputFile>(path(out_name) + ".tmp");
    out_samples = 0;
    record_offsets.clear();
  }

  // Ends the shard being written and hands its publication to the
  // Publisher: fsync, rename, the index (a TFRecord's from the offsets
  // written; a tar's by scanning the renamed shard's headers, as a reader
  // would, tar_index.h), the upload (index first, so a shard in the store has
  // its index), then the manifest that lists it. So
  // the manifest, local or in the store, never lists a shard that is not
  // whole where it says, while the next shard is already being written.
  void close_current() {
    if (!out) return;
    if (tar()) {
      static const std::byte zero[2 * detail::kTarBlock] = {};
      out->write(std::span(zero, sizeof zero));
    }
    manifest.shards.push_back({out_name, out_samples, out->bytes(), out->checksum()});
    manifest.resume_batch = next_batch;
    manifest.resume_row = next_row;
    std::optional<TFRecordIndex> index;
    if (!tar()) {
      index.emplace();
      index->offsets = std::move(record_offsets);
      index->offsets.push_back(out->bytes());
    }
    publisher.submit([this, file = std::move(out), name = out_name, index = std::move(index), listed = manifest] {
      file->finish();
      const std::string final_path = path(name);
      detail::publish_file(file->path(), final_path);
      const std::string index_path = final_path + ".idx";
      if (index) write_tfrecord_index(index_path, *index);
      else write_tar_index(index_path, scan_tar(final_path));
      if (remote.empty()) return write_manifest(local, listed);
      store().put_file(index_path, url(name + ".idx"));
      store().put_file(final_path, url(name));
      fs::remove(final_path);
      fs::remove(index_path);
      store().put_text(listed.to_json(), url(kManifestName));
    });
    out.reset();
    record_offsets.clear();
  }

  // Why a listed shard cannot be kept, or "" when it can: checked against
  // the local file's size and checksum, or the stored object's size.
  std::string check_kept(const ManifestShard& shard) {
    if (remote.empty()) return check_shard(local, shard);
    const std::optional<std::uint64_t> size = store().object_size(url(shard.name));
    if (!size) return url(shard.name) + " is missing";
    if (*size != shard.bytes)
      return url(shard.name) + " has " + std::to_string(*size) + " bytes, the manifest says " +
             std::to_string(shard.bytes);
    return "";
  }

  // Throws unless `old` was written with the plan this writer follows: its
  // kept shards end at a plan position that means the same samples only then.
  void check_plan(const Manifest& old) const {
    if (options.plan.empty() || old.plan == options.plan) return;
    const std::string ways = "; to resume, run again with the settings it was written with, or to start over, "
                             "write to a new folder or delete " + options.dir;
    if (old.plan.empty()) {
      if (old.complete) return;  // nothing to add to it: it stays as written
      throw Error(options.dir + ": its manifest.json records no plan (an older Sluice wrote it), so resuming "
                  "could repeat or miss samples; write to a new folder or delete " + options.dir);
    }
    std::string differs;
    auto note = [&](const std::string& name, const std::string& was, const std::string& now) {
      differs += (differs.empty() ? "" : ", ") + name + " " + now + " (written with " + was + ")";
    };
    for (const auto& [name, value] : options.plan) {
      const auto it = old.plan.find(name);
      const std::string was = it == old.plan.end() ? "none" : it->second;
      if (was != value) note(name, was, value);
    }
    for (const auto& [name, value] : old.plan)
      if (!options.plan.count(name)) note(name, value, "none");
    throw Error(options.dir + " was written with another plan (this run's samples would not follow its shards: "
                "some repeated, others missed): " + differs + ways);
  }

  // Keeps the shards an earlier run of the same conversion completed.
  void adopt(Manifest old) {
    std::string differs;
    auto differ = [&](const std::string& what) { differs += (differs.empty() ? "" : ", ") + what; };
    if (old.shard_format != manifest.shard_format) differ("format " + old.shard_format + ", not " + manifest.shard_format);
    auto cut = [](const Manifest& m) {
      return m.cut_samples > 0 ? std::to_string(m.cut_samples) + " samples a shard"
                               : std::to_string(m.cut_bytes) + " bytes a shard";
    };
    if (old.cut_samples != manifest.cut_samples || old.cut_bytes != manifest.cut_bytes)
      differ(cut(old) + ", not " + cut(manifest));
    if (old.fields != manifest.fields) differ("other fields (names, dtypes, shapes or extensions)");
    if (!differs.empty())
      throw Error(options.dir + " holds another conversion: its manifest.json has " + differs +
                  "; write to a new folder or delete it");
    check_plan(old);
    std::size_t good = 0;
    for (; good < old.shards.size(); ++good) {
      if (old.shards[good].name != shard_name(good, options.format)) break;
      if (!check_kept(old.shards[good]).empty()) break;
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
    if (manifest.plan.empty()) manifest.plan = old.plan;
    manifest.resume_batch = old.resume_batch;
    manifest.resume_row = old.resume_row;
    manifest.complete = was_complete;
    kept_shards = good;
    kept_samples = manifest.samples();
  }

  // Deletes what is not a listed shard (or its index): partial shards of a
  // killed run, and *.tmp files.
  void remove_leftovers() {
    for (const auto& entry : fs::directory_iterator(local)) {
      const std::string name = entry.path().filename().string();
      if (name == kManifestName) continue;
      bool listed = false;
      for (const auto& s : manifest.shards)
        if (name == s.name || name == s.name + ".idx") listed = true;
      const bool ours = name.rfind("shard-", 0) == 0 || is_atomic_temporary(name, kManifestName);
      // A staging folder keeps nothing: what is kept is in the store.
      if ((!listed || !remote.empty()) && ours) fs::remove(entry.path());
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
  m.manifest.plan = m.options.plan;
  m.fields = detail::prepare_fields(m.manifest.fields);  // its entries point at these
  if (!m.tar()) {
    // tf.train.Example holds float32 and int64 only: a float64 field is
    // written rounded to float32, which the manifest records and a note says.
    for (std::size_t i = 0; i < m.fields.size(); ++i) {
      if (m.fields[i].bytes || m.fields[i].dtype != DType::f64) continue;
      m.manifest.fields[i].dtype = std::string(dtype_name(DType::f32));
      m.notes.push_back("field '" + m.manifest.fields[i].name + "' is float64: a TFRecord holds it as float32 " +
                        "(tf.train.Example's float_list), as its manifest says; --format tar keeps float64");
    }
  }

  if (remote::is_remote(m.options.dir)) {
    remote::check_writable(m.options.dir);
    m.remote = m.options.dir;
    if (m.remote.back() != '/') m.remote += '/';
    m.local = m.options.staging;
    if (m.local.empty()) {
      detail::Checksum of_url;
      of_url.update(std::as_bytes(std::span(m.remote.data(), m.remote.size())));
      const std::string cache = m.options.cache_dir.empty() ? remote::default_cache_dir() : m.options.cache_dir;
      m.local = cache + "/write/" + of_url.text().substr(5);
    }
  } else {
    m.local = m.options.dir;
  }
  std::error_code ec;
  fs::create_directories(m.local, ec);
  if (ec) throw Error("cannot create " + m.local + ": " + ec.message());
  m.lock = detail::Fd(::open(m.local.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (m.lock.get() < 0) throw Error("cannot open " + m.local + ": " + std::strerror(errno));
  if (::flock(m.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      throw Error(m.options.dir + " is being written by another sluice write (it holds a lock on " + m.local +
                  "): wait for it to end, or write to another folder");
    throw Error("cannot lock " + m.local + ": " + std::strerror(errno));
  }
  std::optional<Manifest> old;
  if (!m.remote.empty()) {
    const std::string where = m.url(kManifestName);
    std::optional<std::string> text;
    try {
      text = m.store().get_text(where);
    } catch (const Error& e) {
      fs::remove(m.local, ec);  // the staging folder just made, when empty
      throw Error("cannot write to " + m.remote + ": " + e.what());
    }
    if (text) old = Manifest::from_json(*text, where);
  } else {
    old = read_manifest(m.local);
  }
  // Only ours may be there without a manifest: shards of a run killed
  // before it listed any (redone), never a user's files.
  auto refuse_foreign = [&](const std::string& name) {
    if (name.rfind("shard-", 0) != 0 && !is_atomic_temporary(name, kManifestName))
      throw Error(m.options.dir + " is not empty and has no manifest.json (it holds " + name +
                  "); write to an empty or new " + (m.remote.empty() ? "folder" : "prefix"));
  };
  if (old) {
    m.adopt(std::move(*old));
  } else if (m.remote.empty()) {
    for (const auto& entry : fs::directory_iterator(m.local)) refuse_foreign(entry.path().filename().string());
  } else if (const remote::Url u = remote::parse_url(m.remote); u.scheme == remote::Scheme::s3) {
    // A web server has no listing, and a key may write without the right to
    // list (a refused ListObjectsV2): there the prefix is taken as it is.
    std::vector<remote::ObjectInfo> objects;
    try {
      objects = remote::list_objects(u.bucket(), u.key(), m.store().options().transfer);
    } catch (const Error&) {
    }
    for (const remote::ObjectInfo& o : objects) refuse_foreign(o.key.substr(u.key().size()));
  }
  m.remove_leftovers();
  m.uploader.reset();  // see Impl: nothing of it outlives the constructor into a fork
}

ShardWriter::~ShardWriter() {
  if (!impl_) return;
  try {
    impl_->publisher.wait();
  } catch (...) {  // the writer is being dropped after a failure; nothing to report to
  }
  if (impl_->out) {
    const std::string tmp = impl_->out->path();
    impl_->out.reset();
    ::unlink(tmp.c_str());
  }
  if (!impl_->remote.empty()) {
    std::error_code ignored;
    fs::remove(impl_->local, ignored);  // the staging folder, when nothing is left in it
  }
}

std::uint64_t ShardWriter::resume_batch() const { return impl_->manifest.resume_batch; }
std::uint64_t ShardWriter::resume_row() const { return impl_->manifest.resume_row; }
std::uint64_t ShardWriter::samples_kept() const { return impl_->kept_samples; }
std::size_t ShardWriter::shards_kept() const { return impl_->kept_shards; }
bool ShardWriter::already_complete() const { return impl_->was_complete; }
const std::vector<std::string>& ShardWriter::notes() const { return impl_->notes; }
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
    try {
      detail::encode_example(key, m.fields, values, m.encoded);
    } catch (const Error& e) {
      throw Error("sample " + std::to_string(id) + ", " + e.what());
    }
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

const Manifest& ShardWriter::stop() {
  Impl& m = *impl_;
  m.publisher.wait();
  if (m.out) {
    const std::string tmp = m.out->path();
    m.out.reset();
    ::unlink(tmp.c_str());
  }
  return m.manifest;
}

const Manifest& ShardWriter::finish() {
  Impl& m = *impl_;
  if (m.manifest.complete) return m.manifest;
  m.close_current();
  m.publisher.wait();
  m.manifest.complete = true;
  if (!m.remote.empty()) {
    m.store().put_text(m.manifest.to_json(), m.url(kManifestName));
  } else {
    write_manifest(m.local, m.manifest);
  }
  return m.manifest;
}

}  // namespace sluice::io
