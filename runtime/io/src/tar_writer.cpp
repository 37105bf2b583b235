#include "sluice/io/tar_writer.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "output_file.h"
#include "sluice/error.h"
#include "tar_format.h"

namespace sluice::io {
namespace {

void put_octal(std::byte* field, std::size_t width, std::uint64_t value) {
  // width - 1 octal digits and a NUL; base-256 (GNU) where they do not suffice.
  if (width - 1 < 22 && value >> (3 * (width - 1))) {
    std::memset(field, 0, width);
    for (std::size_t i = width; i-- > 1 && value; value >>= 8) field[i] = std::byte(value & 0xff);
    field[0] = std::byte{0x80};
    return;
  }
  std::snprintf(reinterpret_cast<char*>(field), width, "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
}

void put_string(std::byte* field, std::size_t width, std::string_view s) {
  std::memcpy(field, s.data(), std::min(width, s.size()));
}

void header(std::string_view name, std::uint64_t size, char type, std::span<std::byte, 512> out) {
  std::byte* b = out.data();
  std::memset(b, 0, 512);
  put_string(b, 100, name);
  put_octal(b + 100, 8, 0644);
  put_octal(b + 108, 8, 0);
  put_octal(b + 116, 8, 0);
  put_octal(b + 124, 12, size);
  put_octal(b + 136, 12, 0);
  b[156] = std::byte(type);
  put_string(b + 257, 6, std::string_view("ustar\0", 6));
  put_string(b + 263, 2, "00");
  std::memset(b + 148, ' ', 8);
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(b[i]);
  std::snprintf(reinterpret_cast<char*>(b + 148), 8, "%06o", sum);  // 6 digits, NUL, then ' '
  b[155] = std::byte{' '};
}

// A pax record "<len> path=<name>\n", len counting itself.
std::string pax_record(std::string_view key, std::string_view value) {
  const std::size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t len = body + 1;
  while (std::to_string(len).size() + body > len) ++len;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

}  // namespace

void tar_file_header(std::string_view name, std::uint64_t size, std::span<std::byte, 512> out) {
  header(name, size, '0', out);
}

struct TarWriter::Impl {
  std::string path;
  detail::OutputFile out;
  bool finished = false;
  explicit Impl(std::string p) : path(std::move(p)), out(path + ".tmp") {}
  void pad(std::uint64_t size) {
    static const std::array<std::byte, detail::kTarBlock> zero{};
    const std::uint64_t n = detail::tar_padded(size) - size;
    if (n) out.write(std::span(zero.data(), n));
  }
};

TarWriter::TarWriter(std::string path) : impl_(std::make_unique<Impl>(std::move(path))) {}

TarWriter::~TarWriter() {
  if (impl_ && !impl_->finished) ::unlink(impl_->out.path().c_str());
}

std::uint64_t TarWriter::bytes() const { return impl_->out.bytes(); }

void TarWriter::add(std::string_view name, std::span<const std::byte> data) {
  if (impl_->finished) throw Error(impl_->path + ": add after finish");
  std::array<std::byte, detail::kTarBlock> block;
  if (name.size() > 100) {
    const std::string record = pax_record("path", name);
    header("././@PaxHeader", record.size(), 'x', block);
    impl_->out.write(block);
    impl_->out.write(record);
    impl_->pad(record.size());
  }
  header(name.substr(0, 100), data.size(), '0', block);
  impl_->out.write(block);
  impl_->out.write(data);
  impl_->pad(data.size());
}

ShardSummary TarWriter::finish() {
  static const std::array<std::byte, 2 * detail::kTarBlock> end{};
  impl_->out.write(end);
  impl_->out.finish();
  detail::publish_file(impl_->out.path(), impl_->path);
  impl_->finished = true;
  return {impl_->path, samples_, impl_->out.bytes(), impl_->out.checksum()};
}

}  // namespace sluice::io
