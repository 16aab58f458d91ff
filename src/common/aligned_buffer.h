#pragma once
// A heap buffer with a chosen alignment (SIMD loads, cache lines), zero-filled.
//
// Buffers of 1 MiB or more are mapped anonymous memory, whose pages the kernel
// zeroes when they are first touched: sized for the worst case (a KV cache of
// every slot's whole context, a Whisper decoder's 448 positions in each of ten
// beams), they cost memory only for what a run writes, not for what it might.
// Smaller ones come from the allocator and are cleared here.
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace rayo {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes, size_t alignment = 64) { resize(bytes, alignment); }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        mapped_bytes_(std::exchange(o.mapped_bytes_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      mapped_bytes_ = std::exchange(o.mapped_bytes_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { release(); }

  // The old contents are dropped; the new bytes are zero.
  void resize(size_t bytes, size_t alignment = 64) {
    release();
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded == 0) return;
    if (rounded >= kMappedBytes && alignment <= kPageBytes) {
      void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      data_ = static_cast<std::byte*>(p);
      mapped_bytes_ = rounded;
    } else {
      void* p = std::aligned_alloc(alignment, rounded);
      if (!p) throw std::bad_alloc();
      std::memset(p, 0, rounded);
      data_ = static_cast<std::byte*>(p);
    }
    size_ = bytes;
  }

  // For contents that will not be read again: a mapped buffer's memory goes
  // back to the system now, and its addresses stay reserved but unreadable,
  // so that a read by mistake faults at once instead of finding zeros. A
  // smaller buffer stays as it is. The buffer keeps its size and is freed as usual.
  void discard() {
    if (mapped_bytes_ == 0) return;
    madvise(data_, mapped_bytes_, MADV_DONTNEED);
    mprotect(data_, mapped_bytes_, PROT_NONE);
  }

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kMappedBytes = size_t{1} << 20;
  static constexpr size_t kPageBytes = 4096;  // mmap's alignment, the smallest page of Linux's targets

  void release() {
    if (data_ != nullptr) {
      if (mapped_bytes_ != 0) munmap(data_, mapped_bytes_);
      else std::free(data_);
    }
    data_ = nullptr;
    size_ = 0;
    mapped_bytes_ = 0;
  }

  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_bytes_ = 0;  // nonzero: data_ is a mapping of this many bytes
};

}  // namespace rayo
