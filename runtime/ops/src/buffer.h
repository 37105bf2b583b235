// buffer.h: growable scratch memory that keeps its largest size.
#pragma once

#include <cstddef>
#include <memory>

namespace sluice::ops {

class Buffer {
 public:
  // At least `bytes` bytes, uninitialized; earlier contents are not kept when it grows.
  std::byte* reserve(std::size_t bytes) {
    if (bytes > capacity_) {
      data_.reset();
      data_.reset(new std::byte[bytes]);
      capacity_ = bytes;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t capacity_ = 0;
};

}  // namespace sluice::ops
