#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"

namespace rayo::tokenizer {
namespace {

// Token texts llama.cpp recognises (llama-vocab.cpp), used when the GGUF file does
// not name the token itself. Found tokens are also made control tokens.
const std::vector<std::string_view> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
const std::vector<std::string_view> kEomTexts = {"<|eom_id|>"};
const std::vector<std::string_view> kFimPreTexts = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                                    "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
                                                    "<|code_prefix|>", "<|prefix|>"};
const std::vector<std::string_view> kFimSufTexts = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                                    "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
                                                    "<|code_suffix|>", "<|suffix|>"};
const std::vector<std::string_view> kFimMidTexts = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                                    "<｜fim▁end｜>", "<MID>", "▁<MID>",
                                                    "<|code_middle|>", "<|middle|>"};
const std::vector<std::string_view> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                                    "[PAD]"};
const std::vector<std::string_view> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                                    "<REPO>", "<reponame>"};
const std::vector<std::string_view> kFimSepTexts = {"<|file_sep|>"};
const std::vector<std::string_view> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~["};

bool contains(const std::vector<std::string_view>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// When the file does not set `id`, takes the first token (lowest id) whose text is
// in `texts` and makes it a control token. (llama.cpp walks a hash map, so with
// several candidates its choice is unspecified; the lowest id is ours.)
void detect_by_text(Vocab& vocab, int32_t& id, const std::vector<std::string_view>& texts) {
  if (id >= 0) return;
  for (int32_t i = 0; i < vocab.size(); ++i) {
    if (contains(texts, vocab.at(i).text)) {
      id = i;
      vocab.mutable_at(i).attr |= kAttrControl;
      return;
    }
  }
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Tokenizer Tokenizer::from_spec(const TokenizerSpec& spec) {
  auto impl = std::make_shared<Impl>();
  Impl& t = *impl;
  t.model_name = spec.model;
  t.chat_template = spec.chat_template;

  // Defaults per model family (llama.cpp's llama_vocab::impl::load).
  int32_t bos = -1, eos = -1, unk = -1;
  bool no_bos_token = false;
  bool ignore_merges = false;
  if (spec.model == "llama") {
    t.kind = ModelKind::kSpm;
    t.pre_name = "default";
    bos = 1, eos = 2, unk = 0;
    t.add_space_prefix = true;
    t.add_bos = true;
    t.clean_spaces = false;
  } else if (spec.model == "gpt2") {
    t.kind = ModelKind::kBpe;
    t.pre = std::make_unique<PreTokenizer>(spec.pre);
    t.pre_name = t.pre->name();
    bos = 11, eos = 11;
    const PreTokenizerOptions& o = t.pre->options();
    t.clean_spaces = o.clean_spaces;
    t.add_bos = o.add_bos;
    ignore_merges = o.ignore_merges;
    no_bos_token = o.no_bos_token;
  } else if (spec.model.empty()) {
    fail("the file has no tokenizer (tokenizer.ggml.model is missing)");
  } else {
    fail("unsupported tokenizer model ", quote_for_message(spec.model),
         " (tokenizer.ggml.model; rayo supports \"llama\" and \"gpt2\")");
  }
  if (spec.add_space_prefix) t.add_space_prefix = *spec.add_space_prefix;

  // The vocabulary.
  if (spec.tokens.empty()) fail("the vocabulary is empty (tokenizer.ggml.tokens)");
  if (!spec.scores.empty() && spec.scores.size() < spec.tokens.size())
    fail("tokenizer.ggml.scores has ", spec.scores.size(), " entries for ", spec.tokens.size(), " tokens");
  if (!spec.token_types.empty() && spec.token_types.size() < spec.tokens.size())
    fail("tokenizer.ggml.token_type has ", spec.token_types.size(), " entries for ", spec.tokens.size(),
         " tokens");
  if (spec.tokens.size() > static_cast<size_t>(INT32_MAX / 2)) fail("the vocabulary is too large");
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    const float score = spec.scores.empty() ? 0.0f : spec.scores[i];
    const uint32_t attr = spec.token_types.empty() ? kAttrNormal : attr_from_token_type(spec.token_types[i]);
    t.vocab.add(spec.tokens[i], score, attr);
  }
  Vocab& vocab = t.vocab;
  const int32_t n = vocab.size();

  // Special ids: a default outside the vocabulary is dropped; a value from the
  // file outside it is ignored (llama.cpp warns and keeps the default).
  auto resolve = [&](int32_t fallback, const std::optional<int64_t>& from_file) {
    int32_t id = fallback >= 0 && fallback < n ? fallback : -1;
    if (from_file && *from_file >= 0 && *from_file < n) id = static_cast<int32_t>(*from_file);
    return id;
  };
  if (no_bos_token) bos = -1;
  t.bos = resolve(bos, spec.bos_id);
  t.eos = resolve(eos, spec.eos_id);
  t.eot = resolve(-1, spec.eot_id);
  t.eom = resolve(-1, spec.eom_id);
  t.unk = resolve(unk, spec.unk_id);
  int32_t fim_pre = resolve(-1, spec.fim_pre_id), fim_suf = resolve(-1, spec.fim_suf_id);
  int32_t fim_mid = resolve(-1, spec.fim_mid_id), fim_pad = resolve(-1, spec.fim_pad_id);
  int32_t fim_rep = resolve(-1, spec.fim_rep_id), fim_sep = resolve(-1, spec.fim_sep_id);

  if (spec.add_bos) t.add_bos = *spec.add_bos;
  if (spec.add_eos) t.add_eos = *spec.add_eos;
  if (t.add_bos && t.bos < 0) fail("tokenizer.ggml.add_bos_token is true, but there is no BOS token");
  if (t.add_eos && t.eos < 0) fail("tokenizer.ggml.add_eos_token is true, but there is no EOS token");

  // Tokens llama.cpp recognises by their text.
  detect_by_text(vocab, t.eot, kEotTexts);
  detect_by_text(vocab, t.eom, kEomTexts);
  detect_by_text(vocab, fim_pre, kFimPreTexts);
  detect_by_text(vocab, fim_suf, kFimSufTexts);
  detect_by_text(vocab, fim_mid, kFimMidTexts);
  detect_by_text(vocab, fim_pad, kFimPadTexts);
  detect_by_text(vocab, fim_rep, kFimRepTexts);
  detect_by_text(vocab, fim_sep, kFimSepTexts);

  std::vector<int32_t> eog;
  for (int32_t id : {fim_pad, fim_rep, fim_sep})
    if (id >= 0) eog.push_back(id);
  for (int32_t i = 0; i < n; ++i) {
    const std::string& text = vocab.at(i).text;
    if (contains(kEogTexts, text)) {
      eog.push_back(i);
      vocab.mutable_at(i).attr |= kAttrControl;
    }
    // gpt-oss: these are always rendered.
    if (text == "<|channel|>" || text == "<|message|>" || text == "<|start|>" || text == "<|constrain|>")
      vocab.mutable_at(i).attr = kAttrUserDefined;
  }
  for (int32_t id : {t.eos, t.eot, t.eom})
    if (id >= 0) eog.push_back(id);
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  auto eog_with_text = [&](std::string_view text) {
    for (int32_t id : eog)
      if (vocab.at(id).text == text) return id;
    return -1;
  };
  // o200k_harmony / solar-open: "<|end|>" ends a message, not the generation.
  const int32_t end_id = eog_with_text("<|end|>");
  const bool has_call = eog_with_text("<|call|>") >= 0 || eog_with_text("<|calls|>") >= 0;
  if (end_id >= 0 && has_call && (eog_with_text("<|return|>") >= 0 || eog_with_text("<|flush|>") >= 0)) {
    eog.erase(std::find(eog.begin(), eog.end(), end_id));
    vocab.mutable_at(end_id).attr = kAttrUserDefined;
  }
  // gemma4 / paddleocr: "</s>" is not an end of generation next to "<|tool_response>".
  const int32_t s_id = eog_with_text("</s>");
  if (s_id >= 0 && eog_with_text("<|tool_response>") >= 0) {
    eog.erase(std::find(eog.begin(), eog.end(), s_id));
    vocab.mutable_at(s_id).attr = kAttrNormal;
  }
  t.eog = std::move(eog);

  // The piece cache is built before the model-specific strip flags, as in llama.cpp
  // (they do not change pieces anyway).
  t.pieces.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t.pieces[i] = t.piece_uncached(i);

  // Phi-3: special tokens swallow the whitespace after them.
  const std::string name = lowercase(spec.general_name);
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t i = 0; i < n; ++i)
      if (vocab.at(i).attr & (kAttrControl | kAttrUserDefined | kAttrUnknown)) vocab.mutable_at(i).attr |= kAttrRstrip;
    for (std::string_view text : {"</s>"})
      if (int32_t id = vocab.find(text); id >= 0) vocab.mutable_at(id).attr |= kAttrRstrip;
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"})
      if (int32_t id = vocab.find(text); id >= 0) vocab.mutable_at(id).attr &= ~kAttrRstrip;
  }

  if (t.kind == ModelKind::kSpm) {
    t.spm = std::make_unique<SpmModel>(vocab, t.unk);
  } else {
    std::vector<std::string_view> merges(spec.merges.begin(), spec.merges.end());
    t.bpe = std::make_unique<BpeModel>(vocab, merges, ignore_merges);
  }
  t.specials = std::make_unique<SpecialTokenMatcher>(vocab);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& t = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && t.add_bos) out.push_back(t.bos);
  const std::vector<Fragment> fragments = t.specials->partition(text, parse_special);

  if (t.kind == ModelKind::kSpm) {
    // SentencePiece: a space is added before text at the start and after every
    // special token, then spaces become U+2581.
    bool after_special = true;
    std::string escaped;
    WordCache cache;
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        after_special = true;
        continue;
      }
      escaped.clear();
      if (t.add_space_prefix && after_special) escaped += "\xE2\x96\x81";
      for (char c : text.substr(f.begin, f.size)) {
        if (c == ' ') escaped += "\xE2\x96\x81";
        else escaped += c;
      }
      t.spm->encode(escaped, out, cache);
      after_special = false;
    }
  } else {
    // The cache holds views into the fragments' cleaned texts, so those live as
    // long as it does.
    std::vector<std::string> cleaned;
    cleaned.reserve(fragments.size());
    WordCache cache;
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        continue;
      }
      const std::string_view view = cleaned.emplace_back(sanitize_utf8(text.substr(f.begin, f.size)));
      for (const Span& span : t.pre->split(view)) {
        const std::string_view word = view.substr(span.begin, span.size);
        if (cache.lookup(word, out)) continue;
        const size_t before = out.size();
        t.bpe->encode_word(word, out);
        cache.store(word, out.data() + before, out.size() - before);
      }
    }
  }
  if (add_special && t.add_eos) out.push_back(t.eos);
  return out;
}

