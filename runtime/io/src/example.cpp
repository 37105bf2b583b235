#include "sluice/io/example.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <google/protobuf/stubs/logging.h>

#include <mutex>

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
  tensorflow::SequenceExample sequence;
  bool is_sequence = false;

  const char* type() const { return is_sequence ? "tf.train.SequenceExample" : "tf.train.Example"; }
  const tensorflow::Features& features() const {
    return is_sequence ? sequence.context() : message.features();
  }
  const tensorflow::FeatureList* feature_list(std::string_view name) const {
    if (!is_sequence) return nullptr;
    const auto& lists = sequence.feature_lists().feature_list();
    auto it = lists.find(std::string(name));
    return it == lists.end() ? nullptr : &it->second;
  }
  // "feature 'x'" or "feature_list 'x' step 3", for messages.
  static std::string label(std::string_view name, std::size_t step) {
    if (step == kFeatures) return "feature '" + std::string(name) + "'";
    return "feature_list '" + std::string(name) + "' step " + std::to_string(step);
  }

  const tensorflow::Feature* find(std::string_view name, std::size_t step) const {
    if (step == kFeatures) {
      const auto& map = features().feature();
      auto it = map.find(std::string(name));
      return it == map.end() ? nullptr : &it->second;
    }
    const tensorflow::FeatureList* list = feature_list(name);
    if (!list || step >= static_cast<std::size_t>(list->feature_size())) return nullptr;
    return &list->feature(static_cast<int>(step));
  }
  [[noreturn]] void absent(std::string_view name, std::size_t step) const {
    const tensorflow::FeatureList* list = step == kFeatures ? nullptr : feature_list(name);
    if (list)
      throw Error(std::string(type()) + " feature_list '" + std::string(name) + "' has " +
                  std::to_string(list->feature_size()) + " steps; step " + std::to_string(step) +
                  " (0-based) asked for");
    throw Error(std::string(type()) + " has no " +
                (step == kFeatures ? label(name, step) : "feature_list '" + std::string(name) + "'"));
  }
  const tensorflow::Feature& get(std::string_view name, FeatureKind want, std::size_t step) const {
    const tensorflow::Feature* f = find(name, step);
    if (!f) absent(name, step);
    FeatureKind have = kind_of(*f);
    if (have != want)
      throw Error(std::string(type()) + " " + label(name, step) + " is a " +
                  std::string(feature_kind_name(have)) + ", not a " + std::string(feature_kind_name(want)));
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
  static std::size_t count_of(const tensorflow::Feature& f) {
    switch (kind_of(f)) {
      case FeatureKind::bytes_list: return static_cast<std::size_t>(f.bytes_list().value_size());
      case FeatureKind::float_list: return static_cast<std::size_t>(f.float_list().value_size());
      case FeatureKind::int64_list: return static_cast<std::size_t>(f.int64_list().value_size());
      case FeatureKind::none: break;
    }
    return 0;
  }
};

namespace {

// Reads the varint at bytes[at], advancing at; false past the end.
bool read_varint(std::span<const std::byte> bytes, std::size_t& at, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
    const auto b = static_cast<std::uint8_t>(bytes[at++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Whether the top level of the message in `bytes` has a length-delimited
// field 2: what a SequenceExample's feature_lists are, and an Example lacks.
bool has_field_2(std::span<const std::byte> bytes) {
  std::size_t at = 0;
  std::uint64_t tag = 0, v = 0;
  while (at < bytes.size() && read_varint(bytes, at, tag)) {
    switch (tag & 7) {
      case 0: if (!read_varint(bytes, at, v)) return false; break;
      case 1: at += 8; break;
      case 5: at += 4; break;
      case 2:
        if (tag >> 3 == 2) return true;
        if (!read_varint(bytes, at, v) || v > bytes.size() - at) return false;
        at += static_cast<std::size_t>(v);
        break;
      default: return false;
    }
  }
  return false;
}

// libprotobuf's log (e.g. "String field ... contains invalid UTF-8 data")
// would go raw to stderr; it is kept here instead, per thread, and becomes
// part of the sluice::Error of the parse that logged it.
thread_local std::string protobuf_log;

void capture_protobuf_log(google::protobuf::LogLevel, const char*, int, const std::string& message) {
  if (!protobuf_log.empty()) protobuf_log += "; ";
  protobuf_log += message;
}

void route_protobuf_log() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(capture_protobuf_log); });
}

// " (protobuf: ...)" when protobuf logged during the last parse, else "".
std::string protobuf_said() {
  std::string said = protobuf_log.empty() ? "" : " (protobuf: " + protobuf_log + ")";
  protobuf_log.clear();
  return said;
}

// Parses `bytes` into `message` (a `type`); throws sluice::Error with
// protobuf's own complaint.
template <typename Message>
void parse_into(Message& message, std::span<const std::byte> bytes, const std::string& type) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error("malformed " + type + ": " + std::to_string(bytes.size()) + " bytes, over 2 GiB");
  protobuf_log.clear();
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error("malformed " + type + " (" + std::to_string(bytes.size()) + " bytes do not parse as one)" +
                protobuf_said());
}

std::string names_of(const std::vector<FeatureInfo>& infos) {
  std::string out;
  for (const FeatureInfo& f : infos) out += (out.empty() ? "" : ", ") + f.name;
  return out.empty() ? "none" : out;
}

}  // namespace

