#include "backends/cuda/nvrtc.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "backends/cuda/driver_api.h"
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
  // Every NVRTC 11.x from 11.2 on has the soname libnvrtc.so.11.2; its version
  // says whether it is 11.4 or later.
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

std::string cuda_version_text(int version) { return cat(version / 1000, ".", version % 1000 / 10); }

NvrtcChoice choose_nvrtc(int driver_version, const std::vector<NvrtcCandidate>& found) {
  NvrtcChoice choice;
  if (found.empty()) {
    choice.error = "NVRTC (libnvrtc.so) not found: install the CUDA toolkit or set CUDA_HOME";
    return choice;
  }
  const int driver_major = driver_version / 1000;
  for (size_t i = 0; i < found.size(); ++i) {
    const int v = found[i].version;
    if (v < kMinNvrtcVersion || (driver_version > 0 && v / 1000 > driver_major)) continue;
    if (choice.index < 0 || v > found[choice.index].version) choice.index = static_cast<int>(i);
  }
  if (choice.index >= 0) return choice;
  std::string seen;
  for (const auto& c : found)
    seen += cat(seen.empty() ? "" : ", ", c.version > 0 ? cuda_version_text(c.version) : "unknown version", " at ",
                c.path);
  const std::string oldest = cuda_version_text(kMinNvrtcVersion);
  std::string need;
  if (driver_version <= 0)
    need = cat(oldest, " or later");
  else if (driver_major < kMinNvrtcVersion / 1000)
    need = cat(oldest, " or later, and a CUDA driver of version ", kMinNvrtcVersion / 1000, " or later to load it, not ",
               cuda_version_text(driver_version));
  else
    need = cat(oldest, " to ", driver_major, ".x for the CUDA driver's version ", cuda_version_text(driver_version));
  choice.error = cat("no usable NVRTC: found ", seen, "; rayo needs NVRTC ", need);
  return choice;
}

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
  // Every library found, once (another name of a loaded one gives its handle).
  std::vector<void*> handles;
  std::vector<NvrtcCandidate> found;
  for (const auto& p : candidate_paths()) {
    if (p.find('/') != std::string::npos && !std::filesystem::exists(p)) continue;
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    if (std::find(handles.begin(), handles.end(), h) != handles.end()) {
      dlclose(h);
      continue;
    }
    int major = 0, minor = 0;
    auto version = reinterpret_cast<VersionFn>(dlsym(h, "nvrtcVersion"));
    if (!version || version(&major, &minor) != 0) major = minor = 0;
    handles.push_back(h);
    found.push_back(NvrtcCandidate{p, major * 1000 + minor * 10});
  }
  // The driver's CUDA version decides which NVRTC's CUBINs it loads (0
  // without a driver: then any will do, and the newest is taken).
  const NvrtcChoice choice = choose_nvrtc(Driver::get().version(), found);
  for (size_t i = 0; i < handles.size(); ++i)
    if (static_cast<int>(i) != choice.index) dlclose(handles[i]);
  if (choice.index < 0) {
    reason_ = choice.error;
    return;
  }
  void* handle = handles[choice.index];
  path_ = found[choice.index].path;
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
  if (!api->create || !api->compile || !api->destroy || !api->log_size || !api->log || !api->cubin_size ||
      !api->cubin) {
    reason_ = cat("NVRTC at ", path_, " lacks the functions rayo calls (nvrtcGetCUBIN, ...)");
    delete api;
    dlclose(handle);
    return;
  }
  version_ = found[choice.index].version;
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
