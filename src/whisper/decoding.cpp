#include "whisper/decoding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "backends/cpu/encoder_decoder_ops.h"
#include "common/error.h"

namespace rayo::whisper {
namespace {

// CTranslate2 fills disabled logits with the lowest float, not -inf, so that a
// row whose every token is disabled still has a finite softmax.
constexpr float kDisabled = std::numeric_limits<float>::lowest();

float log_sum_exp(std::span<const float> v) {
  const float m = cpu::row_max(v.data(), static_cast<int64_t>(v.size()));
  if (m == kDisabled || !std::isfinite(m)) return m;
  return m + static_cast<float>(std::log(cpu::sum_exp(v.data(), static_cast<int64_t>(v.size()), m)));
}

double softmax_at(std::span<const float> logits, int32_t id) {
  const float m = cpu::row_max(logits.data(), static_cast<int64_t>(logits.size()));
  const double sum = cpu::sum_exp(logits.data(), static_cast<int64_t>(logits.size()), m);
  return std::exp(static_cast<double>(logits[id]) - m) / sum;
}

// A uniform double in [0, 1) from 53 random bits: the same on every platform,
// unlike std::uniform_real_distribution.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Samples from softmax(log_probs / temperature): CTranslate2's RandomSampler with
// sampling_topk 0 (the whole vocabulary).
int32_t sample(std::span<const float> log_probs, float temperature, std::mt19937_64& rng) {
  const float m = *std::max_element(log_probs.begin(), log_probs.end());
  std::vector<double> weights(log_probs.size());
  double total = 0;
  for (size_t i = 0; i < log_probs.size(); ++i) {
    weights[i] = std::exp((static_cast<double>(log_probs[i]) - m) / temperature);
    total += weights[i];
  }
  double r = uniform01(rng) * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (r < weights[i]) return static_cast<int32_t>(i);
    r -= weights[i];
  }
  // Rounding left r past the last weight: the last token with any weight.
  for (size_t i = weights.size(); i-- > 0;)
    if (weights[i] > 0) return static_cast<int32_t>(i);
  return 0;
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(cpu::row_argmax(v.data(), static_cast<int64_t>(v.size())));
}

// Where the prompt's start-of-transcript sequence is; the decoding starts after it.
size_t sot_index(const WhisperSpec& spec, std::span<const int32_t> prompt) {
  const auto it = std::find(prompt.begin(), prompt.end(), spec.sot);
  if (it == prompt.end()) fail("the Whisper prompt has no <|startoftranscript|> token");
  const auto index = static_cast<size_t>(it - prompt.begin());
  // CTranslate2's prompt length: the start token, then language/task/<|notimestamps|>.
  size_t end = index;
  while (end < prompt.size() && prompt[end] >= spec.sot && prompt[end] <= spec.no_timestamps) ++end;
  if (end != prompt.size())
    fail("the Whisper prompt has tokens after its start-of-transcript sequence (a prefix), which rayo does not "
         "support");
  return index;
}

struct Hypothesis {
  std::vector<int32_t> tokens;
  float sum_logprob = 0;
  double score = 0;  // after the length penalty
};

double length_normalized(float sum_logprob, size_t length, float length_penalty) {
  return sum_logprob / std::pow(static_cast<double>(length), static_cast<double>(length_penalty));
}

DecodeResult result_of(Hypothesis h, double no_speech_prob) {
  DecodeResult r;
  r.sum_logprob = h.sum_logprob;
  r.score = h.score;
  r.avg_logprob = h.sum_logprob / (static_cast<double>(h.tokens.size()) + 1);
  r.no_speech_prob = no_speech_prob;
  r.tokens = std::move(h.tokens);
  return r;
}

// The best hypothesis by score; the first registered among equals.
Hypothesis best_of(std::vector<Hypothesis>& hypotheses) {
  RAYO_CHECK(!hypotheses.empty());
  std::stable_sort(hypotheses.begin(), hypotheses.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  return std::move(hypotheses.front());
}

class WindowDecoder {
 public:
  WindowDecoder(WhisperRunner& runner, std::span<const int32_t> prompt, const DecodeOptions& options)
      : runner_(runner),
        spec_(runner.spec()),
        options_(options),
        prompt_(prompt.begin(), prompt.end()),
        sot_index_(sot_index(spec_, prompt)),
        rules_(spec_, options, prompt.back() != spec_.no_timestamps, static_cast<int32_t>(spec_.n_vocab)) {
    if (prompt_.size() > spec_.n_text_ctx)
      fail("the Whisper prompt has ", prompt_.size(), " tokens, more than the decoder's ", spec_.n_text_ctx);
    // CTranslate2: the prompt but its last token is the decoder's state before step 0.
    // Never more positions than the decoder has, whatever max_length asks.
    const int start_step = static_cast<int>(prompt_.size()) - 1;
    const int max_length = std::min(options.max_length, static_cast<int>(spec_.n_text_ctx));
    max_steps_ = std::min(max_length / 2, max_length - start_step);
    if (max_steps_ <= 0)
      fail("the Whisper prompt has ", prompt_.size(), " tokens, leaving none to decode within ", max_length);
  }

  // The first step's logits (after the prompt's last token), and the no-speech
  // probability from the logits at <|startoftranscript|>.
  std::vector<float> first_step() {
    std::vector<float> logits, at_sot;
    const std::vector<std::vector<int32_t>> sequences = {prompt_};
    const bool sot_is_last = sot_index_ + 1 == prompt_.size();
    runner_.decode(sequences, logits, sot_is_last ? -1 : static_cast<int32_t>(sot_index_), &at_sot);
    check_rows(logits, 1);
    const std::span<const float> sot_logits = sot_is_last ? std::span<const float>(logits) : std::span<const float>(at_sot);
    if (sot_logits.size() != spec_.n_vocab) fail("the Whisper runner returned no logits at <|startoftranscript|>");
    no_speech_prob_ = spec_.no_speech >= 0 ? softmax_at(sot_logits, spec_.no_speech) : 0.0;
    return logits;
  }

  // The rules and log-softmax over one row of logits.
  void to_log_probs(std::span<float> row, std::span<const int32_t> generated) const {
    rules_.apply(row, generated);
    log_softmax(row);
  }

  void next_logits(const std::vector<std::vector<int32_t>>& sequences, std::vector<float>& logits) {
    runner_.decode(sequences, logits);
    check_rows(logits, sequences.size());
  }

  DecodeResult greedy_or_sampled(std::mt19937_64& rng) {
    const bool sampling = options_.temperature > 0;
    const size_t n = sampling ? static_cast<size_t>(std::max(options_.best_of, 1)) : 1;
    const size_t vocab = spec_.n_vocab;
    struct Candidate {
      std::vector<int32_t> sequence;  // prompt + generated
      float sum_logprob = 0;
    };
    std::vector<Candidate> alive;
    std::vector<Hypothesis> finished;
    std::vector<float> logits = first_step();
    for (int step = 0; step < max_steps_; ++step) {
      if (step == 0) {
        // Every candidate starts from the same logits: computed once.
        to_log_probs(logits, {});
        for (size_t i = 0; i < n; ++i) alive.push_back({prompt_, 0});
      } else {
        std::vector<std::vector<int32_t>> sequences;
        for (const auto& c : alive) sequences.push_back(c.sequence);
        next_logits(sequences, logits);
        for (size_t i = 0; i < alive.size(); ++i) to_log_probs(row(logits, i), generated(alive[i].sequence));
      }
      const bool last_step = step + 1 == max_steps_;
      std::vector<Candidate> next;
      for (size_t i = 0; i < alive.size(); ++i) {
        const std::span<const float> lp = step == 0 ? std::span<const float>(logits.data(), vocab) : row(logits, i);
        const int32_t token = sampling ? sample(lp, options_.temperature, rng) : argmax(lp);
        Candidate c = std::move(alive[i]);
        c.sum_logprob += lp[token];
        if (token != spec_.eot) c.sequence.push_back(token);
        if (token == spec_.eot || last_step) {
          Hypothesis h;
          h.tokens.assign(c.sequence.begin() + static_cast<std::ptrdiff_t>(prompt_.size()), c.sequence.end());
          h.sum_logprob = c.sum_logprob;
          h.score = length_normalized(h.sum_logprob, h.tokens.size(), options_.length_penalty);
          finished.push_back(std::move(h));
        } else {
          next.push_back(std::move(c));
        }
      }
      alive = std::move(next);
      if (alive.empty()) break;
    }
    return result_of(best_of(finished), no_speech_prob_);
  }

  // CTranslate2's BeamSearch: each step ranks 2 x beam_size candidates (beam
  // score + token log-probability) over all beams; a candidate among the first
  // beam_size that ends (<|endoftext|>, or the last step) becomes a hypothesis and
  // its beam is taken by the next unfinished candidate after the first beam_size.
  // Decoding stops once round(beam_size x patience) hypotheses are finished.
  DecodeResult beam_search() {
    const int beam_size = options_.beam_size;
    const size_t num_candidates = 2 * static_cast<size_t>(beam_size);
    const size_t max_hypotheses = static_cast<size_t>(std::round(static_cast<float>(beam_size) * options_.patience));
    struct Beam {
      std::vector<int32_t> sequence;
      float score = 0;  // sum of log-probabilities
    };
    struct Candidate {
      float score;
      size_t beam;
      int32_t token;
    };
    std::vector<Beam> beams = {{prompt_, 0}};  // the first step expands one beam
    std::vector<Hypothesis> hypotheses;
    // Without length penalty CTranslate2 stops as soon as the best beam has finished.
    const bool early_exit = options_.length_penalty == 0;
    bool top_beam_finished = false;
    std::vector<float> logits = first_step();
    for (int step = 0; step < max_steps_; ++step) {
      if (step > 0) {
        std::vector<std::vector<int32_t>> sequences;
        for (const auto& b : beams) sequences.push_back(b.sequence);
        next_logits(sequences, logits);
      }
      // The best num_candidates of each beam, then the best num_candidates of those.
      std::vector<Candidate> candidates;
      for (size_t b = 0; b < beams.size(); ++b) {
        const std::span<float> lp = row(logits, b);
        to_log_probs(lp, generated(beams[b].sequence));
        std::vector<int32_t> ids(lp.size());
        std::iota(ids.begin(), ids.end(), 0);
        const size_t k = std::min(num_candidates, ids.size());
        std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                          [&](int32_t x, int32_t y) { return lp[x] > lp[y] || (lp[x] == lp[y] && x < y); });
        for (size_t i = 0; i < k; ++i) candidates.push_back({beams[b].score + lp[ids[i]], b, ids[i]});
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const Candidate& x, const Candidate& y) { return x.score > y.score; });
      if (candidates.size() > num_candidates) candidates.resize(num_candidates);

      const bool last_step = step + 1 == max_steps_;
      auto extended = [&](const Candidate& c) {
        Beam b{beams[c.beam].sequence, c.score};
        b.sequence.push_back(c.token);
        return b;
      };
      std::vector<Beam> next;
      size_t secondary = static_cast<size_t>(beam_size);
      for (size_t k = 0; k < static_cast<size_t>(beam_size) && k < candidates.size(); ++k) {
        const Candidate& c = candidates[k];
        size_t next_id = k;
        if (c.token == spec_.eot || last_step) {
          Hypothesis h;
          const auto& seq = beams[c.beam].sequence;
          h.tokens.assign(seq.begin() + static_cast<std::ptrdiff_t>(prompt_.size()), seq.end());
          if (c.token != spec_.eot) h.tokens.push_back(c.token);
          h.sum_logprob = c.score;
          h.score = length_normalized(h.sum_logprob, h.tokens.size(), options_.length_penalty);
          hypotheses.push_back(std::move(h));
          if (k == 0) top_beam_finished = true;
          for (size_t j = secondary; j < candidates.size(); ++j) {
            if (candidates[j].token != spec_.eot) {
              next_id = j;
              secondary = j + 1;
              break;
            }
          }
        }
        next.push_back(extended(candidates[next_id]));
      }
      beams = std::move(next);
      if (last_step) break;
      if (early_exit ? top_beam_finished : hypotheses.size() >= max_hypotheses) break;
    }
    return result_of(best_of(hypotheses), no_speech_prob_);
  }

