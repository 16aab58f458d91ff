#include "runtime/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/strings.h"
#include "runtime/backend_choice.h"
#include "runtime/block_allocator.h"
#include "runtime/kv_budget.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

namespace rayo::runtime {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

// ---- RequestStream -----------------------------------------------------------

bool RequestStream::next(Update& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [&] { return news_; })) return false;
  out = std::move(pending_);
  pending_ = Update{};
  pending_.done = out.done;  // stays done: later calls see the end again
  pending_.finish = out.finish;
  pending_.prompt_tokens = out.prompt_tokens;
  pending_.cached_prompt_tokens = out.cached_prompt_tokens;
  pending_.completion_tokens = out.completion_tokens;
  pending_.error = out.error;
  news_ = out.done;
  return true;
}

RequestStream::Update RequestStream::wait(const std::function<bool()>& abandoned) {
  Update all, part;
  while (!all.done) {
    if (abandoned && !cancelled() && abandoned()) cancel();
    if (!next(part, std::chrono::milliseconds(abandoned ? 200 : 1000))) continue;
    all.text += part.text;
    for (auto& t : part.tokens) all.tokens.push_back(std::move(t));
    all.done = part.done;
    all.finish = part.finish;
    all.prompt_tokens = part.prompt_tokens;
    all.cached_prompt_tokens = part.cached_prompt_tokens;
    all.completion_tokens = part.completion_tokens;
    all.error = part.error;
  }
  return all;
}

void RequestStream::push(std::string_view text, const GeneratedToken* token) {
  {
    std::lock_guard lock(mutex_);
    pending_.text += text;
    if (token) pending_.tokens.push_back(*token);
    news_ = true;
  }
  cv_.notify_all();
}

void RequestStream::finish(FinishReason reason, int64_t prompt_tokens, int64_t completion_tokens, std::string error,
                           int64_t cached_prompt_tokens) {
  {
    std::lock_guard lock(mutex_);
    pending_.done = true;
    pending_.finish = reason;
    pending_.prompt_tokens = prompt_tokens;
    pending_.cached_prompt_tokens = cached_prompt_tokens;
    pending_.completion_tokens = completion_tokens;
    pending_.error = std::move(error);
    news_ = true;
  }
  cv_.notify_all();
}

// ---- Scheduler -----------------------------------------------------------------

struct Scheduler::Sequence {
  Sequence(Request r, const Model& model)
      : request(std::move(r)),
        sampler(request.sampling, model.spec().n_vocab),
        decoder(model.tokenizer(), false),
        stream(std::make_shared<RequestStream>()),
        submitted(Clock::now()) {}
  Request request;
  Sampler sampler;
  tokenizer::StreamingDecoder decoder;
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> blocks;  // block table, position order
  std::vector<uint64_t> chain;  // prefix-cache chain ids of its first whole prompt blocks
  int64_t ring = -1;            // its ring slot for sliding-window layers while running (StepEngine::ring_start)
  int64_t max_positions = 0;    // the most it will ever hold in the cache
  int64_t n_past = 0;           // positions in the cache
  // Positions whose tokens are known before it decodes: the prompt, or after
  // a preemption every position it had evaluated (recomputed on its return).
  int64_t known = 0;
  int64_t cached_tokens = 0;    // prompt positions taken from the prefix cache
  int32_t next_token = -1;      // sampled, to be evaluated in the next step
  int64_t n_generated = 0;
  std::vector<int32_t> generated;  // the tokens delivered, in order
  bool admitted = false;        // ran before (its prompt is in the sampler and the stats)
  bool preempted = false;       // gave its blocks up in this step
  std::string text;             // generated text so far (cut at a stop string)
  size_t emitted = 0;           // bytes of text already streamed
  bool done = false;
  bool cut = false;             // a stop string ended the text
  Clock::time_point submitted, last_token;

  bool prefilling() const { return n_past < known; }
  int64_t n_prompt() const { return static_cast<int64_t>(request.prompt.size()); }
  int32_t token_at(int64_t p) const { return p < n_prompt() ? request.prompt[p] : generated[p - n_prompt()]; }
};

