#pragma once
// NVRTC, the CUDA run-time compiler, loaded with dlopen at first use: rayo has
// no link-time CUDA dependency and builds without the toolkit. Searched in the
// loader's path, $CUDA_HOME/lib64, /usr/local/cuda/lib64 and pip's
// site-packages/nvidia/cuda_nvrtc/lib. NVRTC needs no GPU: it compiles kernels
// for any architecture (sm_80, sm_90, ...) on any machine.
//
// A machine may hold several (a toolkit's and a pip wheel's, 12 and 13): each
// is loaded and asked its version, and choose_nvrtc picks the newest whose
// CUBINs the CUDA driver can load.
#include <string>
#include <utility>
#include <vector>

namespace rayo::cuda {

struct NvrtcHeader {
  std::string name;     // as written in #include "..."
  std::string source;
};

struct NvrtcResult {
  std::vector<char> cubin;
  std::string log;        // compiler + ptxas log (registers, spills with -Xptxas=-v)
  double seconds = 0.0;   // compile time
};

class Nvrtc {
 public:
  // The process-wide instance (loads the library on first call; never throws).
  static Nvrtc& get();

  bool is_available() const { return available_; }
  // Why it is not available, in one line ("" when it is).
  const std::string& unavailable_reason() const { return reason_; }
  // Major * 1000 + minor * 10, as CUDA_VERSION (13000 for 13.0).
  int version() const { return version_; }
  const std::string& library_path() const { return path_; }

  // Compiles `source` (named file_name in messages) with the given headers and
  // options to a CUBIN (options must name the arch: --gpu-architecture=sm_90).
  // Throws rayo::Error with the first lines of the log on failure.
  NvrtcResult compile(const std::string& file_name, const std::string& source, const std::vector<NvrtcHeader>& headers,
                      const std::vector<std::string>& options) const;

 private:
  Nvrtc();
  struct Api;
  bool available_ = false;
  std::string reason_, path_;
  int version_ = 0;
  Api* api_ = nullptr;
};

// The oldest NVRTC the kernels compile with (major * 1000 + minor * 10, as
// Nvrtc::version()): 11.2 already makes CUBINs, but the kernels and the
// kernel cache's options need 11.4.
constexpr int kMinNvrtcVersion = 11040;

// An NVRTC library found on this machine: its path and its nvrtcVersion
// (0 when it has none).
struct NvrtcCandidate {
  std::string path;
  int version = 0;
};

// Which of `found` (in search order) to compile with: `index`, or -1 and a
// one-line `error` naming the driver's CUDA version and the versions found.
struct NvrtcChoice {
  int index = -1;
  std::string error;
};

// The newest candidate of version kMinNvrtcVersion or later whose CUBINs a
// driver of CUDA version `driver_version` (cuDriverGetVersion: 12040 for
// 12.4) loads, the first in search order among equals. A CUBIN holds machine
// code, which the driver loads without the JIT that PTX needs, so minor
// version compatibility lets a 12.x driver load the CUBINs of any NVRTC 12.y,
// and backward compatibility those of any older major: what counts is that the
// NVRTC's major is no newer than the driver's. driver_version 0 (no driver,
// as for `rayo kernels --precompile --arch ...` on a machine without a GPU):
// the newest.
NvrtcChoice choose_nvrtc(int driver_version, const std::vector<NvrtcCandidate>& found);

// "12.4" for 12040.
std::string cuda_version_text(int version);

// Registers and spill bytes per kernel, parsed from a -Xptxas=-v log.
struct PtxasKernelInfo {
  std::string name;
  int registers = 0;
  int spill_stores = 0;  // bytes
  int spill_loads = 0;   // bytes
  int stack = 0;         // bytes of stack frame
};
std::vector<PtxasKernelInfo> parse_ptxas_log(const std::string& log);

}  // namespace rayo::cuda
