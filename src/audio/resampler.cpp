#include "audio/resampler.h"

#include <soxr.h>

#include <cmath>

#include "common/error.h"

namespace rayo::audio {

Resampler::Resampler(double input_rate, double output_rate) : ratio_(output_rate / input_rate) {
  soxr_error_t error = nullptr;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  soxr_ = soxr_create(input_rate, output_rate, 1, &error, &io, &quality, nullptr);
  if (error || !soxr_) fail("cannot resample ", input_rate, " Hz to ", output_rate, " Hz: ", soxr_strerror(error));
}

Resampler::~Resampler() {
  if (soxr_) soxr_delete(soxr_);
}

void Resampler::process(std::span<const float> input, std::vector<float>& out) {
  if (!input.empty()) run(input.data(), input.size(), out);
}

void Resampler::flush(std::vector<float>& out) { run(nullptr, 0, out); }

// A null input tells libsoxr that the input has ended; it then drains its delay
// line over as many calls as the output space needs, and returns nothing more.
void Resampler::run(const float* input, size_t length, std::vector<float>& out) {
  const size_t room = static_cast<size_t>(std::ceil(static_cast<double>(length) * ratio_)) + 1024;
  for (;;) {
    const size_t start = out.size();
    out.resize(start + room);
    size_t consumed = 0, produced = 0;
    const soxr_error_t error = soxr_process(soxr_, input, length, &consumed, out.data() + start, room, &produced);
    out.resize(start + produced);
    if (error) fail("resampling failed: ", soxr_strerror(error));
    if (input) {
      input += consumed;
      length -= consumed;
      if (length == 0) return;
    } else if (produced == 0) {
      return;
    }
  }
}

}  // namespace rayo::audio
