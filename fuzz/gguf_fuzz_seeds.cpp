// Writes the GGUF fuzzer's seed corpus: the shared models' and vocabularies'
// headers (all metadata keys and tensor infos, with long arrays cut to a few
// items and tensors shrunk to one block so that each seed stays small), plus a
// few built-in files that need no shared data.
//
//   gguf_fuzz_seeds OUT_DIR [GGUF_FILE...]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace {

using namespace rayo;
using namespace rayo::gguf;

constexpr size_t kMaxItems = 12;

MetaValue shrunk(const Value& v) {
  if (v.type() != ValueType::ARRAY) return MetaValue::from(v);
  std::vector<MetaValue> items;
  for (size_t i = 0; i < v.size() && i < kMaxItems; ++i) items.push_back(shrunk(v.at(i)));
  return MetaValue::array(v.element_type(), std::move(items));
}

std::vector<uint8_t> seed_from(const File& f) {
  Writer w(f.alignment());
  for (const auto& e : f.metadata()) w.add(e.key, shrunk(e.value));
  for (const auto& t : f.tensors()) {
    std::vector<uint64_t> ne(t.ne.size(), 1);
    ne[0] = info(t.type).block_size;
    if (ne.size() > 1) ne[1] = 2;
    w.add_tensor(t.name, t.type, ne);
  }
  return w.write_bytes([](size_t i, const WriterTensor& t, TensorSink& out) {
    std::vector<uint8_t> b(t.n_bytes);
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<uint8_t>(i + k);
    out.write(b);
  });
}

std::vector<uint8_t> builtin_seed(int variant) {
  Writer w(variant == 1 ? 64 : 32);
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 1);
  w.add_u32("llama.embedding_length", 32);
  w.add_u32("llama.feed_forward_length", 64);
  w.add_u32("llama.attention.head_count", 4);
  w.add_u32("llama.attention.head_count_kv", 2);
  w.add_f32("llama.rope.freq_base", 10000.0f);
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  w.add_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1});
  w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add("nested", MetaValue::array(ValueType::ARRAY, {MetaValue::array(ValueType::I64, {MetaValue::i64(-1)})}));
  w.add_tensor("token_embd.weight", variant == 2 ? TensorType::Q8_0 : TensorType::F32, {32, 4});
  w.add_tensor("output_norm.weight", TensorType::F32, {32});
  w.add_tensor("blk.0.ffn_up.weight", TensorType::Q4_K, {256, 1});
  return w.write_bytes([](size_t, const WriterTensor& t, TensorSink& out) { out.write(std::vector<uint8_t>(t.n_bytes)); });
}

void save(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail(path.string(), ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds OUT_DIR [GGUF_FILE...]\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    for (int v = 0; v < 3; ++v) save(dir / ("builtin-" + std::to_string(v) + ".gguf"), builtin_seed(v));
    for (int i = 2; i < argc; ++i) {
      const File f = File::open(argv[i]);
      save(dir / (std::filesystem::path(argv[i]).stem().string() + ".gguf"), seed_from(f));
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