Scheduler::Scheduler(std::shared_ptr<const Model> model, const SchedulerOptions& options)
    : model_(std::move(model)), options_(options) {
  auto& o = options_;
  if (o.max_seqs < 1 || o.max_seqs > 1024) fail("--parallel must be between 1 and 1024, got ", o.max_seqs);
  if (o.max_seq_len < 2) fail("the context must hold at least 2 tokens, got ", o.max_seq_len);
  if (o.block_size < 1) fail("KV cache blocks need a positive size, got ", o.block_size);
  if (o.prefill_chunk < 1) fail("the prefill chunk must be positive, got ", o.prefill_chunk);
  if (o.max_queue < 0) fail("the queue length must not be negative, got ", o.max_queue);
  max_blocks_per_seq_ = (o.max_seq_len + o.block_size - 1) / o.block_size;
  if (o.kv_fraction != 0 && o.n_blocks > 0) fail("give the KV cache's size once: --kv-blocks or --kv-fraction");
  if (o.kv_fraction != 0 && !(o.kv_fraction > 0 && o.kv_fraction <= 1))
    fail("--kv-fraction must be in (0, 1], got ", o.kv_fraction);
  if (o.n_blocks <= 0) o.n_blocks = o.max_seqs * max_blocks_per_seq_;
  // Sized from the GPU's memory: one context's pool while the graphs are
  // prepared (weights and arenas take their share first), then the rest.
  // A running sequence writes at most a prompt chunk of positions in a step.
  engine_ = std::make_unique<StepEngine>(model_, o.backend, o.block_size,
                                         o.kv_fraction > 0 ? max_blocks_per_seq_ : o.n_blocks, o.max_seq_len,
                                         RingShape{o.max_seqs, o.prefill_chunk});
  for (int64_t r = o.max_seqs - 1; r >= 0; --r) free_rings_.push_back(r);
  graph::Backend& backend = engine_->backend();
  if (o.kv_fraction > 0 && !backend.device_memory())
    fail("--kv-fraction sizes the KV cache from a GPU's memory, but this server runs on the ", backend.name(),
         ": use --kv-blocks");
  for (const graph::GraphConfig& config : step_graph_configs(o.max_seqs, o.prefill_chunk, o.batch_invariant))
    buckets_.push_back(&engine_->graph(config));
  if (o.kv_fraction > 0) {
    const graph::KvCacheConfig& kv = engine_->kv_config();
    o.n_blocks = kv_blocks_for_fraction(*backend.device_memory(), o.kv_fraction, kv.n_blocks * kv_block_bytes(kv),
                                        kv_block_bytes(kv), max_blocks_per_seq_);
    engine_->resize_kv_cache(o.n_blocks);
  }

  allocator_ = std::make_unique<BlockAllocator>(o.n_blocks, o.block_size);
  stats_.blocks_total = o.n_blocks;
  // A prefix's blocks hold every layer's keys but the rings' (sliding-window
  // layers keep only their window, per sequence): with rings, nothing is shared.
  if (o.prefix_cache && !engine_->has_rings()) {
    prefix_ = std::make_unique<PrefixCache>(o.block_size);
    allocator_->on_evict([this](int32_t block) { prefix_->forget(block); });
  }
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

std::vector<graph::GraphConfig> step_graph_configs(int64_t max_seqs, int64_t prefill_chunk, bool batch_invariant) {
  const int64_t largest = max_seqs + prefill_chunk;
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n < largest; n *= 2) sizes.push_back(n);
  sizes.push_back(largest);
  std::vector<graph::GraphConfig> configs;
  for (int64_t n : sizes) configs.push_back(graph::GraphConfig{n, std::min(n, max_seqs), batch_invariant});
  return configs;
}

std::vector<int64_t> Scheduler::buckets() const {
  std::vector<int64_t> out;
  for (const graph::Executor* e : buckets_) out.push_back(e->graph().config().max_tokens);
  return out;
}

int64_t Scheduler::in_flight() const { return in_flight_.load(); }

