// The continuous-batching scheduler, driven with token ids (teacher-forced
// prompts from llama.cpp's reference) on the shared stories260K model.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "support/paths.h"
#include "support/reference.h"
#include "support/synth_models.h"

namespace rayo::runtime {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const Model> load(const std::string& name) {
  return Model::load(test::shared_path("models/" + name + ".gguf").string());
}

SchedulerOptions opts(int64_t max_seqs, int64_t ctx = 128, int64_t chunk = 64) {
  SchedulerOptions o;
  o.max_seqs = max_seqs;
  o.max_seq_len = ctx;
  o.prefill_chunk = chunk;
  o.backend.n_threads = 1;  // the results do not depend on it; one thread is quickest on a loaded machine
  return o;
}

Request greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  return r;
}

std::vector<int32_t> ids(const RequestStream::Update& u) {
  std::vector<int32_t> out;
  for (const auto& t : u.tokens) out.push_back(t.id);
  return out;
}

TEST(Scheduler, GreedyContinuationsMatchLlamaCpp) {
  RAYO_REQUIRE_SHARED();
  const auto ref = test::load_reference(test::shared_path("reference/stories260K.json").string());
  Scheduler s(load("stories260K"), opts(4, 512));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& c : ref.cases) streams.push_back(s.submit(greedy(c.tokens, static_cast<int64_t>(c.greedy.size()))));
  for (size_t i = 0; i < ref.cases.size(); ++i) {
    const auto r = streams[i]->wait();
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(ids(r), ref.cases[i].greedy) << "case " << i;
    EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(ref.cases[i].tokens.size()));
    EXPECT_EQ(r.completion_tokens, static_cast<int64_t>(ref.cases[i].greedy.size()));
  }
  EXPECT_EQ(s.stats().blocks_used.load(), 0);
  EXPECT_EQ(s.in_flight(), 0);
}

// Temperature 0 (and seeded sampling) gives the same tokens whether a request
// runs alone or beside 15 others, prompts being read in small chunks that mix
// with other sequences' decode rows.
void expect_batch_invariance(const std::string& model_name, std::shared_ptr<const Model> model = nullptr,
                             std::filesystem::path reference = {}) {
  if (reference.empty()) reference = test::shared_path("reference/" + model_name + ".json");
  const auto ref = test::load_reference(reference.string());
  if (!model) model = load(model_name);
  std::vector<test::ReferenceCase> cases;  // the short prompts keep the test quick
  for (const auto& c : ref.cases)
    if (c.tokens.size() <= 64) cases.push_back(c);
  ASSERT_GE(cases.size(), 2u);
  auto request = [&](size_t i) {
    const auto& c = cases[i % cases.size()];
    Request r = greedy(c.tokens, 16);
    r.ignore_eos = true;
    if (i % 2 == 1) {  // every other request samples, with its own seed
      r.sampling.temperature = 0.9f;
      r.sampling.seed = static_cast<uint32_t>(1000 + i);
    }
    return r;
  };
  std::vector<std::vector<int32_t>> alone;
  {
    Scheduler s(model, opts(1, 512, 64));
    for (size_t i = 0; i < 16; ++i) alone.push_back(ids(s.submit(request(i))->wait()));
  }
  Scheduler s(model, opts(16, 512, 5));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < 16; ++i) streams.push_back(s.submit(request(i)));
  for (size_t i = 0; i < 16; ++i) {
    const auto r = streams[i]->wait();
    EXPECT_EQ(ids(r), alone[i]) << model_name << " request " << i;
  }
  EXPECT_GT(s.stats().steps.load(), 0u);
  EXPECT_GT(s.stats().step_tokens.load(), s.stats().steps.load());  // steps really were batched
}

TEST(Scheduler, BatchInvariantOnAFloatModel) {
  RAYO_REQUIRE_SHARED();
  expect_batch_invariance("stories260K");
}

TEST(Scheduler, BatchInvariantOnAQuantizedModel) {
  RAYO_REQUIRE_SHARED();
  expect_batch_invariance("tinystories-656k-q8_0");
}

TEST(Scheduler, BatchInvariantOnAQuantizedSynthModel) {
  RAYO_REQUIRE_SHARED();
  expect_batch_invariance("synth-llama-q4_k_m");
}