Example::Example() : impl_(std::make_unique<Impl>()) { route_protobuf_log(); }
Example::~Example() = default;

void Example::parse(std::span<const std::byte> bytes) {
  impl_->is_sequence = false;
  parse_into(impl_->message, bytes, "tf.train.Example");
  // A SequenceExample parses as an Example (its context is field 1, like
  // Example.features) with its feature_lists (field 2) left as unknown fields.
  if (!has_field_2(bytes)) return;
  const bool sequence = impl_->sequence.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  protobuf_log.clear();
  if (!sequence || !impl_->sequence.has_feature_lists()) return;
  impl_->is_sequence = true;
  const std::string lists = names_of(feature_lists());
  impl_->is_sequence = false;
  throw Error("a tf.train.SequenceExample, not a tf.train.Example (feature_lists: " + lists +
              "; read as an Example they would be lost): parse it with sluice.sequence_example(sample) "
              "(C++: Example::parse_sequence)");
}

void Example::parse_sequence(std::span<const std::byte> bytes) {
  impl_->is_sequence = true;
  parse_into(impl_->sequence, bytes, "tf.train.SequenceExample");
}

bool Example::is_sequence() const { return impl_->is_sequence; }

std::vector<FeatureInfo> Example::features() const {
  std::vector<FeatureInfo> out;
  for (const auto& [name, f] : impl_->features().feature()) out.push_back({name, Impl::kind_of(f), Impl::count_of(f)});
  std::sort(out.begin(), out.end(),
            [](const FeatureInfo& a, const FeatureInfo& b) { return a.name < b.name; });
  return out;
}

std::vector<FeatureInfo> Example::feature_lists() const {
  std::vector<FeatureInfo> out;
  if (!impl_->is_sequence) return out;
  for (const auto& [name, list] : impl_->sequence.feature_lists().feature_list()) {
    const FeatureKind k = list.feature_size() > 0 ? Impl::kind_of(list.feature(0)) : FeatureKind::none;
    out.push_back({name, k, static_cast<std::size_t>(list.feature_size())});
  }
  std::sort(out.begin(), out.end(),
            [](const FeatureInfo& a, const FeatureInfo& b) { return a.name < b.name; });
  return out;
}

std::size_t Example::steps(std::string_view name) const {
  const tensorflow::FeatureList* list = impl_->feature_list(name);
  return list ? static_cast<std::size_t>(list->feature_size()) : 0;
}

FeatureKind Example::kind(std::string_view name, std::size_t step) const {
  const tensorflow::Feature* f = impl_->find(name, step);
  return f ? Impl::kind_of(*f) : FeatureKind::none;
}

std::span<const float> Example::floats(std::string_view name, std::size_t step) const {
  const auto& v = impl_->get(name, FeatureKind::float_list, step).float_list().value();
  return {v.data(), static_cast<std::size_t>(v.size())};
}

std::span<const std::int64_t> Example::int64s(std::string_view name, std::size_t step) const {
  const auto& v = impl_->get(name, FeatureKind::int64_list, step).int64_list().value();
  return {reinterpret_cast<const std::int64_t*>(v.data()), static_cast<std::size_t>(v.size())};
}

std::vector<std::string_view> Example::bytes(std::string_view name, std::size_t step) const {
  const auto& v = impl_->get(name, FeatureKind::bytes_list, step).bytes_list().value();
  std::vector<std::string_view> out;
  out.reserve(static_cast<std::size_t>(v.size()));
  for (const std::string& s : v) out.emplace_back(s);
  return out;
}

std::size_t Example::count(std::string_view name, std::size_t step) const {
  const tensorflow::Feature* f = impl_->find(name, step);
  return f ? Impl::count_of(*f) : 0;
}

std::string_view Example::bytes_at(std::string_view name, std::size_t i, std::size_t step) const {
  const auto& v = impl_->get(name, FeatureKind::bytes_list, step).bytes_list().value();
  if (i >= static_cast<std::size_t>(v.size()))
    throw Error(std::string(impl_->type()) + " " + Impl::label(name, step) + " has " + std::to_string(v.size()) +
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
void convert_to(DType dtype, std::span<const In> in, std::byte* out, const std::string& what) {
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
      throw Error(what + ": cannot convert to " + std::string(dtype_name(dtype)));
  }
}

}  // namespace

void Example::copy_to(std::string_view name, DType dtype, std::span<std::byte> out, std::size_t step) const {
  const FeatureKind k = kind(name, step);
  const std::string what = std::string(impl_->type()) + " " + Impl::label(name, step);
  if (k == FeatureKind::none) impl_->absent(name, step);
  if (k == FeatureKind::bytes_list) throw Error(what + " is a bytes_list, not numeric");
  const std::size_t count = this->count(name, step);
  if (count * dtype_size(dtype) != out.size())
    throw Error(what + " has " + std::to_string(count) + " values; the buffer holds " +
                std::to_string(out.size() / dtype_size(dtype)) + " of " + std::string(dtype_name(dtype)));
  if (k == FeatureKind::float_list) convert_to(dtype, floats(name, step), out.data(), what);
  else convert_to(dtype, int64s(name, step), out.data(), what);
}

}  // namespace sluice::io
