// MappedFile: the file's bytes in place; drop_pages lets the pages of a range
// copied elsewhere leave the process's memory, and they read back the same.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/error.h"
#include "common/mapped_file.h"
#include "support/paths.h"

namespace rayo {
namespace {

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(MappedFile, DroppedPagesLeaveMemoryAndReadBackTheSame) {
  const std::filesystem::path dir = test::temp_dir("mapped-file");
  const std::filesystem::path path = dir / "data.bin";
  std::vector<uint8_t> bytes(size_t{32} << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));

  const MappedFile file(path.string());
  ASSERT_EQ(file.size(), bytes.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < file.size(); i += 512) sum += file.data()[i];  // every page resident
  const int64_t read = resident_bytes();
  // All but the first and last 1000 bytes: only the pages wholly inside go.
  file.drop_pages(file.bytes().subspan(1000, file.size() - 2000));
  const int64_t dropped = resident_bytes();
  EXPECT_GT(read - dropped, int64_t{24} << 20) << "the dropped pages stayed resident";
  EXPECT_EQ(std::vector<uint8_t>(file.data(), file.data() + file.size()), bytes);
  EXPECT_GT(sum, 0u);

  // A range outside the mapping is ignored, not an error.
  const std::vector<uint8_t> elsewhere(4096);
  file.drop_pages(elsewhere);
  EXPECT_EQ(file.data()[5], bytes[5]);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rayo
