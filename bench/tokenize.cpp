// Tokenizer throughput (MB/s of input text) on shared/texts/moores-law.txt repeated
// to 10 MB, per vocabulary, without special tokens (like llama.cpp's
// llama_tokenize(..., add_special=false, parse_special=false)).
//
//   build/bench_tokenize [--benchmark_filter=qwen2]
//
// The shared data is found through $RAYO_SHARED, else ../shared next to the
// source tree.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("RAYO_SHARED")) return env;
  // bench/tokenize.cpp -> <source>/../shared (CMake compiles with absolute paths).
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared";
}

const std::string& article() {
  static const std::string text = [] {
    std::ifstream in(shared_dir() / "texts/moores-law.txt", std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }();
  return text;
}

const std::string& ten_megabytes() {
  static const std::string text = [] {
    const std::string& one = article();
    std::string out;
    if (one.empty()) return out;
    out.reserve(10u << 20);
    while (out.size() < (10u << 20)) out += one;
    out.resize(10u << 20);
    return out;
  }();
  return text;
}

// `text`: the 10 MB text (the headline figure, comparable with llama.cpp on the
// same input), or the 35 KB article alone, where fewer words repeat.
void BM_Tokenize(benchmark::State& state, const std::string& vocab, const std::string& text) {
  const auto path = shared_dir() / ("vocab/ggml-vocab-" + vocab + ".gguf");
  if (!std::filesystem::exists(path) || text.empty()) {
    state.SkipWithError("shared test data not found (set RAYO_SHARED)");
    return;
  }
  const auto file = rayo::gguf::File::open(path.string());
  const auto tok = rayo::tokenizer::Tokenizer::from_gguf(file);
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

}  // namespace

// Registered in main so that each vocabulary is its own benchmark.
int main(int argc, char** argv) {
  for (const char* vocab : {"llama-spm", "gpt-2", "gpt2-pre-llama-bpe", "gpt2-pre-qwen2", "gpt2-pre-gpt-4o",
                            "gpt2-pre-deepseek-v3", "deepseek-llm", "falcon"}) {
    benchmark::RegisterBenchmark((std::string("tokenize_10MB/") + vocab).c_str(),
                                 [vocab](benchmark::State& s) { BM_Tokenize(s, vocab, ten_megabytes()); })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
    benchmark::RegisterBenchmark((std::string("tokenize_article/") + vocab).c_str(),
                                 [vocab](benchmark::State& s) { BM_Tokenize(s, vocab, article()); })
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(1.0);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
