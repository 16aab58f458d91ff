// Rewrites a GGUF file with every tensor dequantized to F32 (metadata kept),
// with rayo's reference dequantizer: the same weights with no quantization
// left in the product, so that llama.cpp's outputs on it are the "exact"
// answer the real-model parity test measures both engines against
// (tests/data/smollm2/make-reference.sh).
//   build/tests/dequantize_gguf IN.gguf OUT.gguf
#include <cstdio>
#include <exception>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quant/dequantize.h"

int main(int argc, char** argv) {
  using namespace rayo;
  if (argc != 3) {
    std::fprintf(stderr, "usage: dequantize_gguf IN.gguf OUT.gguf\n");
    return 2;
  }
  try {
    const auto in = gguf::File::open(argv[1]);
    gguf::Writer out;
    out.copy_metadata(in);
    for (const auto& t : in.tensors()) out.add_tensor(t.name, TensorType::F32, t.ne);
    out.write_file(argv[2], [&](size_t i, const gguf::WriterTensor&, gguf::TensorSink& sink) {
      const auto& t = in.tensors()[i];
      uint64_t n = 1;
      for (uint64_t d : t.ne) n *= d;
      std::vector<float> values(n);
      quant::dequantize_row(t.type, t.data, values.data(), static_cast<int64_t>(n));
      sink.write({reinterpret_cast<const uint8_t*>(values.data()), n * sizeof(float)});
    });
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dequantize_gguf: %s\n", e.what());
    return 1;
  }
}
