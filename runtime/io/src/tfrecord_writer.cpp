#include "sluice/io/tfrecord_writer.h"

#include <cerrno>
#include <cstring>

#include "sluice/error.h"
#include "tfrecord_format.h"

namespace sluice::io {

TFRecordWriter::TFRecordWriter(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw Error("cannot create " + path_ + ": " + std::strerror(errno));
}

TFRecordWriter::~TFRecordWriter() {
  if (file_) std::fclose(file_);
}

void TFRecordWriter::write(std::span<const std::byte> record) {
  if (!file_) throw Error(path_ + ": write after close");
  const auto header = detail::tfrecord_header(record);
  const auto footer = detail::tfrecord_footer(record);
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size() ||
      std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fwrite(footer.data(), 1, footer.size(), file_) != footer.size())
    throw Error("cannot write " + path_ + ": " + std::strerror(errno));
  ++records_;
}

void TFRecordWriter::close() {
  if (!file_) return;
  const bool ok = std::fflush(file_) == 0;
  const int err = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) throw Error("cannot write " + path_ + ": " + std::strerror(err));
}

}  // namespace sluice::io
