#pragma once
// The check of batch invariance on the GPU (the emulated one, or a real one):
// a request's tokens must not depend on what it is batched with.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/scheduler.h"
#include "support/paths.h"

namespace rayo::test {

// Runs the requests through a scheduler with options o (on the GPU) one at a
// time, then all together, and expects each request's tokens to be the same
// both ways, with their logprobs to the bit: every other one greedy, the
// others sampled on the device; the last asks for 2 alternatives per token.
inline void expect_batch_invariant(const std::string& model_name, const runtime::SchedulerOptions& o,
                                   const std::vector<std::vector<int32_t>>& prompts, int64_t max_tokens) {
  auto model = runtime::Model::load(shared_path("models/" + model_name + ".gguf").string());
  auto request = [&](size_t i) {
    runtime::Request r;
    r.prompt = prompts[i];
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = i % 2 ? 0.9f : 0.0f;
    r.sampling.seed = static_cast<uint32_t>(77 + i);
    r.logprobs = i + 1 == prompts.size() ? 2 : 0;  // logprobs show the logits' last bits
    return r;
  };
  // Each token's id, then its logprob's bits, then the alternatives' ids and bits.
  auto ids = [](const runtime::RequestStream::Update& u) {
    std::vector<int32_t> out;
    auto bits = [](float v) {
      int32_t b;
      std::memcpy(&b, &v, sizeof b);
      return b;
    };
    for (const auto& t : u.tokens) {
      out.push_back(t.id);
      out.push_back(bits(t.logprob));
      for (const auto& a : t.top) {
        out.push_back(a.id);
        out.push_back(bits(a.logprob));
      }
    }
    return out;
  };
  std::vector<std::vector<int32_t>> alone;
  {
    runtime::Scheduler s(model, o);
    EXPECT_EQ(s.device(), "cuda");
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto r = s.submit(request(i))->wait();
      ASSERT_TRUE(r.error.empty()) << r.error;
      ASSERT_EQ(static_cast<int64_t>(r.tokens.size()), max_tokens);
      alone.push_back(ids(r));
    }
  }
  runtime::Scheduler s(model, o);
  std::vector<std::shared_ptr<runtime::RequestStream>> streams;
  for (size_t i = 0; i < prompts.size(); ++i) streams.push_back(s.submit(request(i)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto r = streams[i]->wait();
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(ids(r), alone[i]) << "request " << i;
    if (i + 1 == prompts.size()) {
      EXPECT_EQ(r.tokens[0].top.size(), 2u);
    }
  }
}

}  // namespace rayo::test