int32_t Tokenizer::n_vocab() const { return impl_->vocab.size(); }
int32_t Tokenizer::bos() const { return impl_->bos; }
int32_t Tokenizer::eos() const { return impl_->eos; }
int32_t Tokenizer::eot() const { return impl_->eot; }
int32_t Tokenizer::unk() const { return impl_->unk; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
bool Tokenizer::add_eos() const { return impl_->add_eos; }
bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(impl_->eog.begin(), impl_->eog.end(), id);
}
const std::vector<int32_t>& Tokenizer::eog_ids() const { return impl_->eog; }
const std::string& Tokenizer::model_name() const { return impl_->model_name; }
const std::string& Tokenizer::pre_name() const { return impl_->pre_name; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
bool Tokenizer::strips_leading_space() const { return impl_->add_space_prefix; }

const std::string& Tokenizer::token_text(int32_t id) const {
  if (!impl_->vocab.contains(id)) fail("token id ", id, " is out of range (vocabulary of ", n_vocab(), ")");
  return impl_->vocab.at(id).text;
}

bool Tokenizer::is_control(int32_t id) const {
  if (!impl_->vocab.contains(id)) fail("token id ", id, " is out of range (vocabulary of ", n_vocab(), ")");
  return (impl_->vocab.at(id).attr & (kAttrControl | kAttrUnknown)) != 0;
}

}  // namespace rayo::tokenizer