// Gemma 3's sliding-window layers keep a ring per running sequence (prompts
// in chunks of 5, a window of 7): alone or beside 15 others, the tokens are
// the same, and greedy ones are those of a session that keeps every position.
TEST(Scheduler, SlidingWindowRingsPerSequence) {
  const auto dir = test::temp_dir("scheduler-rings");
  const auto& m = test::gemma3_synth_model("gemma3-odd-q8_0");
  auto model = Model::load(test::write_synth_model(m, dir).string());
  expect_batch_invariance(m.name, model, m.reference);
  const auto ref = test::load_reference(m.reference.string());
  SessionOptions so;
  so.n_ctx = 512;
  so.backend.n_threads = 1;
  Scheduler s(model, opts(4, 512, 5));
  for (const auto& c : ref.cases) {
    Session session(model, so);
    ASSERT_EQ(session.kv_config().ring_blocks, 0);
    Sampler greedy_sampler(SamplingParams{.temperature = 0.0f}, model->spec().n_vocab);
    std::vector<int32_t> want;
    int32_t t = session.eval_sample(c.tokens, greedy_sampler);
    for (int i = 0; i < 24; ++i) {
      want.push_back(t);
      t = session.eval_sample({&t, 1}, greedy_sampler);
    }
    Request r = greedy(c.tokens, 24);
    r.ignore_eos = true;
    EXPECT_EQ(ids(s.submit(r)->wait()), want) << c.prompt;
  }
  std::filesystem::remove_all(dir);
}

TEST(Scheduler, StopStringsCutTheTextAndFinishWithStop) {
  RAYO_REQUIRE_SHARED();
  const auto ref = test::load_reference(test::shared_path("reference/stories260K.json").string());
  const auto& c = ref.cases[0];
  ASSERT_NE(c.greedy_text.find(" girl"), std::string::npos);
  Scheduler s(load("stories260K"), opts(2));
  Request r = greedy(c.tokens, 48);
  r.stop = {"zzz", " girl"};
  const auto out = s.submit(r)->wait();
  EXPECT_EQ(out.finish, FinishReason::Stop);
  EXPECT_EQ(out.text, c.greedy_text.substr(0, c.greedy_text.find(" girl")));
  EXPECT_LT(out.completion_tokens, 48);
}

TEST(Scheduler, MaxTokensFinishesWithLengthAndStreamsTheWholeText) {
  RAYO_REQUIRE_SHARED();
  const auto ref = test::load_reference(test::shared_path("reference/stories260K.json").string());
  const auto& c = ref.cases[0];
  Scheduler s(load("stories260K"), opts(2));
  auto stream = s.submit(greedy(c.tokens, 10));
  std::string streamed;
  int64_t tokens = 0;
  RequestStream::Update u;
  while (true) {
    if (!stream->next(u, 5000ms)) continue;
    streamed += u.text;
    tokens += static_cast<int64_t>(u.tokens.size());
    if (u.done) break;
  }
  EXPECT_EQ(u.finish, FinishReason::Length);
  EXPECT_EQ(tokens, 10);
  EXPECT_EQ(u.completion_tokens, 10);
  EXPECT_FALSE(streamed.empty());
  EXPECT_EQ(streamed, c.greedy_text.substr(0, streamed.size()));
}

TEST(Scheduler, LogprobsAreNormalisedAndRankTheChosenTokenFirstWhenGreedy) {
  RAYO_REQUIRE_SHARED();
  const auto ref = test::load_reference(test::shared_path("reference/stories260K.json").string());
  Scheduler s(load("stories260K"), opts(1));
  Request r = greedy(ref.cases[0].tokens, 4);
  r.logprobs = 3;
  const auto out = s.submit(r)->wait();
  ASSERT_EQ(out.tokens.size(), 4u);
  for (const auto& t : out.tokens) {
    ASSERT_EQ(t.top.size(), 3u);
    EXPECT_EQ(t.top[0].id, t.id);
    EXPECT_FLOAT_EQ(t.top[0].logprob, t.logprob);
    EXPECT_LE(t.logprob, 0.0f);
    EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
    EXPECT_GE(t.top[1].logprob, t.top[2].logprob);
  }
}

TEST(Scheduler, CancellationFreesTheSequenceAtOnce) {
  RAYO_REQUIRE_SHARED();
  Scheduler s(load("stories260K"), opts(2, 4096));  // thousands of steps: far longer than the test needs
  Request r = greedy({1, 403, 407}, -1);
  r.ignore_eos = true;  // would run to the end of the context
  auto stream = s.submit(r);
  RequestStream::Update u;
  while (!stream->next(u, 5000ms) || u.tokens.empty()) {
  }
  EXPECT_GT(s.stats().blocks_used.load(), 0);
  stream->cancel();
  const auto rest = stream->wait();
  EXPECT_TRUE(rest.done);
  EXPECT_LT(u.tokens.size() + rest.tokens.size(), 4000u);
  EXPECT_EQ(s.stats().blocks_used.load(), 0);
  EXPECT_EQ(s.stats().cancelled.load(), 1u);
  EXPECT_EQ(s.in_flight(), 0);
}

