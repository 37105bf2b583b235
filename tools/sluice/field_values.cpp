#include "field_values.h"

#include <cmath>
#include <cstring>

#include "sluice/half.h"

namespace sluice::cli {
namespace {

template <typename T>
double load(const FieldView& field, std::size_t i) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(field.data) + i * sizeof(T), sizeof(T));
  return static_cast<double>(value);
}

}  // namespace

std::size_t element_count(const FieldView& field) { return field.nbytes / dtype_size(field.dtype); }

double element(const FieldView& field, std::size_t i) {
  switch (field.dtype) {
    case DType::u8: return load<std::uint8_t>(field, i);
    case DType::i8: return load<std::int8_t>(field, i);
    case DType::u16: return load<std::uint16_t>(field, i);
    case DType::i16: return load<std::int16_t>(field, i);
    case DType::u32: return load<std::uint32_t>(field, i);
    case DType::i32: return load<std::int32_t>(field, i);
    case DType::u64: return load<std::uint64_t>(field, i);
    case DType::i64: return load<std::int64_t>(field, i);
    case DType::f16: return half_to_float(static_cast<std::uint16_t>(load<std::uint16_t>(field, i)));
    case DType::bf16: return bfloat16_to_float(static_cast<std::uint16_t>(load<std::uint16_t>(field, i)));
    case DType::f32: return load<float>(field, i);
    case DType::f64: return load<double>(field, i);
    case DType::boolean: return load<std::uint8_t>(field, i) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

bool integral(DType dtype) {
  return dtype != DType::f16 && dtype != DType::bf16 && dtype != DType::f32 && dtype != DType::f64;
}

void Summary::add(double value) {
  if (count_ == 0 || value < min_) min_ = value;
  if (count_ == 0 || value > max_) max_ = value;
  ++count_;
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (value - mean_);
}

double Summary::std() const { return count_ == 0 ? 0 : std::sqrt(m2_ / static_cast<double>(count_)); }

}  // namespace sluice::cli
