#include "sample_encoding.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>


#include "sluice/error.h"
#include "sluice/half.h"
#include "sluice/io/tar_writer.h"
#include "proto_wire.h"
#include "tar_format.h"

namespace sluice::io::detail {
namespace {

bool is_integer(DType t) {
  switch (t) {
    case DType::u8: case DType::i8: case DType::u16: case DType::i16: case DType::u32:
    case DType::i32: case DType::u64: case DType::i64: case DType::boolean:
      return true;
    default:
      return false;
  }
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::u8: return "|u1";
    case DType::i8: return "|i1";
    case DType::u16: return "<u2";
    case DType::i16: return "<i2";
    case DType::u32: return "<u4";
    case DType::i32: return "<i4";
    case DType::u64: return "<u8";
    case DType::i64: return "<i8";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";  // numpy has no bfloat16: the bits, as the manifest's dtype says
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::boolean: return "|b1";
  }
  return "|u1";
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::int64_t integer_at(DType t, const std::byte* p) {
  switch (t) {
    case DType::u8: return load<std::uint8_t>(p);
    case DType::i8: return load<std::int8_t>(p);
    case DType::u16: return load<std::uint16_t>(p);
    case DType::i16: return load<std::int16_t>(p);
    case DType::u32: return load<std::uint32_t>(p);
    case DType::i32: return load<std::int32_t>(p);
    case DType::u64: return static_cast<std::int64_t>(load<std::uint64_t>(p));
    case DType::i64: return load<std::int64_t>(p);
    case DType::boolean: return load<std::uint8_t>(p) ? 1 : 0;
    default: return 0;
  }
}

float float_at(DType t, const std::byte* p) {
  switch (t) {
    case DType::f16: return half_to_float(load<std::uint16_t>(p));
    case DType::bf16: return bfloat16_to_float(load<std::uint16_t>(p));
    case DType::f32: return load<float>(p);
    case DType::f64: return static_cast<float>(load<double>(p));
    default: return 0;
  }
}

}  // namespace

std::vector<EncodedField> prepare_fields(std::vector<ManifestField>& fields) {
  if (fields.empty()) throw Error("no fields to write");
  std::vector<EncodedField> out;
  for (ManifestField& f : fields) {
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == "__key__")
      throw Error("field '" + f.name + "': not a name a shard member can have");
    EncodedField e;
    e.spec = &f;
    if (f.dtype == "bytes") {
      e.bytes = true;
      f.shape.clear();
      if (f.ext.empty()) f.ext = f.name;
    } else {
      auto dtype = parse_dtype(f.dtype);
      if (!dtype) throw Error("field '" + f.name + "': unknown dtype '" + f.dtype + "'");
      e.dtype = *dtype;
      f.dtype = std::string(dtype_name(*dtype));
      e.elements = 1;
      for (std::int64_t d : f.shape) {
        if (d < 0) throw Error("field '" + f.name + "': negative dimension");
        e.elements *= static_cast<std::uint64_t>(d);
      }
      const bool text = f.shape.empty() && is_integer(e.dtype);
      if (f.ext.empty()) {
        const char* kind = text ? "cls" : "npy";
        f.ext = f.name == kind ? kind : f.name + "." + kind;
      }
    }
    if (f.ext.find('/') != std::string::npos) throw Error("field '" + f.name + "': ext has a '/'");
    e.member_ext = f.ext;
    out.push_back(std::move(e));
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (out[i].member_ext == out[j].member_ext)
        throw Error("fields '" + fields[j].name + "' and '" + fields[i].name +
                    "' would both be tar members ." + out[i].member_ext);
  return out;
}

std::string sample_key(std::uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof text, "%09llu", static_cast<unsigned long long>(id));
  return text;
}

void encode_npy(DType dtype, std::span<const std::int64_t> shape, std::span<const std::byte> data,
                std::string& out) {
  std::string header = "{'descr': '" + std::string(npy_descr(dtype)) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t d = 0; d < shape.size(); ++d) header += std::to_string(shape[d]) + ", ";
  if (shape.size() > 1) header.resize(header.size() - 2);
  else if (shape.size() == 1) header.pop_back();
  header += "), }";
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  out.append("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
}

