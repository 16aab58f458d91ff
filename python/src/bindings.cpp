// rayo._core: the Python extension over the public C++ API (include/rayo/llm.h,
// include/rayo/whisper.h).
// It stays thin: the llama-cpp-python shapes (dictionaries, chunks, argument
// checks) are built in Python (python/rayo/llama.py); this file owns what
// Python cannot do itself -- running a generation with the GIL released,
// stopping it on Ctrl-C, and freeing the model on close().
//
// Every generation runs on a worker thread of its own (Generation) that
// queues the text pieces; the calling thread waits for them with the GIL
// released and wakes every few milliseconds to run Python's signal handlers,
// so Ctrl-C interrupts both a streamed and a blocking call promptly, and the
// worker is told to stop at its next piece. The worker never touches Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rayo/llm.h"
#include "rayo/version.h"
#include "rayo/whisper.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// How often a waiting call wakes to let Python handle signals (Ctrl-C).
constexpr auto kSignalPollInterval = std::chrono::milliseconds(20);

std::string bytes_to_string(const nb::bytes& b) { return std::string(b.c_str(), b.size()); }
nb::bytes string_to_bytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

// One call of create_completion or create_chat_completion, run on its own
// thread. It shares the Llm, so closing the Python model while a stream is
// still open frees the model only when the stream ends.
class Generation {
 public:
  using Call = std::function<rayo::Completion(rayo::Llm&, const rayo::StreamCallback&)>;

  Generation(std::shared_ptr<rayo::Llm> llm, Call call, bool queue_pieces)
      : llm_(std::move(llm)), queue_pieces_(queue_pieces) {
    worker_ = std::thread([this, call = std::move(call)] { run(call); });
  }
  ~Generation() { stop(); }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // The next piece of text, or None once the generation has ended (then
  // result() is ready). Raises the library's error, or KeyboardInterrupt.
  std::optional<nb::bytes> next_piece() {
    std::optional<std::string> piece = wait_for([this] { return !pieces_.empty(); });
    if (!piece) return std::nullopt;
    return string_to_bytes(*piece);
  }

  // Waits for the end and returns what the library returned.
  rayo::Completion result() {
    wait_for([] { return false; });
    return *result_;
  }

  // Tells the worker to stop at its next piece and waits for it (the GIL
  // released). The result is then what was generated so far.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    if (!worker_.joinable()) return;
    if (PyGILState_Check()) {
      nb::gil_scoped_release release;
      worker_.join();
    } else {
      worker_.join();
    }
  }

 private:
  void run(const Call& call) {
    const rayo::StreamCallback on_text = [this](std::string_view piece) {
      std::lock_guard lock(mutex_);
      if (cancelled_) return false;
      if (queue_pieces_) {
        pieces_.emplace_back(piece);
        ready_.notify_all();
      }
      return true;
    };
    std::optional<rayo::Completion> result;
    std::exception_ptr error;
    try {
      result = call(*llm_, on_text);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    result_ = std::move(result);
    error_ = error;
    done_ = true;
    ready_.notify_all();
  }

  // Waits (the GIL released) until `has_piece` or the end; pops a piece if
  // there is one. At the end: joins the worker, rethrows its error, returns
  // nothing. Between waits, with the GIL held, Python's signal handlers run:
  // one that raises (Ctrl-C) stops the worker and the exception propagates.
  template <class HasPiece>
  std::optional<std::string> wait_for(HasPiece has_piece) {
    for (;;) {
      {
        nb::gil_scoped_release release;
        std::unique_lock lock(mutex_);
        ready_.wait_for(lock, kSignalPollInterval, [&] { return has_piece() || done_; });
        if (has_piece()) {
          std::string piece = std::move(pieces_.front());
          pieces_.pop_front();
          return piece;
        }
        if (done_) break;
      }
      if (PyErr_CheckSignals() != 0) {
        nb::python_error interrupted;  // takes the pending exception before stop() releases the GIL
        stop();
        throw interrupted;
      }
    }
    stop();
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }

  std::shared_ptr<rayo::Llm> llm_;
  const bool queue_pieces_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> pieces_;
  bool cancelled_ = false;
  bool done_ = false;
  std::optional<rayo::Completion> result_;
  std::exception_ptr error_;
};

// The loaded model as Python holds it: close() (or the object's end) frees it.
class Model {
 public:
  Model(const std::string& path, const rayo::LlmOptions& options) {
    nb::gil_scoped_release release;  // loading reads and repacks the whole file
    llm_ = std::make_shared<rayo::Llm>(path, options);
  }

  void close() {
    std::shared_ptr<rayo::Llm> last = std::move(llm_);
    nb::gil_scoped_release release;
    last.reset();
  }
  bool closed() const { return llm_ == nullptr; }

