#include "backends/cuda/nvrtc.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/error.h"

namespace rayo::cuda {
namespace {

// The NVRTC C API, declared here so that no toolkit header is needed.
// nvrtcResult is an int enum (0 = NVRTC_SUCCESS); nvrtcProgram an opaque pointer.
using nvrtcProgram = void*;
using CreateProgramFn = int (*)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
using CompileProgramFn = int (*)(nvrtcProgram, int, const char* const*);
using DestroyProgramFn = int (*)(nvrtcProgram*);
using GetSizeFn = int (*)(nvrtcProgram, size_t*);
using GetBytesFn = int (*)(nvrtcProgram, char*);
using VersionFn = int (*)(int*, int*);
using ErrorStringFn = const char* (*)(int);

std::vector<std::string> candidate_paths() {
  std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME")) dirs.push_back(std::string(home) + "/lib64");
  if (const char* home = std::getenv("CUDA_PATH")) dirs.push_back(std::string(home) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  // pip wheels (nvidia-cuda-nvrtc-cu12 and later) under any python's site-packages.
  for (const char* root : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("python3", 0) != 0) continue;
      for (const char* sub : {"/site-packages/nvidia/cuda_nvrtc/lib", "/dist-packages/nvidia/cuda_nvrtc/lib"})
        dirs.push_back(e.path().string() + sub);
    }
  }
  std::vector<std::string> paths = names;  // the loader's own search path first
  for (const auto& d : dirs)
    for (const auto& n : names) paths.push_back(d + "/" + n);
  return paths;
}

}  // namespace

struct Nvrtc::Api {
  CreateProgramFn create = nullptr;
  CompileProgramFn compile = nullptr;
  DestroyProgramFn destroy = nullptr;
  GetSizeFn log_size = nullptr, cubin_size = nullptr;
  GetBytesFn log = nullptr, cubin = nullptr;
  ErrorStringFn error_string = nullptr;
};

Nvrtc& Nvrtc::get() {
  static Nvrtc instance;
  return instance;
}

Nvrtc::Nvrtc() {
  void* handle = nullptr;
  for (const auto& p : candidate_paths()) {
    if (p.find('/') != std::string::npos && !std::filesystem::exists(p)) continue;
    handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      path_ = p;
      break;
    }
  }
  if (!handle) {
    reason_ = "NVRTC (libnvrtc.so) not found: install the CUDA toolkit or set CUDA_HOME";
    return;
  }
  auto api = new Api;
  auto sym = [&](const char* name) { return dlsym(handle, name); };
  api->create = reinterpret_cast<CreateProgramFn>(sym("nvrtcCreateProgram"));
  api->compile = reinterpret_cast<CompileProgramFn>(sym("nvrtcCompileProgram"));
  api->destroy = reinterpret_cast<DestroyProgramFn>(sym("nvrtcDestroyProgram"));
  api->log_size = reinterpret_cast<GetSizeFn>(sym("nvrtcGetProgramLogSize"));
  api->log = reinterpret_cast<GetBytesFn>(sym("nvrtcGetProgramLog"));
  api->cubin_size = reinterpret_cast<GetSizeFn>(sym("nvrtcGetCUBINSize"));
  api->cubin = reinterpret_cast<GetBytesFn>(sym("nvrtcGetCUBIN"));
  api->error_string = reinterpret_cast<ErrorStringFn>(sym("nvrtcGetErrorString"));
  auto version = reinterpret_cast<VersionFn>(sym("nvrtcVersion"));
  if (!api->create || !api->compile || !api->destroy || !api->log_size || !api->log || !api->cubin_size ||
      !api->cubin || !version) {
    reason_ = cat("NVRTC at ", path_, " lacks CUBIN output (needs CUDA 11.2 or later)");
    delete api;
    return;
  }
  int major = 0, minor = 0;
  version(&major, &minor);
  version_ = major * 1000 + minor * 10;
  api_ = api;
  available_ = true;
}

NvrtcResult Nvrtc::compile(const std::string& file_name, const std::string& source,
                           const std::vector<NvrtcHeader>& headers, const std::vector<std::string>& options) const {
  if (!available_) fail(reason_);
  std::vector<const char*> header_src, header_names, opts;
  for (const auto& h : headers) {
    header_src.push_back(h.source.c_str());
    header_names.push_back(h.name.c_str());
  }
  for (const auto& o : options) opts.push_back(o.c_str());
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  int rc = api_->create(&prog, source.c_str(), file_name.c_str(), static_cast<int>(headers.size()),
                        header_src.data(), header_names.data());
  if (rc != 0) fail("NVRTC could not create a program for ", file_name, " (error ", rc, ")");
  rc = api_->compile(prog, static_cast<int>(opts.size()), opts.data());
  NvrtcResult result;
  size_t n = 0;
  api_->log_size(prog, &n);
  if (n > 1) {
    result.log.resize(n);
    api_->log(prog, result.log.data());
    result.log.resize(n - 1);
  }
  if (rc != 0) {
    api_->destroy(&prog);
    // The first error line is the one a reader needs.
    std::string first;
    std::istringstream lines(result.log);
    for (std::string line; std::getline(lines, line);)
      if (line.find("error") != std::string::npos) {
        first = line;
        break;
      }
    fail("NVRTC failed to compile ", file_name, ": ",
         first.empty() ? (api_->error_string ? api_->error_string(rc) : "unknown error") : first);
  }
  api_->cubin_size(prog, &n);
  result.cubin.resize(n);
  api_->cubin(prog, result.cubin.data());
  api_->destroy(&prog);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<PtxasKernelInfo> parse_ptxas_log(const std::string& log) {
  // Lines of interest (ptxas -v):
  //   ptxas info    : Compiling entry function 'gemv' for 'sm_90'
  //   ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 16 registers, used 0 barriers, ...
  std::vector<PtxasKernelInfo> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    auto entry = line.find("Compiling entry function '");
    if (entry != std::string::npos) {
      const auto begin = entry + 26;
      out.push_back(PtxasKernelInfo{line.substr(begin, line.find('\'', begin) - begin)});
      continue;
    }
    if (out.empty()) continue;
    auto& k = out.back();
    auto number_before = [&](const std::string& what) {
      const auto at = line.find(what);
      if (at == std::string::npos) return -1;
      auto b = at;
      while (b > 0 && line[b - 1] == ' ') --b;
      auto e = b;
      while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
      return b == e ? -1 : std::atoi(line.substr(b, e - b).c_str());
    };
    int v;
    if ((v = number_before("bytes stack frame")) >= 0) k.stack = v;
    if ((v = number_before("bytes spill stores")) >= 0) k.spill_stores = v;
    if ((v = number_before("bytes spill loads")) >= 0) k.spill_loads = v;
    if ((v = number_before("registers")) >= 0 && line.find("Used") != std::string::npos) k.registers = v;
  }
  return out;
}

}  // namespace rayo::cuda
