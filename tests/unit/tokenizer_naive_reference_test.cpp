// The fast merge loops (heap + linked list, id-pair merge table, word cache,
// SentencePiece's cutting at unmergeable characters) against deliberately naive
// versions of the same algorithms, on random vocabularies and texts.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "tokenizer/byte_encoding.h"
#include "tokenizer/utf8.h"
#include "tokenizer_toy_vocab.h"

namespace rayo::tokenizer {
namespace {

const std::string kSp = "\xE2\x96\x81";

std::vector<std::string> chars_of(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(utf8_length_from_lead(static_cast<uint8_t>(text[i])), text.size() - i);
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

// SentencePiece, the obvious way: merge the best-scoring adjacent pair (leftmost
// on ties) until no pair is a token.
std::vector<int32_t> naive_spm(const TokenizerSpec& spec, const std::string& text) {
  std::map<std::string, int32_t> id;
  for (size_t i = 0; i < spec.tokens.size(); ++i) id[spec.tokens[i]] = static_cast<int32_t>(i);
  std::vector<std::string> sym = chars_of(text);
  while (true) {
    int best = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = id.find(sym[i] + sym[i + 1]);
      if (it == id.end()) continue;
      const float score = spec.scores[it->second];
      if (best < 0 || score > best_score) best = static_cast<int>(i), best_score = score;
    }
    if (best < 0) break;
    sym[best] += sym[best + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<int32_t> out;
  static const char* hex = "0123456789ABCDEF";
  for (const std::string& s : sym) {
    if (auto it = id.find(s); it != id.end()) {
      out.push_back(it->second);
      continue;
    }
    for (char c : s) {
      const auto b = static_cast<uint8_t>(c);
      auto it = id.find(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
      out.push_back(it != id.end() ? it->second : 0);  // 0 = <unk>
    }
  }
  return out;
}

TEST(TokenizerNaiveReference, SpmMatchesOnRandomVocabularies) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", kSp, "\xC3\xA9", "\n"};
  for (int trial = 0; trial < 300; ++trial) {
    // Half the vocabularies keep "▁" only at the front of tokens (the word-cut
    // path), half do not (one merge loop over the whole text).
    const bool leading_spaces_only = trial % 2 == 0;
    std::set<std::string> pieces;
    for (int i = 0; i < 40; ++i) {
      std::string t;
      const int len = 2 + static_cast<int>(rng() % 4);
      for (int k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
      if (leading_spaces_only) {
        size_t pos = 0;
        while (t.compare(pos, 3, kSp) == 0) pos += 3;
        if (t.find(kSp, pos) != std::string::npos) continue;
      }
      pieces.insert(t);
    }
    std::vector<std::pair<std::string, float>> normal;
    for (const std::string& a : alphabet)
      if (rng() % 4 != 0) normal.push_back({a, -1});
    for (const std::string& p : pieces) normal.push_back({p, -static_cast<float>(rng() % 8)});  // ties on purpose
    auto spec = test::spm_spec(normal, /*bytes=*/trial % 3 != 0);
    spec.add_space_prefix = false;
    const auto tok = Tokenizer::from_spec(spec);
    for (int n = 0; n < 20; ++n) {
      std::string text;
      const int len = static_cast<int>(rng() % 30);
      for (int k = 0; k < len; ++k) text += alphabet[rng() % alphabet.size()];
      // The tokenizer turns ' ' into "▁"; the naive version gets the escaped text.
      ASSERT_EQ(tok.encode(text, false, false), naive_spm(spec, text)) << "trial " << trial << " text '" << text << "'";
    }
  }
}

// Byte-level BPE, the obvious way, on one word: merge the lowest-rank adjacent
// pair (leftmost on ties) until none is in the merge list.
std::vector<int32_t> naive_bpe(const TokenizerSpec& spec, const std::string& word) {
  std::map<std::string, int32_t> id;
  for (size_t i = 0; i < spec.tokens.size(); ++i) id[spec.tokens[i]] = static_cast<int32_t>(i);
  std::map<std::pair<std::string, std::string>, size_t> rank;
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const std::string& m = spec.merges[r];
    const size_t space = m.find(' ', 1);
    rank.emplace(std::make_pair(m.substr(0, space), m.substr(space + 1)), r);
  }
  std::vector<std::string> sym;
  for (char c : word) sym.emplace_back(byte_to_unicode(static_cast<uint8_t>(c)));
  while (true) {
    int best = -1;
    size_t best_rank = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = rank.find({sym[i], sym[i + 1]});
      if (it == rank.end()) continue;
      if (best < 0 || it->second < best_rank) best = static_cast<int>(i), best_rank = it->second;
    }
    if (best < 0) break;
    sym[best] += sym[best + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<int32_t> out;
  for (const std::string& s : sym) {
    if (auto it = id.find(s); it != id.end()) {
      out.push_back(it->second);
      continue;
    }
    for (char c : s)
      if (auto it = id.find(std::string(1, c)); it != id.end()) out.push_back(it->second);
  }
  return out;
}

TEST(TokenizerNaiveReference, BpeMatchesOnRandomMerges) {
  std::mt19937 rng(99);
  const std::string alphabet = "abcd";
  for (int trial = 0; trial < 200; ++trial) {
    // Random merges over growing strings; some merge results are not tokens.
    std::vector<std::string> strings = {"a", "b", "c", "d"};
    std::vector<std::string> merges;
    std::set<std::string> seen_merges;
    for (int i = 0; i < 30; ++i) {
      const std::string& l = strings[rng() % strings.size()];
      const std::string& r = strings[rng() % strings.size()];
      const std::string m = l + " " + r;
      if (!seen_merges.insert(m).second) continue;
      merges.push_back(m);
      strings.push_back(l + r);
    }
    auto spec = test::bpe_spec("gpt-2", {});
    std::set<std::string> have(spec.tokens.begin(), spec.tokens.end());
    for (const std::string& m : merges) {
      spec.merges.push_back(m);
      const std::string joined = m.substr(0, m.find(' ', 1)) + m.substr(m.find(' ', 1) + 1);
      if (rng() % 5 != 0 && have.insert(joined).second) {
        spec.tokens.push_back(joined);
        spec.token_types.push_back(1);
      }
    }
    const auto tok = Tokenizer::from_spec(spec);
    for (int n = 0; n < 20; ++n) {
      std::string word;
      const int len = 1 + static_cast<int>(rng() % 24);
      for (int k = 0; k < len; ++k) word += alphabet[rng() % alphabet.size()];
      ASSERT_EQ(tok.encode(word, false, false), naive_bpe(spec, word)) << "trial " << trial << " word " << word;
    }
  }
}

}  // namespace
}  // namespace rayo::tokenizer