  rayo::Llm& llm() const { return *shared(); }
  const std::shared_ptr<rayo::Llm>& shared() const {
    if (!llm_) throw std::invalid_argument("the model is closed");
    return llm_;
  }

  Generation* complete(const nb::bytes& prompt, const rayo::CompletionOptions& options, bool stream) {
    return new Generation(
        shared(),
        [prompt = bytes_to_string(prompt), options](rayo::Llm& llm, const rayo::StreamCallback& on_text) {
          return llm.create_completion(prompt, options, on_text);
        },
        stream);
  }

  Generation* chat(std::vector<rayo::ChatMessage> messages, const rayo::CompletionOptions& options, bool stream) {
    return new Generation(
        shared(),
        [messages = std::move(messages), options](rayo::Llm& llm, const rayo::StreamCallback& on_text) {
          return llm.create_chat_completion(messages, options, on_text);
        },
        stream);
  }

 private:
  std::shared_ptr<rayo::Llm> llm_;
};

// A loaded Whisper model as Python holds it. A transcription runs on a thread
// of its own while the caller waits with the GIL released, waking to run
// Python's signal handlers: Ctrl-C stops it after the current 30-s window
// (the progress callback throws) and the model stays usable.
class WhisperModel {
 public:
  WhisperModel(const std::string& path, const rayo::WhisperOptions& options) {
    nb::gil_scoped_release release;
    whisper_ = std::make_shared<rayo::Whisper>(path, options);
  }

  void close() {
    std::shared_ptr<rayo::Whisper> last = std::move(whisper_);
    nb::gil_scoped_release release;
    last.reset();
  }
  bool closed() const { return whisper_ == nullptr; }
  rayo::Whisper& whisper() const { return *shared(); }

