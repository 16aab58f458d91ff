#pragma once
// A heap buffer with a chosen alignment (SIMD loads, cache lines), zero-filled.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace rayo {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes, size_t alignment = 64) { resize(bytes, alignment); }

  void resize(size_t bytes, size_t alignment = 64) {
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    void* p = rounded ? std::aligned_alloc(alignment, rounded) : nullptr;
    if (rounded && !p) throw std::bad_alloc();
    if (p) std::memset(p, 0, rounded);
    data_.reset(static_cast<std::byte*>(p));
    size_ = bytes;
  }

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_.get());
  }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_ = 0;
};

}  // namespace rayo
