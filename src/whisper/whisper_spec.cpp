#include "whisper/whisper_spec.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "whisper/whisper_tokenizer.h"

namespace rayo::whisper {
namespace {

// A dimension of a variable's shape, which must have `rank` of them.
uint32_t dim(const Ct2Model& m, std::string_view name, size_t rank, size_t i) {
  const Ct2Variable& v = m.get(name);
  if (v.shape.size() != rank) fail(m.path(), ": variable '", name, "' has rank ", v.shape.size(), ", expected ", rank);
  return v.shape[i];
}

uint32_t count_layers(const Ct2Model& m, std::string_view stack) {
  uint32_t n = 0;
  while (m.find(std::string(stack) + "/layer_" + std::to_string(n) + "/ffn/linear_0/weight") != nullptr) ++n;
  if (n == 0) fail(m.path(), ": no ", stack, " layers (", stack, "/layer_0/...)");
  return n;
}

std::vector<int32_t> ints(const nlohmann::json& j, const char* key, const std::string& where) {
  std::vector<int32_t> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) fail(where, ": '", key, "' is not a list");
  for (const auto& v : j[key]) {
    if (!v.is_number_integer()) fail(where, ": '", key, "' holds something other than token ids");
    out.push_back(v.get<int32_t>());
  }
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot read (is this a CTranslate2 Whisper folder?)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The folder's tokens, id order: vocabulary.json (a JSON list of strings, what
// CTranslate2 4's converters write, as in Systran's faster-whisper-large-v3)
// or vocabulary.txt (a token a line, what older converters wrote).
std::vector<std::string> read_vocabulary(const std::filesystem::path& dir) {
  std::vector<std::string> vocabulary;
  if (const auto json_path = dir / "vocabulary.json"; std::filesystem::exists(json_path)) {
    const std::string where = json_path.string();
    nlohmann::json tokens;
    try {
      tokens = nlohmann::json::parse(read_file(json_path));
    } catch (const nlohmann::json::exception& e) {
      fail(where, ": not valid JSON (", e.what(), ")");
    }
    if (!tokens.is_array()) fail(where, ": not a list of tokens");
    for (const auto& t : tokens) {
      if (!t.is_string()) fail(where, ": token ", vocabulary.size(), " is not a string");
      vocabulary.push_back(t.get<std::string>());
    }
    return vocabulary;
  }
  const auto txt_path = dir / "vocabulary.txt";
  if (!std::filesystem::exists(txt_path))
    fail(dir.string(), ": no vocabulary.json or vocabulary.txt (is this a CTranslate2 Whisper folder?)");
  std::istringstream lines(read_file(txt_path));
  for (std::string line; std::getline(lines, line);) vocabulary.push_back(line);
  return vocabulary;
}

}  // namespace

WhisperSpec whisper_spec(const Ct2Model& m, std::string_view config_json, const std::vector<std::string>& vocabulary,
                         const std::string& where) {
  if (m.spec_name() != "WhisperSpec") fail(m.path(), ": a ", m.spec_name(), " model, not a Whisper model");
  WhisperSpec s;
  s.n_audio_state = dim(m, "encoder/conv1/weight", 3, 0);
  s.n_mels = dim(m, "encoder/conv1/weight", 3, 1);
  s.n_audio_ctx = dim(m, "encoder/position_encodings/encodings", 2, 0);
  s.n_audio_head = static_cast<uint32_t>(m.integer("encoder/num_heads"));
  s.n_audio_layer = count_layers(m, "encoder");
  s.n_vocab = dim(m, "decoder/embeddings/weight", 2, 0);
  s.n_text_state = dim(m, "decoder/embeddings/weight", 2, 1);
  s.n_text_ctx = dim(m, "decoder/position_encodings/encodings", 2, 0);
  s.n_text_head = static_cast<uint32_t>(m.integer("decoder/num_heads"));
  s.n_text_layer = count_layers(m, "decoder");
  s.n_ffn = dim(m, "encoder/layer_0/ffn/linear_0/weight", 2, 0);
  if (s.n_mels != 80 && s.n_mels != 128) fail(m.path(), ": ", s.n_mels, " mel bins (Whisper has 80 or 128)");
  if (s.n_audio_head == 0 || s.n_audio_state % s.n_audio_head != 0 || s.n_text_head == 0 ||
      s.n_text_state % s.n_text_head != 0)
    fail(m.path(), ": widths ", s.n_audio_state, "/", s.n_text_state, " are not multiples of the head counts ",
         s.n_audio_head, "/", s.n_text_head);
  if (s.n_audio_state != s.n_text_state)
    fail(m.path(), ": encoder width ", s.n_audio_state, " differs from the decoder's ", s.n_text_state);
  if (dim(m, "encoder/position_encodings/encodings", 2, 1) != s.n_audio_state ||
      dim(m, "decoder/position_encodings/encodings", 2, 1) != s.n_text_state)
    fail(m.path(), ": position encodings of the wrong width");
  // CTranslate2 marks what its Whisper spec does: GELU (id 3), pre-norm, no scaled embeddings.
  if (m.integer("decoder/activation") != 3) fail(m.path(), ": activation ", m.integer("decoder/activation"), " is not GELU");

  nlohmann::json config;
  try {
    config = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": ", e.what());
  }
  if (!config.is_object()) fail(where, ": not a JSON object");
  s.suppress_ids = ints(config, "suppress_ids", where);
  s.suppress_ids_begin = ints(config, "suppress_ids_begin", where);
  s.lang_ids = ints(config, "lang_ids", where);
  if (config.contains("alignment_heads")) {
    for (const auto& p : config["alignment_heads"]) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer())
        fail(where, ": 'alignment_heads' must hold [layer, head] pairs");
      s.alignment_heads.emplace_back(p[0].get<int32_t>(), p[1].get<int32_t>());
    }
  }

  if (vocabulary.size() != s.n_vocab)
    fail(where, ": the vocabulary has ", vocabulary.size(), " tokens, the model's embedding ", s.n_vocab);
  auto id_of = [&](std::string_view text) -> int32_t {
    for (size_t i = vocabulary.size(); i-- > 0;)  // the specials are at the end
      if (vocabulary[i] == text) return static_cast<int32_t>(i);
    return -1;
  };
  s.eot = id_of("<|endoftext|>");
  s.sot = id_of("<|startoftranscript|>");
  s.sot_prev = id_of("<|startofprev|>");
  s.sot_lm = id_of("<|startoflm|>");
  s.no_speech = id_of("<|nospeech|>");
  if (s.no_speech < 0) s.no_speech = id_of("<|nocaptions|>");
  s.no_timestamps = id_of("<|notimestamps|>");
  s.translate = id_of("<|translate|>");
  s.transcribe = id_of("<|transcribe|>");
  s.timestamp_begin = id_of("<|0.00|>");
  for (auto [name, id] : {std::pair<const char*, int32_t>{"<|endoftext|>", s.eot}, {"<|startoftranscript|>", s.sot},
                          {"<|notimestamps|>", s.no_timestamps}, {"<|0.00|>", s.timestamp_begin}})
    if (id < 0) fail(where, ": the vocabulary has no ", name, " token");
  return s;
}

WhisperFiles load_ct2_whisper(const std::string& folder) {
  const std::filesystem::path dir(folder);
  if (!std::filesystem::is_directory(dir))
    fail(folder, ": not a folder (a CTranslate2 Whisper model is a folder with model.bin, config.json, vocabulary.json or .txt)");
  Ct2Model model = Ct2Model::open((dir / "model.bin").string());
  const std::vector<std::string> vocabulary = read_vocabulary(dir);
  const std::string config_path = (dir / "config.json").string();
  WhisperSpec spec = whisper_spec(model, read_file(config_path), vocabulary, config_path);
  std::vector<std::string> merges;
  if (const auto tokenizer_json = dir / "tokenizer.json"; std::filesystem::exists(tokenizer_json))
    merges = read_tokenizer_json_merges(tokenizer_json.string());
  return WhisperFiles{std::move(model), std::move(spec), std::move(vocabulary), std::move(merges)};
}

}  // namespace rayo::whisper
