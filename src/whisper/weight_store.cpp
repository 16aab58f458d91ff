#include "whisper/weight_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "whisper/ct2_int8.h"

namespace rayo::whisper {
namespace {

TensorType stored_type(const Ct2Model& model, const Ct2Variable& v) {
  switch (v.type) {
    case Ct2Type::F32: return TensorType::F32;
    case Ct2Type::F16: return TensorType::F16;
    case Ct2Type::BF16: return TensorType::BF16;
    case Ct2Type::Blocks: return v.blocks;  // a whisper.cpp file's quantized matrix, as stored
    default:
      fail(model.path(), ": variable '", v.name, "' is ", ct2_type_name(v.type),
           "; rayo reads float32, float16, bfloat16 and int8 Whisper models (int8 weights with a float32 scale a row)");
  }
}

bool is_float(Ct2Type t) { return t == Ct2Type::F32 || t == Ct2Type::F16 || t == Ct2Type::BF16; }
bool is_weight(Ct2Type t) { return is_float(t) || t == Ct2Type::Blocks; }

// A weight matrix (linear, convolution or embedding) whose rows are whole Q8_0 blocks.
bool quantizable(const Ct2Variable& v) {
  const std::string_view name = v.name;
  if (v.shape.size() < 2 || !is_float(v.type) || !name.ends_with("/weight")) return false;
  const uint64_t cols = v.elements() / v.shape[0];
  return cols % 32 == 0;
}

}  // namespace

WeightFormat weight_format(const std::string& compute_type) {
  if (compute_type == "default" || compute_type == "float32" || compute_type == "float16") return WeightFormat::AsStored;
  if (compute_type == "int8") return WeightFormat::Int8;
  fail("unknown compute type '", compute_type, "' (default, float32, float16 or int8)");
}

WeightStore::WeightStore(const Ct2Model& model, WeightFormat format, int n_threads) : model_(model) {
  std::vector<const Ct2Variable*> to_quantize;
  for (const Ct2Variable& v : model.variables()) {
    if (const Ct2Variable* scale = ct2_int8_scale(model, v)) {
      // A CTranslate2 int8 model's matrix: already 8 bits, so Q8_0 with its
      // row's scale in every block, whatever the format asked; rows that are
      // not whole blocks (the first convolution's 3 x mels) as floats.
      const int64_t rows = v.shape[0];
      const int64_t cols = static_cast<int64_t>(v.elements()) / rows;
      const bool blocks = cols % 32 == 0;
      Copy copy{AlignedBuffer(blocks ? rayo::row_bytes(TensorType::Q8_0, cols) * rows : 4 * v.elements(), 64),
                blocks ? TensorType::Q8_0 : TensorType::F32};
      if (blocks) ct2_int8_to_q8_0(v, *scale, copy.bytes.data());
      else ct2_int8_to_f32(v, *scale, 0, rows, copy.bytes.as<float>());
      copies_.emplace(&v, std::move(copy));
      model.drop_pages(v);
      continue;
    }
    if (format == WeightFormat::Int8 && quantizable(v)) {
      const int64_t rows = v.shape[0];
      const int64_t cols = static_cast<int64_t>(v.elements()) / rows;
      copies_.emplace(&v, Copy{AlignedBuffer(rayo::row_bytes(TensorType::Q8_0, cols) * rows, 64), TensorType::Q8_0});
      to_quantize.push_back(&v);
      continue;
    }
    if (reinterpret_cast<uintptr_t>(v.bytes.data()) % 64 == 0 || v.bytes.empty() || !is_weight(v.type)) continue;
    Copy copy{AlignedBuffer(v.bytes.size(), 64), stored_type(model, v)};
    std::memcpy(copy.bytes.data(), v.bytes.data(), v.bytes.size());
    copies_.emplace(&v, std::move(copy));
    model.drop_pages(v);  // read from the copy from now on: the file's pages need not stay resident too
  }

  // The quantization, a variable at a time on each thread (largest first would
  // balance better; the embedding is first in the file anyway).
  std::atomic<size_t> next{0};
  auto work = [&] {
    std::vector<float> row;
    std::vector<std::byte> stored;  // one row, aligned for the dequantizer
    for (size_t i; (i = next.fetch_add(1)) < to_quantize.size();) {
      const Ct2Variable& v = *to_quantize[i];
      const TensorType from = stored_type(model, v);
      const int64_t rows = v.shape[0];
      const int64_t cols = static_cast<int64_t>(v.elements()) / rows;
      std::byte* out = copies_.at(&v).bytes.data();
      row.resize(cols);
      stored.resize(rayo::row_bytes(from, cols));
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(stored.data(), v.bytes.data() + r * stored.size(), stored.size());
        quant::dequantize_row(from, stored.data(), row.data(), cols);
        quant::quantize_row(TensorType::Q8_0, row.data(), out + r * rayo::row_bytes(TensorType::Q8_0, cols), cols);
      }
      model.drop_pages(v);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::max(1, n_threads); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

void WeightStore::release_copies(const std::set<const void*>& held, const std::set<const void*>& read) {
  // Whether some pointer of the set lies in [begin, begin + size).
  const auto points_into = [](const std::set<const void*>& pointers, const void* begin, size_t size) {
    const auto first = pointers.lower_bound(begin);
    return first != pointers.end() && std::less<const void*>()(*first, static_cast<const std::byte*>(begin) + size);
  };
  const auto releasable = [&](const void* begin, size_t size) {
    return points_into(held, begin, size) && !points_into(read, begin, size);
  };
  for (auto& [variable, copy] : copies_) {
    if (copy.released || !releasable(copy.bytes.data(), copy.bytes.size())) continue;
    copy.bytes.discard();
    copy.released = true;
  }
  // An assembled model's variables (a whisper.cpp file's) are memory of the
  // model's own, read in place: the same holds for them.
  if (!model_.mapped())
    for (const Ct2Variable& v : model_.variables()) {
      if (copies_.count(&v) || released_in_model_.count(&v) || !releasable(v.bytes.data(), v.bytes.size())) continue;
      model_.discard(v);
      released_in_model_.insert(&v);
    }
}

size_t WeightStore::copy_bytes() const {
  size_t bytes = 0;
  for (const auto& [variable, copy] : copies_)
    if (!copy.released) bytes += copy.bytes.size();
  return bytes;
}

const std::byte* WeightStore::data(const Ct2Variable& v) const {
  const auto it = copies_.find(&v);
  return it != copies_.end() ? it->second.bytes.data() : reinterpret_cast<const std::byte*>(v.bytes.data());
}

TensorType WeightStore::type(const Ct2Variable& v) const {
  const auto it = copies_.find(&v);
  return it != copies_.end() ? it->second.type : stored_type(model_, v);
}

}  // namespace rayo::whisper