std::shared_ptr<RequestStream> Scheduler::submit(Request request) {
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t n_vocab = model_->spec().n_vocab;
  if (n_prompt == 0) throw SubmitError(SubmitError::Invalid, "the prompt has no tokens");
  for (int32_t t : request.prompt)
    if (t < 0 || t >= n_vocab)
      throw SubmitError(SubmitError::Invalid, cat("token id ", t, " is outside the vocabulary of ", n_vocab));
  for (const auto& s : request.stop)
    if (s.empty()) throw SubmitError(SubmitError::Invalid, "a stop string is empty");
  if (request.max_tokens < -1) throw SubmitError(SubmitError::Invalid, "max_tokens must not be negative");
  if (request.max_tokens == 0) throw SubmitError(SubmitError::Invalid, "max_tokens must be at least 1");
  if (request.logprobs > 20) throw SubmitError(SubmitError::Invalid, "at most 20 top logprobs may be asked for");
  try {
    request.sampling.validate(kApiSamplingNames);  // the request's field names
  } catch (const Error& e) {
    throw SubmitError(SubmitError::Invalid, e.what());
  }
  const int64_t ctx = options_.max_seq_len;
  if (n_prompt >= ctx)
    throw SubmitError(SubmitError::TooLong, cat("this model's context is ", ctx, " tokens, but the prompt is ", n_prompt,
                                                " tokens, leaving no room to generate"));
  if (request.max_tokens > 0 && n_prompt + request.max_tokens > ctx)
    throw SubmitError(SubmitError::TooLong,
                      cat("this model's context is ", ctx, " tokens, but ", n_prompt + request.max_tokens,
                          " were requested (", n_prompt, " in the prompt, ", request.max_tokens, " to generate)"));

  auto seq = std::make_unique<Sequence>(std::move(request), *model_);
  seq->known = n_prompt;
  // The last generated token is never evaluated: prompt + max_tokens - 1 positions.
  seq->max_positions = seq->request.max_tokens > 0 ? n_prompt + seq->request.max_tokens - 1 : ctx;
  if (allocator_->blocks_for(seq->max_positions) > allocator_->n_blocks())
    throw SubmitError(SubmitError::TooLong, cat("the request needs ", seq->max_positions,
                                                " positions of KV cache, more than the server's pool of ",
                                                allocator_->n_blocks() * allocator_->block_size()));
  auto stream = seq->stream;
  {
    std::lock_guard lock(mutex_);
    if (draining_ || stopping_) throw SubmitError(SubmitError::ShuttingDown, "the server is shutting down");
    // Requests that can start at the next step do not count against the queue.
    const int64_t free_slots = options_.max_seqs - stats_.running.load();
    if (static_cast<int64_t>(waiting_.size()) >= options_.max_queue + std::max<int64_t>(free_slots, 0)) {
      ++stats_.rejected;
      throw SubmitError(SubmitError::QueueFull, cat("the server is busy: ", waiting_.size(),
                                                    " requests are waiting; retry later"));
    }
    waiting_.push_back(std::move(seq));
    stats_.waiting.store(static_cast<int64_t>(waiting_.size()));
    ++in_flight_;
  }
  cv_.notify_one();
  return stream;
}

void Scheduler::drain() {
  std::lock_guard lock(mutex_);
  draining_ = true;
}

void Scheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (stopping_) break;
      if (running_.empty() && waiting_.empty()) cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) break;
    }
    admit();
    if (running_.empty()) {
      // Everything waiting was cancelled, or nothing fits yet: wait for news.
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, std::chrono::milliseconds(20));
      continue;
    }
    try {
      step();
    } catch (const std::exception& e) {
      // An engine failure ends the requests of this step, not the server.
      std::fprintf(stderr, "rayo: error in a batch step: %s\n", e.what());
      for (auto& s : running_)
        if (!s->done) finish(*s, FinishReason::Stop, e.what());
    }
    std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->done; });
    stats_.running.store(static_cast<int64_t>(running_.size()));
  }
  // Stopping: every request still in flight ends now.
  std::deque<std::unique_ptr<Sequence>> waiting;
  {
    std::lock_guard lock(mutex_);
    waiting.swap(waiting_);
    stats_.waiting.store(0);
  }
  for (auto& s : running_)
    if (!s->done) finish(*s, FinishReason::Stop, "the server is shutting down");
  for (auto& s : waiting) {
    --in_flight_;
    s->stream->finish(FinishReason::Stop, 0, 0, "the server is shutting down");
  }
  running_.clear();
  stats_.running.store(0);
}

