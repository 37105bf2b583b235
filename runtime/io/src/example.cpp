#include "sluice/io/example.h"

#include <algorithm>
#include <cstring>

#include "example_decoder.h"
#include "sluice/error.h"
#include "sluice/half.h"

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
  detail::ExampleDecoder decoded;
  bool is_sequence = false;

  const char* type() const { return is_sequence ? "tf.train.SequenceExample" : "tf.train.Example"; }
  const detail::DecodedList* feature_list(std::string_view name) const {
    return is_sequence ? decoded.find_list(name) : nullptr;
  }
  // "feature 'x'" or "feature_list 'x' step 3", for messages.
  static std::string label(std::string_view name, std::size_t step) {
    if (step == kFeatures) return "feature '" + std::string(name) + "'";
    return "feature_list '" + std::string(name) + "' step " + std::to_string(step);
  }

  const detail::DecodedFeature* find(std::string_view name, std::size_t step) const {
    if (step == kFeatures) return decoded.find(name);
    const detail::DecodedList* list = feature_list(name);
    if (!list || step >= list->count) return nullptr;
    return &decoded.step(*list, step);
  }
  [[noreturn]] void absent(std::string_view name, std::size_t step) const {
    const detail::DecodedList* list = step == kFeatures ? nullptr : feature_list(name);
    if (list)
      throw Error(std::string(type()) + " feature_list '" + std::string(name) + "' has " +
                  std::to_string(list->count) + " steps; step " + std::to_string(step) + " (0-based) asked for");
    throw Error(std::string(type()) + " has no " +
                (step == kFeatures ? label(name, step) : "feature_list '" + std::string(name) + "'"));
  }
  const detail::DecodedFeature& get(std::string_view name, FeatureKind want, std::size_t step) const {
    const detail::DecodedFeature* f = find(name, step);
    if (!f) absent(name, step);
    if (f->kind != want)
      throw Error(std::string(type()) + " " + label(name, step) + " is a " +
                  std::string(feature_kind_name(f->kind)) + ", not a " + std::string(feature_kind_name(want)));
    return *f;
  }
};

namespace {

std::string names_of(const std::vector<FeatureInfo>& infos) {
  std::string out;
  for (const FeatureInfo& f : infos) out += (out.empty() ? "" : ", ") + f.name;
  return out.empty() ? "none" : out;
}

}  // namespace

Example::Example() : impl_(std::make_unique<Impl>()) {}
Example::~Example() = default;

void Example::parse(std::span<const std::byte> bytes) {
  impl_->is_sequence = false;
  impl_->decoded.decode(bytes, false);
  // A SequenceExample decodes as an Example (its context is field 1, like
  // Example.features) with its feature_lists (field 2) skipped as unknown.
  if (!impl_->decoded.saw_field_2()) return;
  try {
    impl_->decoded.decode(bytes, true);
  } catch (const Error&) {  // field 2 is something else: an Example's unknown field
    impl_->decoded.decode(bytes, false);
    return;
  }
  impl_->is_sequence = true;
  const std::string lists = names_of(feature_lists());
  impl_->is_sequence = false;
  throw Error("a tf.train.SequenceExample, not a tf.train.Example (feature_lists: " + lists +
              "; read as an Example they would be lost): parse it with sluice.sequence_example(sample) "
              "(C++: Example::parse_sequence)");
}

void Example::parse_sequence(std::span<const std::byte> bytes) {
  impl_->is_sequence = true;
  impl_->decoded.decode(bytes, true);
}

bool Example::is_sequence() const { return impl_->is_sequence; }

std::vector<FeatureInfo> Example::features() const {
  std::vector<FeatureInfo> out;
  for (const detail::DecodedEntry& e : impl_->decoded.features())
    out.push_back({std::string(e.name), e.feature.kind, e.feature.count});
  return out;  // sorted by name, as the decoder keeps them
}

std::vector<FeatureInfo> Example::feature_lists() const {
  std::vector<FeatureInfo> out;
  if (!impl_->is_sequence) return out;
  for (const detail::DecodedList& list : impl_->decoded.feature_lists()) {
    const FeatureKind k = list.count > 0 ? impl_->decoded.step(list, 0).kind : FeatureKind::none;
    out.push_back({std::string(list.name), k, list.count});
  }
  return out;
}

std::size_t Example::steps(std::string_view name) const {
  const detail::DecodedList* list = impl_->feature_list(name);
  return list ? list->count : 0;
}

FeatureKind Example::kind(std::string_view name, std::size_t step) const {
  const detail::DecodedFeature* f = impl_->find(name, step);
  return f ? f->kind : FeatureKind::none;
}

std::span<const float> Example::floats(std::string_view name, std::size_t step) const {
  return impl_->decoded.floats(impl_->get(name, FeatureKind::float_list, step));
}

std::span<const std::int64_t> Example::int64s(std::string_view name, std::size_t step) const {
  return impl_->decoded.int64s(impl_->get(name, FeatureKind::int64_list, step));
}

std::vector<std::string_view> Example::bytes(std::string_view name, std::size_t step) const {
  const detail::DecodedFeature& f = impl_->get(name, FeatureKind::bytes_list, step);
  std::vector<std::string_view> out;
  out.reserve(f.count);
  for (std::size_t i = 0; i < f.count; ++i) out.push_back(impl_->decoded.bytes_at(f, i));
  return out;
}

std::size_t Example::count(std::string_view name, std::size_t step) const {
  const detail::DecodedFeature* f = impl_->find(name, step);
  return f ? f->count : 0;
}

std::string_view Example::bytes_at(std::string_view name, std::size_t i, std::size_t step) const {
  const detail::DecodedFeature& f = impl_->get(name, FeatureKind::bytes_list, step);
  if (i >= f.count)
    throw Error(std::string(impl_->type()) + " " + Impl::label(name, step) + " has " + std::to_string(f.count) +
                " entries; entry " + std::to_string(i) + " asked for");
  return impl_->decoded.bytes_at(f, i);
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
    case DType::f16:
    case DType::bf16:  // as bits, through float32 (an int64 past 2^24 rounds twice), then as sluice/half.h rounds
      for (std::size_t i = 0; i < in.size(); ++i) {
        const auto v = static_cast<float>(in[i]);
        const std::uint16_t bits = dtype == DType::f16 ? float_to_half(v) : float_to_bfloat16(v);
        std::memcpy(out + i * 2, &bits, 2);
      }
      return;
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
