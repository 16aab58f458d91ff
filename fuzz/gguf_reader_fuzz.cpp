// libFuzzer target for the GGUF reader: any byte string must either parse or be
// refused with rayo::Error. Everything a valid parse hands out is then touched:
// every metadata value through every typed accessor, every tensor's bytes, and
// the readers built on top (ModelSpec, the inspect summaries). Any other
// exception, a sanitizer report, a hang or a huge allocation is a finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/summary.h"
#include "models/model_spec.h"

namespace {

volatile uint64_t g_sink;  // keeps the reads from being optimised away

template <typename F>
void expect_rayo_error_or_value(F&& f) {
  try {
    f();
  } catch (const rayo::Error&) {
  }
}

void touch_value(const rayo::gguf::Value& v) {
  g_sink = g_sink + v.summary().size() + v.describe().size();
  expect_rayo_error_or_value([&] { g_sink = g_sink + v.as_uint(); });
  expect_rayo_error_or_value([&] { g_sink = g_sink + static_cast<uint64_t>(v.as_int()); });
  expect_rayo_error_or_value([&] { g_sink = g_sink + (v.as_float() > 0); });
  expect_rayo_error_or_value([&] { g_sink = g_sink + v.as_bool(); });
  expect_rayo_error_or_value([&] { g_sink = g_sink + v.as_string().size(); });
  for (const auto& item : v.items()) touch_value(item);
}

void touch_file(const rayo::gguf::File& f) {
  using namespace rayo::gguf;
  for (const auto& e : f.metadata()) {
    touch_value(e.value);
    const std::string_view k = e.key;
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get<bool>(k); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get<uint32_t>(k); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get<uint64_t>(k); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + static_cast<uint64_t>(f.get<int32_t>(k)); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + static_cast<uint64_t>(f.get<int64_t>(k)); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + (f.get<float>(k) > 0); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + (f.get<double>(k) > 0); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get<std::string_view>(k).size(); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get_string_array(k).size(); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get_float_array(k).size(); });
    expect_rayo_error_or_value([&] { g_sink = g_sink + f.get_int_array(k).size(); });
  }
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) __builtin_trap();
    const auto bytes = t.bytes();
    // First and last byte: ASan flags a view that leaves the file image.
    if (!bytes.empty()) g_sink = g_sink + bytes.front() + bytes.back() + t.rows();
  }
  g_sink = g_sink + f.tensor_bytes() + rayo::gguf::parameter_count(f) + rayo::gguf::type_usage(f).size();
  expect_rayo_error_or_value([&] { g_sink = g_sink + rayo::gguf::tokenizer_summary(f).n_tokens; });
  expect_rayo_error_or_value([&] { g_sink = g_sink + rayo::models::ModelSpec::from_gguf(f).n_vocab; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = rayo::gguf::File::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz");
    touch_file(file);
  } catch (const rayo::Error&) {
    // Refusing bad input with a clear error is the expected outcome.
  }
  return 0;
}
