#include "sluice/io/example.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "example.pb.h"
#include "sluice/error.h"

namespace sluice::io {

std::string_view feature_kind_name(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::bytes_list: return "bytes_list";
    case FeatureKind::float_list: return "float_list";
    case FeatureKind::int64_list: return "int64_list";
    case FeatureKind::none: break;
  }
  return "none";
}

struct Example::Impl {
  tensorflow::Example message;

  const tensorflow::Feature* find(std::string_view name) const {
    const auto& map = message.features().feature();
    auto it = map.find(std::string(name));
    return it == map.end() ? nullptr : &it->second;
  }
  const tensorflow::Feature& get(std::string_view name, FeatureKind want) const {
    const tensorflow::Feature* f = find(name);
    if (!f) throw Error("tf.train.Example has no feature '" + std::string(name) + "'");
    FeatureKind have = kind_of(*f);
    if (have != want)
      throw Error("tf.train.Example feature '" + std::string(name) + "' is a " +
                  std::string(feature_kind_name(have)) + ", not a " +
                  std::string(feature_kind_name(want)));
    return *f;
  }
  static FeatureKind kind_of(const tensorflow::Feature& f) {
    switch (f.kind_case()) {
      case tensorflow::Feature::kBytesList: return FeatureKind::bytes_list;
      case tensorflow::Feature::kFloatList: return FeatureKind::float_list;
      case tensorflow::Feature::kInt64List: return FeatureKind::int64_list;
      default: return FeatureKind::none;
    }
  }
};

Example::Example() : impl_(std::make_unique<Impl>()) {}
Example::~Example() = default;

void Example::parse(std::span<const std::byte> bytes) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error("malformed tf.train.Example: " + std::to_string(bytes.size()) + " bytes, over 2 GiB");
  if (!impl_->message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error("malformed tf.train.Example (" + std::to_string(bytes.size()) +
                " bytes do not parse as one)");
}

std::vector<FeatureInfo> Example::features() const {
  std::vector<FeatureInfo> out;
  for (const auto& [name, f] : impl_->message.features().feature()) {
    FeatureKind k = Impl::kind_of(f);
    std::size_t n = 0;
    if (k == FeatureKind::bytes_list) n = static_cast<std::size_t>(f.bytes_list().value_size());
    if (k == FeatureKind::float_list) n = static_cast<std::size_t>(f.float_list().value_size());
    if (k == FeatureKind::int64_list) n = static_cast<std::size_t>(f.int64_list().value_size());
    out.push_back({name, k, n});
  }
  std::sort(out.begin(), out.end(),
            [](const FeatureInfo& a, const FeatureInfo& b) { return a.name < b.name; });
  return out;
}

FeatureKind Example::kind(std::string_view name) const {
  const tensorflow::Feature* f = impl_->find(name);
  return f ? Impl::kind_of(*f) : FeatureKind::none;
}

std::span<const float> Example::floats(std::string_view name) const {
  const auto& v = impl_->get(name, FeatureKind::float_list).float_list().value();
  return {v.data(), static_cast<std::size_t>(v.size())};
}

std::span<const std::int64_t> Example::int64s(std::string_view name) const {
  const auto& v = impl_->get(name, FeatureKind::int64_list).int64_list().value();
  return {reinterpret_cast<const std::int64_t*>(v.data()), static_cast<std::size_t>(v.size())};
}

std::vector<std::string_view> Example::bytes(std::string_view name) const {
  const auto& v = impl_->get(name, FeatureKind::bytes_list).bytes_list().value();
  std::vector<std::string_view> out;
  out.reserve(static_cast<std::size_t>(v.size()));
  for (const std::string& s : v) out.emplace_back(s);
  return out;
}

std::size_t Example::count(std::string_view name) const {
  const tensorflow::Feature* f = impl_->find(name);
  if (!f) return 0;
  switch (Impl::kind_of(*f)) {
    case FeatureKind::bytes_list: return static_cast<std::size_t>(f->bytes_list().value_size());
    case FeatureKind::float_list: return static_cast<std::size_t>(f->float_list().value_size());
    case FeatureKind::int64_list: return static_cast<std::size_t>(f->int64_list().value_size());
    case FeatureKind::none: break;
  }
  return 0;
}

std::string_view Example::bytes_at(std::string_view name, std::size_t i) const {
  const auto& v = impl_->get(name, FeatureKind::bytes_list).bytes_list().value();
  if (i >= static_cast<std::size_t>(v.size()))
    throw Error("tf.train.Example feature '" + std::string(name) + "' has " + std::to_string(v.size()) +
                " entries; entry " + std::to_string(i) + " asked for");
  return v.Get(static_cast<int>(i));
}

namespace {

template <typename Out, typename In>
void convert(std::span<const In> in, std::byte* out) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    Out v = static_cast<Out>(in[i]);
    std::memcpy(out + i * sizeof(Out), &v, sizeof(Out));
  }
}

template <typename In>
void convert_to(DType dtype, std::span<const In> in, std::byte* out, std::string_view name) {
  switch (dtype) {
    case DType::u8: return convert<std::uint8_t>(in, out);
    case DType::i8: return convert<std::int8_t>(in, out);
    case DType::u16: return convert<std::uint16_t>(in, out);
    case DType::i16: return convert<std::int16_t>(in, out);
    case DType::u32: return convert<std::uint32_t>(in, out);
    case DType::i32: return convert<std::int32_t>(in, out);
    case DType::u64: return convert<std::uint64_t>(in, out);
    case DType::i64: return convert<std::int64_t>(in, out);
    case DType::f32: return convert<float>(in, out);
    case DType::f64: return convert<double>(in, out);
    case DType::boolean: {
      for (std::size_t i = 0; i < in.size(); ++i) out[i] = std::byte{in[i] != In{0}};
      return;
    }
    default:
      throw Error("tf.train.Example feature '" + std::string(name) + "': cannot convert to " +
                  std::string(dtype_name(dtype)));
  }
}

}  // namespace

void Example::copy_to(std::string_view name, DType dtype, std::span<std::byte> out) const {
  const FeatureKind k = kind(name);
  std::size_t count;
  if (k == FeatureKind::float_list) count = floats(name).size();
  else if (k == FeatureKind::int64_list) count = int64s(name).size();
  else if (k == FeatureKind::none) throw Error("tf.train.Example has no feature '" + std::string(name) + "'");
  else throw Error("tf.train.Example feature '" + std::string(name) + "' is a bytes_list, not numeric");
  if (count * dtype_size(dtype) != out.size())
    throw Error("tf.train.Example feature '" + std::string(name) + "' has " + std::to_string(count) +
                " values; the buffer holds " + std::to_string(out.size() / dtype_size(dtype)) +
                " of " + std::string(dtype_name(dtype)));
  if (k == FeatureKind::float_list) convert_to(dtype, floats(name), out.data(), name);
  else convert_to(dtype, int64s(name), out.data(), name);
}

}  // namespace sluice::io
