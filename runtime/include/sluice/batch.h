// sluice/batch.h: a delivered batch and zero-copy views of its fields.
//
// A Batch owns one slot of the shared-memory arena until it is destroyed or
// release()d; its FieldViews point straight into that slot. A DLPack tensor
// exported from a view keeps the slot alive until the tensor's deleter runs,
// so a framework can adopt the memory without a copy.
//
// Thread safety: a Batch may be moved to, read from and destroyed on any
// thread (one at a time); releasing slots from several threads is safe.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "sluice/dtype.h"

struct DLManagedTensor;

namespace sluice {

namespace detail {
class SlotLease;
}

struct SLUICE_API FieldView {
  std::string_view name;
  DType dtype = DType::u8;
  std::span<const std::int64_t> shape;    // [batch length, per-sample shape...]
  std::span<const std::int64_t> strides;  // in elements, C order
  void* data = nullptr;
  std::size_t nbytes = 0;

  template <typename T>
  std::span<T> as() const { return {static_cast<T*>(data), nbytes / sizeof(T)}; }
};

// The bytes of sample `row` of a bytes field (FieldSpec::max_bytes > 0: uint8
// rows of 8 + max_bytes, a uint64 length then the bytes). Throws Error naming
// the field when the row's length does not fit its row.
SLUICE_API std::span<const std::byte> field_bytes(const FieldView& field, std::size_t row);

class SLUICE_API Batch {
 public:
  Batch() = default;
  Batch(Batch&&) noexcept = default;
  Batch& operator=(Batch&&) noexcept = default;
  ~Batch() = default;

  explicit operator bool() const { return lease_ != nullptr; }
  std::uint64_t epoch() const;
  std::uint64_t index() const;  // batch index within the epoch
  std::size_t size() const;     // samples in this batch
  std::span<const std::uint64_t> sample_ids() const;

  std::size_t field_count() const;
  FieldView field(std::size_t i) const;
  FieldView field(std::string_view name) const;  // throws Error if absent

  // A DLPack tensor (kDLCPU) over field i that keeps the slot alive until its
  // deleter is called. The caller owns the result.
  DLManagedTensor* to_dlpack(std::size_t i) const;

  // Give the slot back now; the batch and its views become invalid.
  void release() { lease_.reset(); }
  // Another handle on the same slot: it goes back once every handle (and
  // every DLPack tensor) has let go.
  Batch share() const { return Batch(lease_); }

  explicit Batch(std::shared_ptr<detail::SlotLease> lease) : lease_(std::move(lease)) {}

 private:
  std::shared_ptr<detail::SlotLease> lease_;
};

}  // namespace sluice