  // source: a path (str) or float32 samples at 16 kHz (bytes).
  rayo::Transcription transcribe(const std::optional<std::string>& path, const std::optional<nb::bytes>& samples,
                                 const rayo::TranscribeOptions& options) {
    std::shared_ptr<rayo::Whisper> whisper = shared();
    std::vector<float> pcm;
    if (samples) {
      if (samples->size() % sizeof(float) != 0) throw std::invalid_argument("samples must be float32 values");
      pcm.resize(samples->size() / sizeof(float));
      std::memcpy(pcm.data(), samples->c_str(), samples->size());
    }
    std::mutex mutex;
    std::condition_variable ready;
    bool done = false;
    std::atomic<bool> stop{false};
    std::optional<rayo::Transcription> result;
    std::exception_ptr error;
    std::thread worker([&] {
      const rayo::TranscribeProgress progress = [&stop](double, double) {
        if (stop) throw std::runtime_error("transcription interrupted");
      };
      try {
        result = path ? whisper->transcribe_file(*path, options, progress)
                      : whisper->transcribe(pcm, options, progress);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(mutex);
      done = true;
      ready.notify_all();
    });
    for (;;) {
      {
        nb::gil_scoped_release release;
        std::unique_lock lock(mutex);
        if (ready.wait_for(lock, kSignalPollInterval, [&] { return done; })) break;
      }
      if (PyErr_CheckSignals() != 0) {
        nb::python_error interrupted;
        stop = true;
        {
          nb::gil_scoped_release release;
          worker.join();
        }
        throw interrupted;
      }
    }
    worker.join();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }

 private:
  const std::shared_ptr<rayo::Whisper>& shared() const {
    if (!whisper_) throw std::invalid_argument("the model is closed");
    return whisper_;
  }
  std::shared_ptr<rayo::Whisper> whisper_;
};

std::vector<rayo::ChatMessage> chat_messages(const std::vector<std::pair<nb::bytes, nb::bytes>>& turns) {
  std::vector<rayo::ChatMessage> messages;
  messages.reserve(turns.size());
  for (const auto& [role, content] : turns) messages.push_back({bytes_to_string(role), bytes_to_string(content)});
  return messages;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "rayo's C++ library (include/rayo/llm.h), bound for rayo.Llama; use rayo.Llama, not this module.";
  m.attr("__version__") = std::to_string(RAYO_VERSION_MAJOR) + "." + std::to_string(RAYO_VERSION_MINOR) + "." +
                          std::to_string(RAYO_VERSION_PATCH);
  m.attr("RANDOM_SEED") = rayo::kRandomSeed;

  nb::class_<rayo::LlmOptions>(m, "LlmOptions", "How a model is loaded and where it runs (rayo::LlmOptions).")
      .def(nb::init<>())
      .def_rw("n_ctx", &rayo::LlmOptions::n_ctx)
      .def_rw("n_batch", &rayo::LlmOptions::n_batch)
      .def_rw("n_threads", &rayo::LlmOptions::n_threads)
      .def_rw("device", &rayo::LlmOptions::device)
      .def_rw("seed", &rayo::LlmOptions::seed)
      .def_rw("verbose", &rayo::LlmOptions::verbose);

  nb::class_<rayo::CompletionOptions>(m, "CompletionOptions",
                                      "Sampling and stopping for one completion (rayo::CompletionOptions).")
      .def(nb::init<>())
      .def_rw("max_tokens", &rayo::CompletionOptions::max_tokens)
      .def_rw("temperature", &rayo::CompletionOptions::temperature)
      .def_rw("top_p", &rayo::CompletionOptions::top_p)
      .def_rw("top_k", &rayo::CompletionOptions::top_k)
      .def_rw("min_p", &rayo::CompletionOptions::min_p)
      .def_rw("repeat_penalty", &rayo::CompletionOptions::repeat_penalty)
      .def_rw("presence_penalty", &rayo::CompletionOptions::presence_penalty)
      .def_rw("frequency_penalty", &rayo::CompletionOptions::frequency_penalty)
      .def_prop_rw(
          "stop",
          [](const rayo::CompletionOptions& o) {
            std::vector<nb::bytes> out;
            for (const auto& s : o.stop) out.push_back(string_to_bytes(s));
            return out;
          },
          [](rayo::CompletionOptions& o, const std::vector<nb::bytes>& stop) {
            o.stop.clear();
            for (const auto& s : stop) o.stop.push_back(bytes_to_string(s));
          })
      .def_rw("seed", &rayo::CompletionOptions::seed)
      .def_rw("logprobs", &rayo::CompletionOptions::logprobs);

  nb::class_<rayo::Completion>(m, "Completion", "What a completion produced (rayo::Completion).")
      .def_prop_ro("text", [](const rayo::Completion& c) { return string_to_bytes(c.text); })
      .def_ro("tokens", &rayo::Completion::tokens)
      .def_ro("finish_reason", &rayo::Completion::finish_reason)
      .def_ro("prompt_tokens", &rayo::Completion::prompt_tokens)
      .def_ro("completion_tokens", &rayo::Completion::completion_tokens)
      .def_prop_ro(
          "logprobs",
          [](const rayo::Completion& c) {
            // (token, logprob, [(token, logprob), ...]) per generated token: plain
            // tuples, since Python shapes them into llama-cpp-python's dictionaries.
            using Alternatives = std::vector<std::pair<int32_t, float>>;
            std::vector<std::tuple<int32_t, float, Alternatives>> out;
            for (const auto& t : c.logprobs) {
              Alternatives top;
              for (const auto& alt : t.top) top.emplace_back(alt.token, alt.logprob);
              out.emplace_back(t.token, t.logprob, std::move(top));
            }
            return out;
          },
          "Per generated token (token, logprob, top alternatives), when asked for.");

  nb::class_<Generation>(m, "Generation", "One running completion; its pieces come from next_piece().")
      .def("next_piece", &Generation::next_piece,
           "The next piece of text (whole UTF-8 characters), or None at the end.")
      .def("result", &Generation::result, "Waits for the end and returns the Completion.")
      .def("stop", &Generation::stop, "Stops the generation at its next piece and waits for it.");

  nb::class_<Model>(m, "Model", "A loaded GGUF model and its context (rayo::Llm).")
      .def(nb::init<const std::string&, const rayo::LlmOptions&>(), "model_path"_a, "options"_a)
      .def("close", &Model::close, "Frees the model (after any generation still running).")
      .def_prop_ro("closed", &Model::closed)
      .def("complete", &Model::complete, "prompt"_a, "options"_a, "stream"_a, nb::rv_policy::take_ownership)
      .def(
          "chat",
          [](Model& self, const std::vector<std::pair<nb::bytes, nb::bytes>>& turns,
             const rayo::CompletionOptions& options,
             bool stream) { return self.chat(chat_messages(turns), options, stream); },
          "messages"_a, "options"_a, "stream"_a, nb::rv_policy::take_ownership)
      .def(
          "apply_chat_template",
          [](const Model& self, const std::vector<std::pair<nb::bytes, nb::bytes>>& turns) {
            return string_to_bytes(self.llm().apply_chat_template(chat_messages(turns)));
          },
          "messages"_a)
      .def(
          "tokenize",
          [](const Model& self, const nb::bytes& text, bool add_special, bool parse_special) {
            return self.llm().tokenize(std::string_view(text.c_str(), text.size()), add_special, parse_special);
          },
          "text"_a, "add_special"_a, "parse_special"_a)
      .def(
          "detokenize",
          [](const Model& self, const std::vector<int32_t>& tokens, bool special) {
            const int64_t n_vocab = self.llm().n_vocab();
            for (const int32_t t : tokens)
              if (t < 0 || t >= n_vocab)
                throw std::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary of " +
                                            std::to_string(n_vocab) + " tokens");
            return string_to_bytes(self.llm().detokenize(tokens, special));
          },
          "tokens"_a, "special"_a)
      .def("n_ctx", [](const Model& self) { return self.llm().n_ctx(); })
      .def("n_vocab", [](const Model& self) { return self.llm().n_vocab(); })
      .def("token_bos", [](const Model& self) { return self.llm().token_bos(); })
      .def("token_eos", [](const Model& self) { return self.llm().token_eos(); })
      .def("device", [](const Model& self) { return self.llm().device(); })
      .def("metadata", [](const Model& self) { return self.llm().metadata(); });