TEST(Scheduler, RefusesWhatCannotFitAndWhatOverflowsTheQueue) {
  RAYO_REQUIRE_SHARED();
  auto o = opts(1, 64);
  o.max_queue = 1;
  Scheduler s(load("stories260K"), o);
  std::vector<int32_t> long_prompt(64, 300);
  long_prompt[0] = 1;
  try {
    s.submit(greedy(long_prompt, 1));
    FAIL() << "a prompt as long as the context was accepted";
  } catch (const SubmitError& e) {
    EXPECT_EQ(e.kind, SubmitError::TooLong);
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos) << e.what();
  }
  try {
    s.submit(greedy({1, 2, 3}, 62));
    FAIL() << "prompt + max_tokens beyond the context was accepted";
  } catch (const SubmitError& e) {
    EXPECT_EQ(e.kind, SubmitError::TooLong);
  }
  EXPECT_THROW(s.submit(greedy({1, 9999}, 4)), SubmitError);  // outside the vocabulary
  EXPECT_THROW(s.submit(greedy({}, 4)), SubmitError);

  // One runs, one waits, the third is refused. A long context keeps the first
  // one busy (thousands of steps) far longer than three submits take.
  auto lo = opts(1, 4096);
  lo.max_queue = 1;
  Scheduler q(load("stories260K"), lo);
  Request endless = greedy({1, 403}, -1);
  endless.ignore_eos = true;
  auto a = q.submit(endless), b = q.submit(endless);
  try {
    q.submit(endless);
    FAIL() << "a third request was queued beyond max_queue";
  } catch (const SubmitError& e) {
    EXPECT_EQ(e.kind, SubmitError::QueueFull);
  }
  EXPECT_EQ(q.stats().rejected.load(), 1u);
  a->cancel();
  b->cancel();
  a->wait();
  b->wait();
  // The admitted requests ended cleanly; the scheduler takes new work.
  const auto c = q.submit(greedy({1, 403}, 3))->wait();
  EXPECT_EQ(c.completion_tokens, 3);
}

// A pool too small for every running sequence's whole life: decoding takes
// blocks as it goes, the youngest sequence gives its blocks up when none is
// left and recomputes them later, and every request still gets exactly the
// tokens it gets alone (greedy and seeded sampling; on a quantized model,
// whose prompts the CPU evaluates in blocks of rows).
TEST(Scheduler, PreemptsAndRecomputesWhenBlocksRunOut) {
  RAYO_REQUIRE_SHARED();
  for (const char* name : {"stories260K", "tinystories-656k-q8_0"}) {
    SCOPED_TRACE(name);
    auto model = load(name);
    auto request = [](int i) {
      Request r = greedy({1, 403, 407, static_cast<int32_t>(300 + i)}, 40);
      r.ignore_eos = true;
      if (i % 2) {
        r.sampling.temperature = 0.8f;
        r.sampling.seed = 1234u + static_cast<uint32_t>(i);
      }
      return r;
    };
    auto o = opts(4, 64, 3);
    o.block_size = 16;
    std::vector<std::vector<int32_t>> alone;
    {
      Scheduler big(model, o);
      for (int i = 0; i < 4; ++i) alone.push_back(ids(big.submit(request(i))->wait()));
      EXPECT_EQ(big.stats().preemptions.load(), 0u);
    }
    o.n_blocks = 5;  // each request ends holding 3 blocks: 4 at once need 12
    Scheduler s(model, o);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < 4; ++i) streams.push_back(s.submit(request(i)));
    for (int i = 0; i < 4; ++i) {
      const auto r = streams[i]->wait();
      EXPECT_TRUE(r.error.empty()) << r.error;
      EXPECT_EQ(r.completion_tokens, 40);
      EXPECT_EQ(ids(r), alone[i]) << "request " << i;
    }
    EXPECT_GT(s.stats().preemptions.load(), 0u);
    EXPECT_GT(s.stats().recomputed_tokens.load(), 0u);
    EXPECT_EQ(s.stats().prompt_tokens.load(), 16u) << "recomputed positions are not prompt tokens";
    EXPECT_EQ(s.stats().generated_tokens.load(), 160u);
    EXPECT_EQ(s.stats().blocks_used.load(), 0);
    EXPECT_EQ(s.in_flight(), 0);
  }
}

