#include "support/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "common/error.h"

namespace rayo::test {

namespace {

// The value of KEY in the header's Python dict literal, up to the next comma at depth 0.
std::string header_field(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail("npy header lacks '", key, "'");
  size_t i = header.find(':', at) + 1;
  while (header[i] == ' ') ++i;
  size_t end = i;
  for (int depth = 0; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' || c == '}') && depth == 0) break;
  }
  return header.substr(i, end - i);
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) fail(path.string(), ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    offset = 10;
  } else {
    if (bytes.size() < 12) fail(path.string(), ": truncated .npy header");
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  }
  if (offset + header_len > bytes.size()) fail(path.string(), ": truncated .npy header");
  const std::string header = bytes.substr(offset, header_len);
  offset += header_len;

  const std::string descr = header_field(header, "descr");
  const bool is_f4 = descr == "'<f4'", is_f8 = descr == "'<f8'";
  if (!is_f4 && !is_f8) fail(path.string(), ": unsupported dtype ", descr);
  if (header_field(header, "fortran_order") != "False") fail(path.string(), ": Fortran order is not supported");

  NpyArray array;
  const std::string shape = header_field(header, "shape");  // "(80, 524)", "(5,)", "()"
  int64_t count = 1;
  for (size_t i = 0; i < shape.size();) {
    if (shape[i] < '0' || shape[i] > '9') {
      ++i;
      continue;
    }
    size_t used = 0;
    array.shape.push_back(std::stoll(shape.substr(i), &used));
    count *= array.shape.back();
    i += used;
  }
  const size_t element = is_f4 ? 4 : 8;
  if (bytes.size() - offset < static_cast<size_t>(count) * element) fail(path.string(), ": truncated .npy data");
  array.values.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const char* p = bytes.data() + offset + static_cast<size_t>(i) * element;
    if (is_f4) {
      float v;
      std::memcpy(&v, p, 4);
      array.values[i] = v;
    } else {
      std::memcpy(&array.values[i], p, 8);
    }
  }
  return array;
}

}  // namespace rayo::test