 private:
  std::span<float> row(std::vector<float>& logits, size_t i) const {
    return std::span<float>(logits.data() + i * spec_.n_vocab, spec_.n_vocab);
  }
  std::span<const int32_t> generated(const std::vector<int32_t>& sequence) const {
    return std::span<const int32_t>(sequence).subspan(prompt_.size());
  }
  void check_rows(const std::vector<float>& logits, size_t rows) const {
    if (logits.size() != rows * spec_.n_vocab)
      fail("the Whisper runner returned ", logits.size(), " logits for ", rows, " sequences of ", spec_.n_vocab);
  }

  WhisperRunner& runner_;
  const WhisperSpec& spec_;
  const DecodeOptions& options_;
  std::vector<int32_t> prompt_;
  size_t sot_index_;
  StepRules rules_;
  int max_steps_ = 0;
  double no_speech_prob_ = 0;
};

}  // namespace

void log_softmax(std::span<float> values) {
  const float lse = log_sum_exp(values);
  for (float& v : values) v -= lse;
}

StepRules::StepRules(const WhisperSpec& s, const DecodeOptions& options, bool with_timestamps, int32_t vocab)
    : spec(&s), timestamps(with_timestamps), vocabulary_size(vocab) {
  for (const int32_t id : options.suppress_tokens) {
    if (id >= 0)
      suppress.push_back(id);
    else if (id == -1)
      suppress.insert(suppress.end(), s.suppress_ids.begin(), s.suppress_ids.end());
  }
  if (options.suppress_blank) suppress_begin = s.suppress_ids_begin;
  // Python's round() (half to even), as faster-whisper computes max_initial_timestamp_index.
  const auto index = static_cast<int32_t>(std::lrint(options.max_initial_timestamp / 0.02));
  max_initial_timestamp_id = s.timestamp_begin + index;
}