// A preempted request waiting to be recomputed can still be cancelled; what
// it had generated is reported, and the others go on.
TEST(Scheduler, CancellingAPreemptedRequestEndsIt) {
  RAYO_REQUIRE_SHARED();
  auto o = opts(2, 256, 8);
  o.block_size = 16;
  o.n_blocks = 17;  // one sequence's whole context and a block
  Scheduler s(load("stories260K"), o);
  Request r = greedy({1, 403, 407}, 250);
  r.ignore_eos = true;
  auto older = s.submit(r), younger = s.submit(r);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (s.stats().preemptions.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  ASSERT_GT(s.stats().preemptions.load(), 0u) << "the pool never ran out";
  younger->cancel();
  const auto cut = younger->wait();
  EXPECT_TRUE(cut.error.empty()) << cut.error;
  EXPECT_LT(cut.completion_tokens, 250);
  const auto whole = older->wait();
  EXPECT_EQ(whole.completion_tokens, 250);
  EXPECT_EQ(s.stats().blocks_used.load(), 0);
  EXPECT_EQ(s.in_flight(), 0);
}

TEST(Scheduler, BucketsGrowToTheLargestStep) {
  RAYO_REQUIRE_SHARED();
  Scheduler s(load("stories260K"), opts(6, 64, 20));
  EXPECT_EQ(s.buckets(), (std::vector<int64_t>{1, 2, 4, 8, 16, 26}));
}

// Prefix caching changes which positions are evaluated, never the answer: the
// same tokens as with the cache off, whether the shared blocks come from a
// finished request (idle, cached) or a running one, and after they were
// evicted for other work.
TEST(Scheduler, PrefixCacheReusesPromptBlocksWithoutChangingAnswers) {
  RAYO_REQUIRE_SHARED();
  const auto ref = test::load_reference(test::shared_path("reference/stories260K.json").string());
  const std::vector<int32_t> story = ref.cases[3].tokens;  // 237 tokens
  ASSERT_GE(story.size(), 100u);
  const std::vector<int32_t> p(story.begin(), story.begin() + 70);
  std::vector<int32_t> q(story.begin(), story.begin() + 50);  // p's first 3 blocks, then other tokens
  q.insert(q.end(), story.begin() + 150, story.begin() + 170);
  const std::vector<int32_t> other(story.begin() + 100, story.begin() + 190);  // shares nothing with p

  auto model = load("stories260K");
  auto o = opts(2, 256, 32);
  o.block_size = 16;
  o.n_blocks = 8;  // room for one request at a time, so that `other` must evict cached blocks
  auto answer = [](Scheduler& s, const std::vector<int32_t>& prompt) {
    Request r = greedy(prompt, 12);
    r.ignore_eos = true;
    return s.submit(r)->wait();
  };
  o.prefix_cache = false;
  Scheduler plain(model, o);
  const auto want_p = ids(answer(plain, p)), want_q = ids(answer(plain, q)), want_other = ids(answer(plain, other));
  EXPECT_EQ(plain.stats().prompt_tokens_cached.load(), 0u);

  o.prefix_cache = true;
  Scheduler s(model, o);
  const auto first = answer(s, p);
  EXPECT_EQ(ids(first), want_p);
  EXPECT_EQ(first.cached_prompt_tokens, 0);
  EXPECT_EQ(s.stats().blocks_cached.load(), 4);  // p's 4 whole blocks wait, idle, for reuse
  EXPECT_EQ(s.stats().blocks_used.load(), 0);

  const auto again = answer(s, p);  // the 4 whole blocks, from the idle cache
  EXPECT_EQ(ids(again), want_p);
  EXPECT_EQ(again.cached_prompt_tokens, 64);
  const auto branch = answer(s, q);  // p's first 3 blocks, then its own
  EXPECT_EQ(ids(branch), want_q);
  EXPECT_EQ(branch.cached_prompt_tokens, 48);

  const auto unrelated = answer(s, other);  // needs every block: evicts the cached ones
  EXPECT_EQ(ids(unrelated), want_other);
  EXPECT_EQ(unrelated.cached_prompt_tokens, 0);
  const auto after = answer(s, p);  // its first block was evicted: nothing to reuse
  EXPECT_EQ(ids(after), want_p);
  EXPECT_EQ(after.cached_prompt_tokens, 0);
  EXPECT_EQ(s.stats().prompt_tokens_cached.load(), 64u + 48u);
  EXPECT_EQ(s.stats().prompt_tokens.load(), 3 * p.size() + q.size() + other.size());

  // A running request's blocks are shared too: the second request arrives
  // while the first is still generating, and reuses its prompt's blocks.
  Scheduler t(model, opts(2, 512, 32));
  Request long_run = greedy(p, 400);
  long_run.ignore_eos = true;
  auto s1 = t.submit(long_run);
  RequestStream::Update first_tokens;
  ASSERT_TRUE(s1->next(first_tokens, 10s));
  EXPECT_FALSE(first_tokens.done);
  const auto shared = answer(t, p);
  EXPECT_EQ(ids(shared), want_p);
  EXPECT_EQ(shared.cached_prompt_tokens, 64);
  s1->cancel();
  s1->wait();
}

}  // namespace
}  // namespace rayo::runtime