void Scheduler::admit() {
  std::lock_guard lock(mutex_);
  // Cancelled requests leave the queue without ever running.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->stream->cancelled()) {
      ++stats_.cancelled;
      --in_flight_;
      const Sequence& s = **it;  // a preempted one has run before
      s.stream->finish(FinishReason::Stop, s.admitted ? s.n_prompt() : 0, s.n_generated, {}, s.cached_tokens);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  // First come, first served: a request that does not fit blocks those behind
  // it, so that a long one is not starved by a stream of short ones. Blocks
  // are taken for the positions known now (the prompt); decoding takes the
  // rest one block at a time (step()). Beside running sequences a few blocks
  // stay free for them to grow into, so that admitting does not at once
  // force a preemption.
  const int64_t headroom = std::max<int64_t>(1, allocator_->n_blocks() / 100);
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < options_.max_seqs) {
    Sequence& s = *waiting_.front();
    // Whole prompt blocks already in the cache are shared, never the one
    // holding the prompt's last token: evaluating it gives the first logits.
    const int64_t block_size = allocator_->block_size();
    std::vector<PrefixCache::Hit> hits;
    if (prefix_) hits = prefix_->lookup(s.request.prompt, (s.n_prompt() - 1) / block_size);
    const int64_t fresh = allocator_->blocks_for(s.known) - static_cast<int64_t>(hits.size());
    int64_t idle_hits = 0;  // cached blocks nobody holds count as free until retained
    for (const auto& h : hits) idle_hits += allocator_->ref_count(h.block) == 0;
    if (fresh + (running_.empty() ? 0 : headroom) > allocator_->n_free() - idle_hits) break;
    for (const auto& h : hits) {  // before allocating, so that allocating cannot evict them
      allocator_->retain(h.block);
      s.blocks.push_back(h.block);
    }
    RAYO_CHECK(allocator_->allocate(fresh, s.blocks), "the KV cache lost blocks it counted as free");
    for (const auto& h : hits) s.chain.push_back(h.chain);
    s.n_past = static_cast<int64_t>(hits.size()) * block_size;
    if (!s.admitted) {
      s.cached_tokens = s.n_past;
      stats_.prompt_tokens += static_cast<uint64_t>(s.cached_tokens);
      stats_.prompt_tokens_cached += static_cast<uint64_t>(s.cached_tokens);
      for (int32_t t : s.request.prompt) s.sampler.accept(t);
      s.admitted = true;
    }
    s.preempted = false;
    s.ring = free_rings_.back();  // fewer than max_seqs run: one is free
    free_rings_.pop_back();
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  stats_.waiting.store(static_cast<int64_t>(waiting_.size()));
  stats_.running.store(static_cast<int64_t>(running_.size()));
  stats_.blocks_used.store(allocator_->n_used());
  stats_.blocks_cached.store(allocator_->n_idle_cached());
}

graph::Executor& Scheduler::bucket_for(int64_t n_tokens) {
  for (graph::Executor* e : buckets_)
    if (e->graph().config().max_tokens >= n_tokens) return *e;
  RAYO_CHECK(false, "a step of ", n_tokens, " tokens is larger than every bucket");
  return *buckets_.back();
}

