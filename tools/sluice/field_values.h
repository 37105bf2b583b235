// field_values.h: a batch field's elements as numbers, for showing them to a
// person (sluice peek).
//
// Thread safety: pure functions over the view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sluice/batch.h"

namespace sluice::cli {

// Elements in the field (every sample of the batch).
std::size_t element_count(const FieldView& field);

// Element i (C order) as a double: integers exactly up to 2^53, float16 and
// bfloat16 widened, bool as 0 or 1.
double element(const FieldView& field, std::size_t i);

// Whether the dtype holds integers (bool included).
bool integral(DType dtype);

// min, max, mean and standard deviation (population) of a set of values,
// gathered one value at a time (Welford's update: no cancellation).
class Summary {
 public:
  void add(double value);
  std::uint64_t count() const { return count_; }
  double min() const { return min_; }
  double max() const { return max_; }
  double mean() const { return mean_; }
  double std() const;

 private:
  std::uint64_t count_ = 0;
  double min_ = 0, max_ = 0, mean_ = 0, m2_ = 0;
};

}  // namespace sluice::cli