void StepRules::apply(std::span<float> logits, std::span<const int32_t> generated) const {
  const auto n = static_cast<int32_t>(logits.size());
  auto disable = [&](int32_t id) {
    if (id >= 0 && id < n) logits[id] = kDisabled;
  };
  auto disable_range = [&](int32_t begin, int32_t end) {  // [begin, end)
    for (int32_t id = std::max(begin, 0); id < std::min(end, n); ++id) logits[id] = kDisabled;
  };
  const auto step = static_cast<int32_t>(generated.size());
  for (const int32_t id : suppress) disable(id);
  if (step == 0)
    for (const int32_t id : suppress_begin) disable(id);
  if (!timestamps) return;

  const int32_t ts_begin = spec->timestamp_begin;
  const int32_t ts_end = vocabulary_size;  // exclusive
  disable(spec->no_timestamps);
  bool check_timestamp_mass = false;
  if (step == 0) {
    disable_range(0, ts_begin);  // the first token is a timestamp
    disable_range(max_initial_timestamp_id + 1, ts_end);
  } else {
    const int32_t last = generated[step - 1];
    if (last >= ts_begin) {
      const int32_t penultimate = step >= 2 ? generated[step - 2] : last;
      if (penultimate >= ts_begin) {
        disable_range(ts_begin, ts_end);  // a pair is closed: text (or <|endoftext|>) follows
      } else {
        disable_range(0, spec->eot);  // a lone timestamp: another timestamp or the end
        check_timestamp_mass = true;
      }
    } else {
      check_timestamp_mass = true;
    }
    // Timestamps never go back: none before the last one.
    for (int32_t t = step - 1; t >= 0; --t) {
      if (generated[t] >= ts_begin) {
        disable_range(ts_begin, generated[t]);
        break;
      }
    }
  }
  if (check_timestamp_mass) {
    // All the timestamps together likelier than the likeliest other token: a
    // timestamp. Compared in log-probabilities, logit - lse, as the reference
    // does; but since rounding x - lse never reorders values, the likeliest
    // text token's is its logit's, and only the timestamps' few are computed
    // (not a copy of the whole vocabulary per step).
    const float lse = log_sum_exp(logits);
    const float text_max = cpu::row_max(logits.data(), ts_begin) - lse;
    std::vector<float> ts(logits.begin() + ts_begin, logits.begin() + std::min(ts_end, n));
    for (float& v : ts) v -= lse;
    if (log_sum_exp(ts) > text_max) disable_range(0, ts_begin);
  }
}

DecodeResult decode_window(WhisperRunner& runner, std::span<const int32_t> prompt, const DecodeOptions& options,
                           std::mt19937_64& rng) {
  if (prompt.empty()) fail("the Whisper prompt is empty");
  if (options.beam_size < 1) fail("the beam size must be at least 1 (got ", options.beam_size, ")");
  if (!(options.patience > 0)) fail("the beam search patience must be above 0 (got ", options.patience, ")");
  if (options.temperature > 0 && options.best_of < 1) fail("best_of must be at least 1 (got ", options.best_of, ")");
  WindowDecoder decoder(runner, prompt, options);
  if (options.temperature > 0 || options.beam_size == 1) return decoder.greedy_or_sampled(rng);
  return decoder.beam_search();
}

}  // namespace rayo::whisper
