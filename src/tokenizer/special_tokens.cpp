#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <array>
#include <map>

namespace rayo::tokenizer {
namespace {

constexpr uint32_t kSpecialAttrs = kAttrControl | kAttrUserDefined | kAttrUnknown;

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : vocab_(&vocab) {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < vocab.size(); ++id)
    if (vocab.at(id).attr & kSpecialAttrs) order.push_back(id);
  // Longest text first (llama.cpp); equal lengths by id, so the order is defined.
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return vocab.at(a).text.size() > vocab.at(b).text.size();
  });
  priority_.assign(static_cast<size_t>(vocab.size()), -1);
  for (size_t i = 0; i < order.size(); ++i) priority_[order[i]] = static_cast<int32_t>(i);

  nodes_.push_back(Node{});
  for (int32_t id : order) {
    int32_t node = 0;
    for (char c : vocab.at(id).text) {
      const auto byte = static_cast<uint8_t>(c);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        Node n;
        n.byte = byte;
        n.next_sibling = nodes_[node].first_child;
        nodes_.push_back(n);
        nodes_[node].first_child = next;
      }
      node = next;
    }
    nodes_[node].token = id;
  }
  any_ = !order.empty();
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling)
    if (nodes_[c].byte == byte) return c;
  return -1;
}

std::vector<Fragment> SpecialTokenMatcher::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  const Vocab& vocab = *vocab_;

  // 1. Every occurrence of every eligible special token.
  struct Occurrence {
    int32_t priority;
    size_t pos;
    int32_t token;
  };
  std::vector<Occurrence> found;
  if (any_) {
    std::array<bool, 256> starts{};
    for (int32_t c = nodes_[0].first_child; c >= 0; c = nodes_[c].next_sibling) starts[nodes_[c].byte] = true;
    for (size_t pos = 0; pos < text.size(); ++pos) {
      if (!starts[static_cast<uint8_t>(text[pos])]) continue;
      int32_t node = 0;
      for (size_t i = pos; i < text.size(); ++i) {
        node = child(node, static_cast<uint8_t>(text[i]));
        if (node < 0) break;
        const int32_t token = nodes_[node].token;
        if (token < 0) continue;
        if (!parse_special && (vocab.at(token).attr & (kAttrControl | kAttrUnknown))) continue;
        found.push_back({priority_[token], pos, token});
      }
    }
  }
  if (found.empty()) {
    fragments.push_back({-1, 0, text.size()});
    return fragments;
  }

  // 2. llama.cpp's order: token by token (longest first), each left to right. An
  // occurrence is taken when it lies in text not yet claimed; stripped whitespace
  // is claimed too (it belongs to no fragment afterwards).
  std::sort(found.begin(), found.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.pos < b.pos;
  });
  struct Claim {
    size_t end;
    int32_t token;  // -1 for stripped whitespace
  };
  std::map<size_t, Claim> claimed;  // begin -> claim
  auto free_between = [&](size_t begin, size_t end, size_t& left_limit, size_t& right_limit) {
    // Is [begin, end) unclaimed? Also reports the unclaimed run around it.
    auto next = claimed.lower_bound(begin);
    if (next != claimed.end() && next->first < end) return false;
    right_limit = next == claimed.end() ? text.size() : next->first;
    left_limit = 0;
    if (next != claimed.begin()) {
      auto prev = std::prev(next);
      if (prev->second.end > begin) return false;
      left_limit = prev->second.end;
    }
    return true;
  };
  for (const Occurrence& o : found) {
    const TokenData& data = vocab.at(o.token);
    const size_t end = o.pos + data.text.size();
    size_t left_limit = 0;
    size_t right_limit = 0;
    if (!free_between(o.pos, end, left_limit, right_limit)) continue;
    claimed[o.pos] = {end, o.token};
    if (data.attr & kAttrLstrip) {
      size_t s = o.pos;
      while (s > left_limit && is_ascii_space(text[s - 1])) --s;
      if (s < o.pos) claimed[s] = {o.pos, -1};
    }
    if (data.attr & kAttrRstrip) {
      size_t e = end;
      while (e < right_limit && is_ascii_space(text[e])) ++e;
      if (e > end) claimed[end] = {e, -1};
    }
  }

  // 3. Fragments: the unclaimed runs and the claimed tokens, in text order.
  size_t pos = 0;
  for (const auto& [begin, claim] : claimed) {
    if (begin > pos) fragments.push_back({-1, pos, begin - pos});
    if (claim.token >= 0) fragments.push_back({claim.token, begin, claim.end - begin});
    pos = claim.end;
  }
  if (pos < text.size()) fragments.push_back({-1, pos, text.size() - pos});
  return fragments;
}

}  // namespace rayo::tokenizer
