#pragma once
// Compiled kernels, keyed by (kernel variant, architecture, NVRTC version,
// driver version, kernel source text): in memory for the process (with hit and
// miss counters, and the loaded module when a GPU is in use) and as CUBIN files
// under $XDG_CACHE_HOME/rayo/kernels (default ~/.cache/rayo/kernels), so a
// second run compiles nothing. Files are written atomically (temporary file +
// rename); a file that is truncated, corrupt or for another key is ignored and
// rebuilt.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/driver_api.h"
#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/nvrtc.h"

namespace rayo::cuda {

// Compiles one kernel variant from the embedded sources with NVRTC for `arch`
// ("sm_90"), with -Xptxas=-v so the log reports registers and spills.
NvrtcResult compile_kernel(const KernelSpec& spec, const std::string& arch);

// Tests only: replaces NVRTC for every later compile (an emulated GPU's
// "CUBIN" names the variant); an empty function restores NVRTC.
using KernelCompiler = std::function<NvrtcResult(const KernelSpec& spec, const std::string& arch)>;
void set_kernel_compiler_for_testing(KernelCompiler compiler);

// $XDG_CACHE_HOME/rayo/kernels or ~/.cache/rayo/kernels ("" if neither is set).
std::filesystem::path default_kernel_cache_dir();

struct CachedKernel {
  std::string key;
  std::vector<char> cubin;
  std::string log;              // ptxas -v log of the compile (also kept on disk)
  std::vector<PtxasKernelInfo> info;
  double compile_seconds = 0;   // 0 when read from disk
  bool from_disk = false;
  void* module = nullptr;       // CUmodule, when a module loader is set
};

// The kernel `entry` of a variant loaded by a KernelCache with a module
// loader, allowed the dynamic shared memory its spec asks for (above the
// driver's default of 48 KB only when allowed). Throws rayo::Error on failure.
CUfunction kernel_function(const CachedKernel& k, const KernelSpec& spec, const char* entry);

class KernelCache {
 public:
  // dir empty: memory only.
  KernelCache(std::string arch, int driver_version, std::filesystem::path dir = default_kernel_cache_dir());
  ~KernelCache();

  // The compiled variant: from memory (a hit), else from disk or NVRTC (a miss).
  const CachedKernel& get(const KernelSpec& spec);

  // With a loader set (the CUDA backend's cuModuleLoadData), get() also loads
  // each CUBIN once into a module kept with the entry.
  using ModuleLoader = std::function<void*(const std::vector<char>& cubin)>;
  void set_module_loader(ModuleLoader loader) { loader_ = std::move(loader); }

  const std::string& arch() const { return arch_; }
  const std::filesystem::path& dir() const { return dir_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t disk_hits() const { return disk_hits_; }
  uint64_t compiles() const { return compiles_; }
  double compile_seconds() const { return compile_seconds_; }  // NVRTC time of those compiles
  uint64_t rejected_files() const { return rejected_; }  // corrupt or foreign files ignored

  // The full key of a variant (what the disk file is named after).
  std::string full_key(const KernelSpec& spec) const;
  std::filesystem::path file_for(const KernelSpec& spec) const;

 private:
  bool read_file(const std::filesystem::path& path, const std::string& key, CachedKernel& out);
  void write_file(const std::filesystem::path& path, const CachedKernel& k);

  std::string arch_;
  int driver_version_ = 0;
  std::filesystem::path dir_;
  ModuleLoader loader_;
  std::map<std::string, std::unique_ptr<CachedKernel>> entries_;
  uint64_t hits_ = 0, misses_ = 0, disk_hits_ = 0, compiles_ = 0, rejected_ = 0;
  double compile_seconds_ = 0;
};

}  // namespace rayo::cuda
