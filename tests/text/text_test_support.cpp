#include "text_test_support.h"

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace sluice::text::test {

std::vector<std::vector<std::uint32_t>> make_documents(const std::vector<std::uint64_t>& lengths, bool eos) {
  std::vector<std::vector<std::uint32_t>> docs;
  std::uint32_t next = 1;
  for (std::uint64_t n : lengths) {
    std::vector<std::uint32_t> doc(n);
    for (auto& t : doc) t = next++;
    if (eos && n > 0) doc.back() = 0;
    docs.push_back(std::move(doc));
  }
  return docs;
}

namespace {
void put(std::ofstream& out, std::uint32_t t, bool wide) {
  if (wide) {
    out.write(reinterpret_cast<const char*>(&t), 4);
  } else {
    const auto v = static_cast<std::uint16_t>(t);
    out.write(reinterpret_cast<const char*>(&v), 2);
  }
}
template <typename T>
void put_raw(std::ofstream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

void write_tokens(const std::string& path, const std::vector<std::vector<std::uint32_t>>& docs, bool wide) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& doc : docs)
    for (std::uint32_t t : doc) put(out, t, wide);
}

void write_megatron(const std::string& prefix, const std::vector<std::vector<std::uint32_t>>& docs, bool wide,
                    std::vector<std::int64_t> document_indices) {
  if (document_indices.empty())
    for (std::size_t d = 0; d <= docs.size(); ++d) document_indices.push_back(static_cast<std::int64_t>(d));
  write_tokens(prefix + ".bin", docs, wide);
  std::ofstream idx(prefix + ".idx", std::ios::binary);
  idx.write("MMIDIDX\0\0", 9);
  put_raw<std::uint64_t>(idx, 1);
  put_raw<std::uint8_t>(idx, wide ? 4 : 8);
  put_raw<std::uint64_t>(idx, docs.size());
  put_raw<std::uint64_t>(idx, document_indices.size());
  for (const auto& doc : docs) put_raw<std::int32_t>(idx, static_cast<std::int32_t>(doc.size()));
  std::int64_t at = 0;
  for (const auto& doc : docs) {
    put_raw<std::int64_t>(idx, at);
    at += static_cast<std::int64_t>(doc.size() * (wide ? 4 : 2));
  }
  for (std::int64_t first : document_indices) put_raw<std::int64_t>(idx, first);
}

std::vector<std::uint64_t> lengths(std::size_t count, std::uint64_t lo, std::uint64_t hi, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::uint64_t> dist(lo, hi);
  std::vector<std::uint64_t> out(count);
  for (auto& n : out) n = dist(gen);
  return out;
}

RowCopy fill_row(const PackedSource& source, std::uint64_t epoch, std::uint64_t row) {
  RowCopy copy(source.seq_len());
  source.fill(epoch, row, copy.view());
  return copy;
}

}  // namespace sluice::text::test
