#include "whisper/whisper_presets.h"

#include <array>

#include "common/error.h"

namespace rayo::whisper {
namespace {

constexpr std::array<WhisperLanguage, 100> kLanguages{{
    {"en", "english"},     {"zh", "chinese"},     {"de", "german"},        {"es", "spanish"},
    {"ru", "russian"},     {"ko", "korean"},      {"fr", "french"},        {"ja", "japanese"},
    {"pt", "portuguese"},  {"tr", "turkish"},     {"pl", "polish"},        {"ca", "catalan"},
    {"nl", "dutch"},       {"ar", "arabic"},      {"sv", "swedish"},       {"it", "italian"},
    {"id", "indonesian"},  {"hi", "hindi"},       {"fi", "finnish"},       {"vi", "vietnamese"},
    {"he", "hebrew"},      {"uk", "ukrainian"},   {"el", "greek"},         {"ms", "malay"},
    {"cs", "czech"},       {"ro", "romanian"},    {"da", "danish"},        {"hu", "hungarian"},
    {"ta", "tamil"},       {"no", "norwegian"},   {"th", "thai"},          {"ur", "urdu"},
    {"hr", "croatian"},    {"bg", "bulgarian"},   {"lt", "lithuanian"},    {"la", "latin"},
    {"mi", "maori"},       {"ml", "malayalam"},   {"cy", "welsh"},         {"sk", "slovak"},
    {"te", "telugu"},      {"fa", "persian"},     {"lv", "latvian"},       {"bn", "bengali"},
    {"sr", "serbian"},     {"az", "azerbaijani"}, {"sl", "slovenian"},     {"kn", "kannada"},
    {"et", "estonian"},    {"mk", "macedonian"},  {"br", "breton"},        {"eu", "basque"},
    {"is", "icelandic"},   {"hy", "armenian"},    {"ne", "nepali"},        {"mn", "mongolian"},
    {"bs", "bosnian"},     {"kk", "kazakh"},      {"sq", "albanian"},      {"sw", "swahili"},
    {"gl", "galician"},    {"mr", "marathi"},     {"pa", "punjabi"},       {"si", "sinhala"},
    {"km", "khmer"},       {"sn", "shona"},       {"yo", "yoruba"},        {"so", "somali"},
    {"af", "afrikaans"},   {"oc", "occitan"},     {"ka", "georgian"},      {"be", "belarusian"},
    {"tg", "tajik"},       {"sd", "sindhi"},      {"gu", "gujarati"},      {"am", "amharic"},
    {"yi", "yiddish"},     {"lo", "lao"},         {"uz", "uzbek"},         {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"},   {"tk", "turkmen"},       {"nn", "nynorsk"},
    {"mt", "maltese"},     {"sa", "sanskrit"},    {"lb", "luxembourgish"}, {"my", "myanmar"},
    {"bo", "tibetan"},     {"tl", "tagalog"},     {"mg", "malagasy"},      {"as", "assamese"},
    {"tt", "tatar"},       {"haw", "hawaiian"},   {"ln", "lingala"},       {"ha", "hausa"},
    {"ba", "bashkir"},     {"jw", "javanese"},    {"su", "sundanese"},     {"yue", "cantonese"},
}};

// openai-whisper's Tokenizer.non_speech_tokens (symbols like "♪", "[", "(("
// that would put non-spoken annotations in a transcript), which depend on the
// base vocabulary. The English-only list is the real tiny.en config.json's
// (../shared/whisper/reference/model-config.json); the multilingual one is the
// Hugging Face generation config's of openai/whisper-tiny ... large-v3.
constexpr int32_t kNonSpeechEnglish[] = {
    1,     2,     7,     8,     9,     10,    14,    25,    26,    27,    28,    29,    31,    58,    59,
    60,    61,    62,    63,    90,    91,    92,    93,    357,   366,   438,   532,   685,   705,   796,
    930,   1058,  1220,  1267,  1279,  1303,  1343,  1377,  1391,  1635,  1782,  1875,  2162,  2361,  2488,
    3467,  4008,  4211,  4600,  4808,  5299,  5855,  6329,  7203,  9609,  9959,  10563, 10786, 11420, 11709,
    11907, 13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992, 19203, 19510, 20724, 22305, 22935, 27007,
    30109, 30420, 33409, 34949, 40283, 40493, 40549, 47282, 49146};
constexpr int32_t kNonSpeechMultilingual[] = {
    1,     2,     7,     8,     9,     10,    14,    25,    26,    27,    28,    29,    31,    58,    59,
    60,    61,    62,    63,    90,    91,    92,    93,    359,   503,   522,   542,   873,   893,   902,
    918,   922,   931,   1350,  1853,  1982,  2460,  2627,  3246,  3253,  3268,  3536,  3846,  3961,  4183,
    4667,  6585,  6647,  7273,  9061,  9383,  10428, 10929, 11938, 12033, 12331, 12562, 13793, 14157, 14635,
    15265, 15618, 16553, 16604, 18362, 18956, 20075, 21675, 22520, 26130, 26161, 26435, 28279, 29464, 31650,
    32302, 32470, 36865, 42863, 47425, 49870, 50254};

constexpr WhisperVocabularyLayout kEnglishOnly{true, 99, "<|nocaptions|>"};
constexpr WhisperVocabularyLayout kMultilingual{false, 99, "<|nocaptions|>"};
constexpr WhisperVocabularyLayout kMultilingualV3{false, 100, "<|nospeech|>"};

}  // namespace

std::span<const WhisperLanguage> whisper_languages() { return kLanguages; }

std::string_view whisper_language_name(std::string_view code) {
  for (const auto& l : kLanguages)
    if (l.code == code) return l.name;
  return {};
}

std::vector<int32_t> WhisperVocabularyLayout::suppress_ids() const {
  std::vector<int32_t> ids;
  if (english_only) ids.assign(std::begin(kNonSpeechEnglish), std::end(kNonSpeechEnglish));
  else ids.assign(std::begin(kNonSpeechMultilingual), std::end(kNonSpeechMultilingual));
  for (int32_t id : {sot(), translate(), transcribe(), sot_lm(), sot_prev(), no_speech()}) ids.push_back(id);
  return ids;
}

std::vector<int32_t> WhisperVocabularyLayout::suppress_ids_begin() const {
  return {220, eot()};  // 220 is "Ġ", a lone space, in both base vocabularies
}

std::vector<int32_t> WhisperVocabularyLayout::lang_ids() const {
  std::vector<int32_t> ids;
  for (int32_t id = first_language() + (english_only ? 1 : 0); id < translate(); ++id) ids.push_back(id);
  return ids;
}

const std::vector<WhisperPreset>& whisper_presets() {
  // Sizes from openai-whisper's model cards (ModelDimensions); alignment heads
  // from its _ALIGNMENT_HEADS (base85 boolean masks, decoded to pairs).
  static const std::vector<WhisperPreset> presets = {
      {"tiny", 80, 384, 6, 4, 1500, 448, kMultilingual, {{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}},
      {"tiny.en", 80, 384, 6, 4, 1500, 448, kEnglishOnly,
       {{1, 0}, {2, 0}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}}},
      {"base", 80, 512, 8, 6, 1500, 448, kMultilingual,
       {{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}},
      {"base.en", 80, 512, 8, 6, 1500, 448, kEnglishOnly, {{3, 3}, {4, 7}, {5, 1}, {5, 5}, {5, 7}}},
      {"small", 80, 768, 12, 12, 1500, 448, kMultilingual,
       {{5, 3}, {5, 9}, {8, 0}, {8, 4}, {8, 7}, {8, 8}, {9, 0}, {9, 7}, {9, 9}, {10, 5}}},
      {"small.en", 80, 768, 12, 12, 1500, 448, kEnglishOnly,
       {{6, 6}, {7, 0}, {7, 3}, {7, 8}, {8, 2}, {8, 5}, {8, 7}, {9, 0}, {9, 4}, {9, 8},
        {9, 10}, {10, 0}, {10, 1}, {10, 2}, {10, 3}, {10, 6}, {10, 11}, {11, 2}, {11, 4}}},
      {"medium", 80, 1024, 16, 24, 1500, 448, kMultilingual,
       {{13, 15}, {15, 4}, {15, 15}, {16, 1}, {20, 0}, {23, 4}}},
      {"medium.en", 80, 1024, 16, 24, 1500, 448, kEnglishOnly,
       {{11, 4}, {14, 1}, {14, 12}, {14, 14}, {15, 4}, {16, 0}, {16, 4}, {16, 9}, {17, 12},
        {17, 14}, {18, 7}, {18, 10}, {18, 15}, {20, 0}, {20, 3}, {20, 9}, {20, 14}, {21, 12}}},
      {"large-v3", 128, 1280, 20, 32, 1500, 448, kMultilingualV3,
       {{7, 0}, {10, 17}, {12, 18}, {13, 12}, {16, 1}, {17, 14}, {19, 11}, {21, 4}, {24, 1}, {25, 6}}},
  };
  return presets;
}

std::string whisper_preset_names(std::string_view separator) {
  std::string names;
  for (const auto& p : whisper_presets()) names += cat(names.empty() ? "" : separator, p.name);
  return names;
}

const WhisperPreset& whisper_preset(std::string_view name) {
  for (const auto& p : whisper_presets())
    if (p.name == name) return p;
  fail("unknown Whisper preset ", quote_for_message(name), " (valid: ", whisper_preset_names(", "), ")");
}

}  // namespace rayo::whisper
