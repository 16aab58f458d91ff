#pragma once
// Between JSON documents and template values: conversations and tools arrive as
// JSON, and the `tojson` filter writes values back out exactly as Python's
// json.dumps(x, ensure_ascii=False, ...) does, which is what Hugging Face's chat
// templates are rendered with.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "jinja/value.h"

namespace rayo::jinja {

// Object keys keep their order (ordered_json), as Python dicts do.
Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps indent: none = one line
  std::string item_separator = ", ";  // Python's defaults (", " becomes "," with an indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

std::string to_json_text(const Value& v, const JsonDumpOptions& options = {});

}  // namespace rayo::jinja
