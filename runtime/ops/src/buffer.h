// buffer.h: growable scratch memory that keeps its largest size.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "fail.h"

namespace sluice::ops {

class Buffer {
 public:
  // At least `bytes` bytes, uninitialized; earlier contents are not kept when
  // it grows. The new block is allocated before the old one is freed: when
  // that fails, the buffer keeps its old block and capacity and this throws
  // Error naming `name` (the file being decoded) and the size.
  std::byte* reserve(std::size_t bytes, std::string_view name) {
    if (bytes > capacity_) {
      std::unique_ptr<std::byte[]> grown;
      try {
        grown.reset(new std::byte[bytes]);
      } catch (const std::bad_alloc&) {
        fail_file(name, "out of memory for " + std::to_string(bytes) + " bytes of decoded pixels");
      }
      data_ = std::move(grown);
      capacity_ = bytes;
    }
    return data_.get();
  }

  std::byte* data() const { return data_.get(); }
  std::size_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t capacity_ = 0;
};

}  // namespace sluice::ops