void Scheduler::step() {
  // Cancelled sequences free their blocks before the step.
  for (auto& s : running_)
    if (!s->done && s->stream->cancelled()) {
      ++stats_.cancelled;
      finish(*s, FinishReason::Stop);
    }
  std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->done; });
  if (running_.empty()) return;
  const auto began = Clock::now();
  grow_or_preempt();
  if (running_.empty()) return;

  std::vector<int32_t> tokens, positions, seq_index, outputs, table, ring_start;
  std::vector<Sequence*> step_seqs, output_seqs;
  auto add_seq = [&](Sequence* s) {
    step_seqs.push_back(s);
    ring_start.push_back(engine_->ring_start(s->ring));
    table.insert(table.end(), s->blocks.begin(), s->blocks.end());
    table.resize(step_seqs.size() * static_cast<size_t>(max_blocks_per_seq_), -1);
    return static_cast<int32_t>(step_seqs.size() - 1);
  };
  // Decode rows first: one token of every sequence past its prompt.
  for (auto& s : running_) {
    if (s->prefilling()) continue;
    const int32_t idx = add_seq(s.get());
    outputs.push_back(static_cast<int32_t>(tokens.size()));
    output_seqs.push_back(s.get());
    tokens.push_back(s->next_token);
    positions.push_back(static_cast<int32_t>(s->n_past));
    seq_index.push_back(idx);
  }
  // Then up to prefill_chunk prompt tokens, oldest sequences first.
  int64_t budget = options_.prefill_chunk;
  std::vector<std::pair<Sequence*, int64_t>> prefilled;
  for (auto& s : running_) {
    if (budget == 0) break;
    if (!s->prefilling()) continue;
    const int64_t n = std::min(budget, s->known - s->n_past);
    const int32_t idx = add_seq(s.get());
    for (int64_t i = 0; i < n; ++i) {
      tokens.push_back(s->token_at(s->n_past + i));
      positions.push_back(static_cast<int32_t>(s->n_past + i));
      seq_index.push_back(idx);
    }
    // The prompt's last token gives the first logits; a sequence recomputing
    // after a preemption has its next token already.
    if (s->n_past + n == s->known && s->n_generated == 0) {
      outputs.push_back(static_cast<int32_t>(tokens.size() - 1));
      output_seqs.push_back(s.get());
    }
    prefilled.push_back({s.get(), n});
    budget -= n;
  }

  std::vector<Sampler*> samplers;
  for (Sequence* s : output_seqs) samplers.push_back(&s->sampler);
  graph::Executor& ex = bucket_for(static_cast<int64_t>(tokens.size()));
  const StepRows rows{tokens, positions, seq_index, outputs, table, static_cast<int32_t>(max_blocks_per_seq_),
                      ring_start};
  const auto scheduled = Clock::now();
  const std::vector<int32_t> ids = engine_->run(ex, rows, samplers);
  const auto computed = Clock::now();
  ++stats_.steps;
  stats_.step_tokens += tokens.size();

  for (Sequence* s : step_seqs)
    if (!s->prefilling()) ++s->n_past;  // its decode token is now in the cache
  for (auto& [s, n] : prefilled) {
    s->n_past += n;
    (s->n_generated == 0 ? stats_.prompt_tokens : stats_.recomputed_tokens) += static_cast<uint64_t>(n);
    cache_prompt_blocks(*s);
  }
  // Logits come back only when a row's request wants them (logprobs).
  const size_t n_vocab = static_cast<size_t>(model_->spec().n_vocab);
  for (size_t i = 0; i < output_seqs.size(); ++i)
    deliver(*output_seqs[i], ids[i], [&] { return ex.logits().subspan(i * n_vocab, n_vocab); });
  stats_.step_schedule.observe(seconds_between(began, scheduled));
  stats_.step_compute.observe(seconds_between(scheduled, computed));
  stats_.step_deliver.observe(seconds_between(computed, Clock::now()));
}

void Scheduler::grow_or_preempt() {
  const int64_t block_size = allocator_->block_size();
  std::vector<Sequence*> preempted;  // youngest first
  for (auto& s : running_) {  // oldest first
    if (s->preempted || s->prefilling()) continue;
    // A decoding sequence writes position n_past in this step.
    while (static_cast<int64_t>(s->blocks.size()) * block_size <= s->n_past) {
      if (allocator_->allocate(1, s->blocks)) continue;
      // Out of blocks: the youngest sequence gives its blocks up and goes
      // back to the head of the queue, to recompute what it had (vLLM's
      // preemption by recomputation). The oldest one always advances, so
      // every request ends.
      Sequence* victim = nullptr;
      for (auto it = running_.rbegin(); it != running_.rend() && !victim; ++it)
        if (!(*it)->preempted) victim = it->get();
      preempt(*victim);
      preempted.push_back(victim);
      if (victim == s.get()) break;
    }
  }
  if (preempted.empty()) return;
  std::vector<std::unique_ptr<Sequence>> back;
  for (Sequence* p : preempted)
    for (auto& s : running_)
      if (s.get() == p) back.push_back(std::move(s));
  std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return !s; });
  std::lock_guard lock(mutex_);
  for (auto& s : back) waiting_.push_front(std::move(s));  // the oldest ends up first
  stats_.waiting.store(static_cast<int64_t>(waiting_.size()));
  stats_.running.store(static_cast<int64_t>(running_.size()));
}

void Scheduler::release_ring(Sequence& s) {
  if (s.ring >= 0) free_rings_.push_back(s.ring);
  s.ring = -1;
}

