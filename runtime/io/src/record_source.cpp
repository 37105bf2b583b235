#include "sluice/io/record_source.h"

#include "file_util.h"
#include "sluice/error.h"

namespace sluice::io {

void read_sample(const RecordSource& source, std::uint64_t id, std::vector<std::byte>& buffer,
                 Sample& out) {
  if (id >= source.size())
    throw Error("sample " + std::to_string(id) + " out of range: the " +
                std::string(source.format()) + " source has " + std::to_string(source.size()));
  const SampleLocation where = source.locate(id);
  const std::string& path = source.files()[where.file];
  detail::Fd fd = detail::open_read(path);
  std::uint64_t length = where.whole_file ? detail::file_size(fd.get(), path) : where.length;
  buffer.resize(length);
  std::size_t got = detail::pread_full(fd.get(), buffer, where.offset, path);
  if (got < length)
    throw Error(detail::at_offset(path, where.offset + got,
                                  "truncated: sample " + std::to_string(id) + " needs " +
                                      std::to_string(length) + " bytes from offset " +
                                      std::to_string(where.offset) + ", the file ends after " +
                                      std::to_string(got)));
  source.decode(where, buffer, out);
}

}  // namespace sluice::io
