#pragma once
// A read-only memory mapping of a whole file. Tensors are zero-copy views into it,
// so opening a multi-gigabyte model costs time proportional to its metadata.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rayo {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws rayo::Error naming the path and the OS reason.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Hints the kernel that the whole file will be read soon (sequential prefetch).
  void advise_will_need() const;
  // Lets the kernel drop the resident pages lying wholly inside `range` (a part
  // of this mapping, copied elsewhere): they no longer count in the process's
  // memory, and read back from the file if touched again.
  void drop_pages(std::span<const uint8_t> range) const;

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rayo