void Scheduler::preempt(Sequence& s) {
  allocator_->release(s.blocks);
  s.blocks.clear();
  s.chain.clear();
  release_ring(s);
  // What it evaluated is recomputed on its return: the prompt and every
  // generated token but the pending one.
  if (!s.prefilling()) s.known = s.n_past;
  s.n_past = 0;
  s.preempted = true;
  ++stats_.preemptions;
  stats_.blocks_used.store(allocator_->n_used());
  stats_.blocks_cached.store(allocator_->n_idle_cached());
}

void Scheduler::deliver(Sequence& s, int32_t id, const std::function<std::span<const float>()>& logits) {
  const auto& tok = model_->tokenizer();
  s.sampler.accept(id);
  // Latencies count delivered tokens only (the histograms' counts then match
  // the usage figures), plus the time to an answer that is empty.
  const auto now = Clock::now();
  const bool eog = tok.is_eog(id) && !s.request.ignore_eos;
  if (s.n_generated == 0)
    stats_.time_to_first_token.observe(seconds_between(s.submitted, now));
  else if (!eog)
    stats_.inter_token_latency.observe(seconds_between(s.last_token, now));
  s.last_token = now;
  if (eog) return finish(s, FinishReason::Stop);

  ++s.n_generated;
  s.generated.push_back(id);
  ++stats_.generated_tokens;
  GeneratedToken g;
  if (s.request.logprobs >= 0)
    g = token_logprobs(id, logits(), s.request.logprobs);
  else
    g.id = id;
  s.text += s.decoder.push(id);
  const size_t before = s.emitted;
  const bool stopped = emit(s, false);
  s.stream->push(std::string_view(s.text).substr(before, s.emitted - before), &g);
  if (stopped) return finish(s, FinishReason::Stop);
  if (s.request.max_tokens > 0 && s.n_generated >= s.request.max_tokens) return finish(s, FinishReason::Length);
  if (s.n_past >= options_.max_seq_len) return finish(s, FinishReason::Length);  // no room to evaluate it
  s.next_token = id;
}

void Scheduler::cache_prompt_blocks(Sequence& s) {
  if (!prefix_) return;
  const int64_t block_size = allocator_->block_size();
  const std::span<const int32_t> prompt(s.request.prompt);
  const int64_t whole = std::min(s.n_past, static_cast<int64_t>(prompt.size())) / block_size;
  for (auto i = static_cast<int64_t>(s.chain.size()); i < whole; ++i) {
    const uint64_t parent = i > 0 ? s.chain[i - 1] : PrefixCache::kRoot;
    bool inserted = false;
    // When the same contents are indexed already (another request computed
    // them in the meantime), this copy stays private; its chain id is theirs.
    s.chain.push_back(prefix_->insert(parent, prompt.subspan(i * block_size, block_size), s.blocks[i], &inserted));
    if (inserted) allocator_->mark_cached(s.blocks[i]);
  }
}

// Advances s.emitted over the text that is final; true when a stop string ended it.
bool Scheduler::emit(Sequence& s, bool last) {
  if (!advance_final_text(s.text, s.emitted, s.request.stop, last)) return false;
  s.cut = true;
  return true;
}

void Scheduler::finish(Sequence& s, FinishReason reason, const std::string& error) {
  if (s.done) return;
  s.done = true;
  if (error.empty() && !s.stream->cancelled()) {
    // Whatever the decoder or the stop-string check held back is final now,
    // unless a stop string already cut the text.
    const size_t before = s.emitted;
    if (!s.cut) {
      s.text += s.decoder.finish();
      if (emit(s, true)) reason = FinishReason::Stop;
    }
    if (s.emitted > before) s.stream->push(std::string_view(s.text).substr(before, s.emitted - before), nullptr);
  }
  allocator_->release(s.blocks);
  s.blocks.clear();
  release_ring(s);
  stats_.blocks_used.store(allocator_->n_used());
  stats_.blocks_cached.store(allocator_->n_idle_cached());
  if (!s.stream->cancelled() && error.empty()) ++stats_.finished;
  --in_flight_;
  s.stream->finish(reason, static_cast<int64_t>(s.request.prompt.size()), s.n_generated, error, s.cached_tokens);
}

}  // namespace rayo::runtime
