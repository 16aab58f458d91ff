#include "backends/cuda/kernel_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "backends/cuda/driver_api.h"
#include "backends/cuda/embedded_kernels.h"
#include "common/error.h"

namespace rayo::cuda {
namespace {

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

const EmbeddedKernelSource& source_of(const std::string& file) {
  for (const auto& s : embedded_kernel_sources())
    if (s.file_name == file) return s;
  fail("kernel source ", file, " is not embedded in this build");
}

// Hash of a file and every header (all .cuh), so an edited kernel misses the cache.
uint64_t source_hash(const std::string& file) {
  uint64_t h = fnv1a(source_of(file).source, std::strlen(source_of(file).source));
  for (const auto& s : embedded_kernel_sources())
    if (s.file_name.size() > 4 && s.file_name.substr(s.file_name.size() - 4) == ".cuh")
      h = fnv1a(s.source, std::strlen(s.source), h);
  return h;
}

constexpr char kMagic[8] = {'R', 'A', 'Y', 'O', 'K', 'C', '1', '\n'};

KernelCompiler& compiler_override() {
  static KernelCompiler c;
  return c;
}

}  // namespace

void set_kernel_compiler_for_testing(KernelCompiler compiler) { compiler_override() = std::move(compiler); }

NvrtcResult compile_kernel(const KernelSpec& spec, const std::string& arch) {
  std::vector<NvrtcHeader> headers;
  for (const auto& s : embedded_kernel_sources())
    if (s.file_name.size() > 4 && s.file_name.substr(s.file_name.size() - 4) == ".cuh")
      headers.push_back({std::string(s.file_name), s.source});
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17", "-Xptxas=-v"};
  for (const auto& [name, value] : spec.defines) options.push_back("-D" + name + "=" + value);
  if (spec.no_fma) options.push_back("--fmad=false");
  try {
    return Nvrtc::get().compile(spec.file, source_of(spec.file).source, headers, options);
  } catch (const Error& e) {
    fail(e.what(), " (variant: ", spec.key(), ", ", arch, ")");
  }
}

std::filesystem::path default_kernel_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "rayo/kernels";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache/rayo/kernels";
  return {};
}

KernelCache::KernelCache(std::string arch, int driver_version, std::filesystem::path dir)
    : arch_(std::move(arch)), driver_version_(driver_version), dir_(std::move(dir)) {
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) dir_.clear();  // unwritable: memory only
  }
}

KernelCache::~KernelCache() = default;

std::string KernelCache::full_key(const KernelSpec& spec) const {
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(source_hash(spec.file)));
  return cat(spec.key(), " | ", arch_, " nvrtc=", Nvrtc::get().version(), " driver=", driver_version_, " src=", hash);
}

std::filesystem::path KernelCache::file_for(const KernelSpec& spec) const {
  if (dir_.empty()) return {};
  const std::string key = full_key(spec);
  char name[40];
  std::snprintf(name, sizeof name, "%016llx.cubin", static_cast<unsigned long long>(fnv1a(key.data(), key.size())));
  return dir_ / name;
}

const CachedKernel& KernelCache::get(const KernelSpec& spec) {
  const std::string key = full_key(spec);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++hits_;
    return *it->second;
  }
  ++misses_;
  auto k = std::make_unique<CachedKernel>();
  k->key = key;
  const auto path = file_for(spec);
  if (!path.empty() && read_file(path, key, *k)) {
    ++disk_hits_;
    k->from_disk = true;
  } else {
    NvrtcResult r = compiler_override() ? compiler_override()(spec, arch_) : compile_kernel(spec, arch_);
    ++compiles_;
    k->cubin = std::move(r.cubin);
    k->log = std::move(r.log);
    k->compile_seconds = r.seconds;
    compile_seconds_ += r.seconds;
    if (!path.empty()) write_file(path, *k);
  }
  k->info = parse_ptxas_log(k->log);
  if (loader_) k->module = loader_(k->cubin);
  return *entries_.emplace(key, std::move(k)).first->second;
}

bool KernelCache::read_file(const std::filesystem::path& path, const std::string& key, CachedKernel& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto reject = [&] {
    ++rejected_;
    return false;
  };
  // magic | u64 key_len | key | u64 log_len | log | u64 cubin_len | cubin | u64 fnv1a(all before)
  size_t at = 0;
  auto take_u64 = [&](uint64_t& v) {
    if (data.size() - at < 8) return false;
    std::memcpy(&v, data.data() + at, 8);
    at += 8;
    return true;
  };
  auto take_bytes = [&](uint64_t n, std::string& s) {
    if (data.size() - at < n) return false;
    s.assign(data.data() + at, n);
    at += n;
    return true;
  };
  if (data.size() < sizeof kMagic + 32 || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return reject();
  at = sizeof kMagic;
  uint64_t n = 0, sum = 0;
  std::string file_key, log, cubin;
  if (!take_u64(n) || !take_bytes(n, file_key) || !take_u64(n) || !take_bytes(n, log) || !take_u64(n) ||
      !take_bytes(n, cubin))
    return reject();
  const size_t body = at;
  if (!take_u64(sum) || at != data.size() || sum != fnv1a(data.data(), body) || file_key != key) return reject();
  out.log = std::move(log);
  out.cubin.assign(cubin.begin(), cubin.end());
  return true;
}

void KernelCache::write_file(const std::filesystem::path& path, const CachedKernel& k) {
  std::string data(kMagic, sizeof kMagic);
  auto put_u64 = [&](uint64_t v) { data.append(reinterpret_cast<const char*>(&v), 8); };
  put_u64(k.key.size());
  data += k.key;
  put_u64(k.log.size());
  data += k.log;
  put_u64(k.cubin.size());
  data.append(k.cubin.data(), k.cubin.size());
  put_u64(fnv1a(data.data(), data.size()));
  const auto tmp = path.string() + cat(".tmp.", getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return;  // a read-only cache only costs compile time
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f.flush()) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

CUfunction kernel_function(const CachedKernel& k, const KernelSpec& spec, const char* entry) {
  RAYO_CHECK(k.module != nullptr, "kernel ", entry, " of ", spec.key(), " was not loaded");
  const DriverApi& api = Driver::get().api();
  CUfunction fn = nullptr;
  check(api.cuModuleGetFunction(&fn, static_cast<CUmodule>(k.module), entry), entry);
  if (spec.dynamic_shared > 48 * 1024)
    check(api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(spec.dynamic_shared)),
          "allow a kernel's dynamic shared memory");
  return fn;
}

}  // namespace rayo::cuda
