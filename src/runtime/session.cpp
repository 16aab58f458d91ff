#include "runtime/session.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <thread>

#include "common/error.h"
#include "runtime/backend_choice.h"

namespace rayo::runtime {

int default_thread_count() {
  // Count distinct (package, core) pairs: hyperthreads do not help a
  // bandwidth-bound decode and hurt its barriers.
  std::set<std::pair<int, int>> cores;
  for (unsigned cpu = 0;; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), package(base + "physical_package_id");
    int c, p;
    if (!(core >> c) || !(package >> p)) break;
    cores.insert({p, c});
  }
  const int n = static_cast<int>(cores.size());
  return n > 0 ? n : std::max(1u, std::thread::hardware_concurrency());
}


Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options)
    : model_(std::move(model)), options_(options) {
  const auto& spec = model_->spec();
  if (options.n_ctx < 0) fail("context length must be positive, got ", options.n_ctx);
  if (options.n_batch <= 0) fail("batch size must be positive, got ", options.n_batch);
  n_ctx_ = options.n_ctx > 0 ? options.n_ctx : std::min<int64_t>(spec.n_ctx_train > 0 ? spec.n_ctx_train : 4096, 4096);
  const int max_threads = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.n_threads < 0 || options.n_threads > max_threads)
    fail("thread count must be between 1 and ", max_threads, " on this machine, got ", options.n_threads);
  n_threads_ = options.n_threads > 0 ? options.n_threads : default_thread_count();
  options_.n_batch = std::min(options.n_batch, n_ctx_);
  backend_ = make_backend(BackendChoice{options.device, n_threads_, options.kv_type, options.cuda_graphs,
                                        options.fuse, options.verbose});
  graph::KvCacheConfig kv;
  kv.n_layers = static_cast<int>(spec.n_layers);
  kv.kv_width = spec.kv_dim();
  kv.block_size = 16;
  kv.n_blocks = (n_ctx_ + kv.block_size - 1) / kv.block_size;
  kv.max_seq_len = n_ctx_;
  kv.type = options.kv_type;
  backend_->init_kv_cache(kv);
  block_table_.resize(kv.n_blocks);
  std::iota(block_table_.begin(), block_table_.end(), 0);
  // Build the decode graph now: preparing it repacks / uploads every weight,
  // which belongs to loading, not to the first prompt's time.
  executor(1, 1);
}

Session::~Session() = default;

graph::Executor& Session::executor(int64_t max_tokens, int64_t max_outputs) {
  for (auto& e : executors_)
    if (e->graph().config().max_tokens == max_tokens && e->graph().config().max_outputs == max_outputs) return *e;
  graph::Graph g = model_->architecture().build(model_->file(), model_->spec(), graph::GraphConfig{max_tokens, max_outputs});
  executors_.push_back(std::make_unique<graph::Executor>(*backend_, std::move(g)));
  if (options_.verbose) std::fprintf(stderr, "%s", executors_.back()->graph().describe().c_str());
  return *executors_.back();
}

const graph::Executor& Session::decode_executor() { return executor(1, 1); }

void Session::check_fits(size_t n_tokens) const {
  if (n_tokens == 0) fail("no tokens to evaluate");
  if (n_past_ + static_cast<int64_t>(n_tokens) > n_ctx_)
    fail("the sequence would be ", n_past_ + static_cast<int64_t>(n_tokens), " tokens, longer than the context of ",
         n_ctx_, " (raise -c)");
}

std::span<const int32_t> Session::eval_prefix(std::span<const int32_t> tokens) {
  check_fits(tokens.size());
  const size_t batch = static_cast<size_t>(options_.n_batch);
  const int32_t last = 0;
  while (tokens.size() > batch) {
    step(executor(options_.n_batch, 1), tokens.first(batch), std::span<const int32_t>(&last, 1));
    tokens = tokens.subspan(batch);
  }
  return tokens;
}

graph::Executor& Session::executor_for(size_t n_tokens) {
  return n_tokens == 1 ? executor(1, 1) : executor(options_.n_batch, 1);
}

std::span<const float> Session::eval(std::span<const int32_t> tokens) {
  const auto chunk = eval_prefix(tokens);
  graph::Executor& ex = executor_for(chunk.size());
  const int32_t last = static_cast<int32_t>(chunk.size() - 1);
  step(ex, chunk, std::span<const int32_t>(&last, 1));
  return ex.logits();
}

int32_t Session::eval_sample(std::span<const int32_t> tokens, Sampler& sampler) {
  const SamplingParams& p = sampler.params();
  if (!backend_->samples(p.temperature, p.top_k)) return sampler.sample(eval(tokens));
  const auto chunk = eval_prefix(tokens);
  graph::Executor& ex = executor_for(chunk.size());
  const int32_t last = static_cast<int32_t>(chunk.size() - 1);
  std::vector<graph::TokenCount> window;
  const graph::SampleRequest request = sampler.backend_request(window);
  step(ex, chunk, std::span<const int32_t>(&last, 1), std::span<const graph::SampleRequest>(&request, 1));
  const auto ids = ex.sampled();
  if (!ids.empty() && ids[0] >= 0) return ids[0];
  return sampler.sample_request(ex.logits(), request);  // the backend left the row to the host
}

std::vector<float> Session::eval_all(std::span<const int32_t> tokens) {
  check_fits(tokens.size());
  const int64_t n_vocab = this->n_vocab();
  std::vector<float> all;
  all.reserve(tokens.size() * static_cast<size_t>(n_vocab));
  std::vector<int32_t> rows;
  for (size_t start = 0; start < tokens.size();) {
    const size_t n = std::min<size_t>(tokens.size() - start, static_cast<size_t>(options_.n_batch));
    graph::Executor& ex = executor(options_.n_batch, options_.n_batch);
    rows.resize(n);
    std::iota(rows.begin(), rows.end(), 0);
    step(ex, tokens.subspan(start, n), rows);
    auto logits = ex.logits();
    all.insert(all.end(), logits.begin(), logits.end());
    start += n;
  }
  return all;
}

void Session::step(graph::Executor& ex, std::span<const int32_t> tokens, std::span<const int32_t> rows,
                   std::span<const graph::SampleRequest> sample) {
  std::vector<int32_t> positions(tokens.size()), seq(tokens.size(), 0);
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(n_past_));
  graph::StepInputs in{tokens, positions, rows, seq, block_table_, static_cast<int32_t>(block_table_.size()), sample};
  ex.run(in);
  n_past_ += static_cast<int64_t>(tokens.size());
}

void Session::rewind(int64_t n) {
  if (n < 0 || n > n_past_) fail("cannot rewind to position ", n, " of ", n_past_);
  n_past_ = n;  // later positions are overwritten before they are read again
}

}  // namespace rayo::runtime