void TarSample::member(const std::string& name, std::span<const std::byte> data, bool external) {
  if (name.size() > 100) throw Error("tar member name '" + name + "' is longer than 100 bytes");
  std::array<std::byte, kTarBlock> block;
  tar_file_header(name, data.size(), block);
  const std::size_t padding = tar_padded(data.size()) - data.size();
  pieces_.push_back({nullptr, scratch_.size(), kTarBlock});
  scratch_.append(reinterpret_cast<const char*>(block.data()), block.size());
  if (external) {
    pieces_.push_back({data.data(), 0, data.size()});
  } else {
    pieces_.push_back({nullptr, scratch_.size(), data.size()});
    scratch_.append(reinterpret_cast<const char*>(data.data()), data.size());
  }
  if (padding) {
    pieces_.push_back({nullptr, scratch_.size(), padding});
    scratch_.append(padding, '\0');
  }
  size_ += kTarBlock + data.size() + padding;
}

void TarSample::encode(const std::string& key, const std::vector<EncodedField>& fields,
                       std::span<const std::span<const std::byte>> values) {
  scratch_.clear();
  pieces_.clear();
  size_ = 0;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const EncodedField& f = fields[i];
    const std::string name = key + "." + f.member_ext;
    if (f.bytes) {
      member(name, values[i], true);
      continue;
    }
    if (f.spec->shape.empty() && is_integer(f.dtype)) {
      payload_ = f.dtype == DType::u64 ? std::to_string(load<std::uint64_t>(values[i].data()))
                                       : std::to_string(integer_at(f.dtype, values[i].data()));
    } else {
      payload_.clear();
      encode_npy(f.dtype, f.spec->shape, values[i], payload_);
    }
    member(name, std::as_bytes(std::span(payload_.data(), payload_.size())), false);
  }
}

// tf.train.Example, serialized with proto_wire.h (Sluice links no libprotobuf:
// Debian's libsentencepiece exports its own protobuf-lite under the same
// names, and a second copy in one process crashed). The bytes are what protobuf's deterministic
// serialization writes: features' map entries sorted by key, each with its
// key (1) and Feature (2); a Feature holds one list, bytes_list (1) with a
// value per element, float_list (2) or int64_list (3) packed.
void encode_example(const std::string& key, const std::vector<EncodedField>& fields,
                    std::span<const std::span<const std::byte>> values, std::string& out) {
  std::vector<std::pair<std::string_view, std::size_t>> order;  // name, field index (SIZE_MAX: __key__)
  order.reserve(fields.size() + 1);
  order.emplace_back("__key__", SIZE_MAX);
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].spec->name != "__key__") order.emplace_back(fields[i].spec->name, i);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string features, entry, feature, list;
  for (std::size_t o = 0; o < order.size(); ++o) {
    if (o > 0 && order[o].first == order[o - 1].first) continue;  // a map keeps one value per key
    const std::size_t i = order[o].second;
    list.clear();
    int kind = 1;
    if (i == SIZE_MAX) {
      put_len_field(list, 1, key);
    } else {
      const EncodedField& f = fields[i];
      const std::byte* p = values[i].data();
      const std::size_t size = f.bytes ? 1 : dtype_size(f.dtype);
      std::string packed;
      if (f.bytes) {
        put_len_field(list, 1, std::string_view(reinterpret_cast<const char*>(p), values[i].size()));
      } else if (is_integer(f.dtype)) {
        kind = 3;
        for (std::uint64_t k = 0; k < f.elements; ++k) {
          if (f.dtype == DType::u64 && load<std::uint64_t>(p + k * size) > static_cast<std::uint64_t>(INT64_MAX))
            throw Error("field '" + f.spec->name + "': uint64 " + std::to_string(load<std::uint64_t>(p + k * size)) +
                        " does not fit a TFRecord's int64_list (--format tar keeps it)");
          put_varint(packed, static_cast<std::uint64_t>(integer_at(f.dtype, p + k * size)));
        }
        if (!packed.empty()) put_len_field(list, 1, packed);
      } else {
        kind = 2;
        for (std::uint64_t k = 0; k < f.elements; ++k) {
          const float v = float_at(f.dtype, p + k * size);
          char le[4];
          std::memcpy(le, &v, 4);  // little-endian hosts only, as the rest of the format code
          packed.append(le, 4);
        }
        if (!packed.empty()) put_len_field(list, 1, packed);
      }
    }
    feature.clear();
    put_len_field(feature, kind, list);
    entry.clear();
    put_len_field(entry, 1, order[o].first);
    put_len_field(entry, 2, feature);
    put_len_field(features, 1, entry);
  }
  out.clear();
  put_len_field(out, 1, features);
}

}  // namespace sluice::io::detail
