#pragma once
// Cuts text at special tokens before the tokenizer proper runs, with llama.cpp's
// rules (tokenizer_st_partition): control, user-defined and unknown tokens are
// matched whole in the text; the longest token texts are taken first, each at its
// leftmost non-overlapping occurrences; control and unknown tokens only when
// parse_special is on, user-defined tokens always. A token marked lstrip / rstrip
// also swallows the ASCII whitespace before / after it.
//
// Instead of scanning the text once per special token (llama.cpp), one pass over
// a trie finds every occurrence of every special token; the priority rules are
// then applied to that (normally tiny) list.
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace rayo::tokenizer {

struct Fragment {
  int32_t token = -1;  // a special token, or -1 for text
  size_t begin = 0;    // text: byte range in the input
  size_t size = 0;
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;

 private:
  struct Node {
    int32_t first_child = -1;
    int32_t next_sibling = -1;
    int32_t token = -1;  // special token ending here
    uint8_t byte = 0;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  const Vocab* vocab_;
  std::vector<int32_t> priority_;  // token id -> rank in llama.cpp's processing order
  std::vector<Node> nodes_;        // trie of special token texts; node 0 is the root
  bool any_ = false;
};

}  // namespace rayo::tokenizer
