#include "sluice/io/tfrecord_writer.h"

#include <cerrno>
#include <cstring>

#include "sluice/error.h"
#include "sluice/io/crc32c.h"

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
  std::byte header[12];
  const std::uint64_t length = record.size();
  std::memcpy(header, &length, 8);
  const std::uint32_t length_crc = mask_crc(crc32c(std::span(header, 8)));
  std::memcpy(header + 8, &length_crc, 4);
  const std::uint32_t data_crc = mask_crc(crc32c(record));
  if (std::fwrite(header, 1, 12, file_) != 12 ||
      std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fwrite(&data_crc, 1, 4, file_) != 4)
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