  nb::class_<rayo::WhisperOptions>(m, "WhisperOptions", "How a Whisper model is loaded (rayo::WhisperOptions).")
      .def(nb::init<>())
      .def_rw("device", &rayo::WhisperOptions::device)
      .def_rw("compute_type", &rayo::WhisperOptions::compute_type)
      .def_rw("n_threads", &rayo::WhisperOptions::n_threads)
      .def_rw("max_beams", &rayo::WhisperOptions::max_beams);

  nb::class_<rayo::TranscribeOptions>(m, "TranscribeOptions", "One transcription's decoding (rayo::TranscribeOptions).")
      .def(nb::init<>())
      .def_rw("language", &rayo::TranscribeOptions::language)
      .def_rw("task", &rayo::TranscribeOptions::task)
      .def_rw("beam_size", &rayo::TranscribeOptions::beam_size)
      .def_rw("best_of", &rayo::TranscribeOptions::best_of)
      .def_rw("patience", &rayo::TranscribeOptions::patience)
      .def_rw("length_penalty", &rayo::TranscribeOptions::length_penalty)
      .def_rw("temperature", &rayo::TranscribeOptions::temperature)
      .def_rw("compression_ratio_threshold", &rayo::TranscribeOptions::compression_ratio_threshold)
      .def_rw("log_prob_threshold", &rayo::TranscribeOptions::log_prob_threshold)
      .def_rw("no_speech_threshold", &rayo::TranscribeOptions::no_speech_threshold)
      .def_rw("condition_on_previous_text", &rayo::TranscribeOptions::condition_on_previous_text)
      .def_rw("initial_prompt", &rayo::TranscribeOptions::initial_prompt)
      .def_rw("without_timestamps", &rayo::TranscribeOptions::without_timestamps)
      .def_rw("suppress_blank", &rayo::TranscribeOptions::suppress_blank)
      .def_rw("max_initial_timestamp", &rayo::TranscribeOptions::max_initial_timestamp)
      .def_rw("seed", &rayo::TranscribeOptions::seed);

  nb::class_<rayo::TranscriptSegment>(m, "TranscriptSegment", "One segment (rayo::TranscriptSegment).")
      .def_ro("id", &rayo::TranscriptSegment::id)
      .def_ro("seek", &rayo::TranscriptSegment::seek)
      .def_ro("start", &rayo::TranscriptSegment::start)
      .def_ro("end", &rayo::TranscriptSegment::end)
      .def_ro("text", &rayo::TranscriptSegment::text)
      .def_ro("tokens", &rayo::TranscriptSegment::tokens)
      .def_ro("temperature", &rayo::TranscriptSegment::temperature)
      .def_ro("avg_logprob", &rayo::TranscriptSegment::avg_logprob)
      .def_ro("compression_ratio", &rayo::TranscriptSegment::compression_ratio)
      .def_ro("no_speech_prob", &rayo::TranscriptSegment::no_speech_prob);

  nb::class_<rayo::Transcription>(m, "Transcription", "A transcript (rayo::Transcription).")
      .def_ro("language", &rayo::Transcription::language)
      .def_ro("language_probability", &rayo::Transcription::language_probability)
      .def_ro("duration", &rayo::Transcription::duration)
      .def_ro("segments", &rayo::Transcription::segments);

  nb::class_<WhisperModel>(m, "WhisperModel", "A loaded Whisper model (rayo::Whisper).")
      .def(nb::init<const std::string&, const rayo::WhisperOptions&>(), "model_path"_a, "options"_a)
      .def("close", &WhisperModel::close, "Frees the model.")
      .def_prop_ro("closed", &WhisperModel::closed)
      .def("transcribe", &WhisperModel::transcribe, "path"_a.none(), "samples"_a.none(), "options"_a,
           "Transcribes a file (path) or float32 samples at 16 kHz (samples, as bytes).")
      .def("multilingual", [](const WhisperModel& self) { return self.whisper().multilingual(); })
      .def("n_mels", [](const WhisperModel& self) { return self.whisper().n_mels(); })
      .def("languages", [](const WhisperModel& self) { return self.whisper().languages(); });
}
