#pragma once
// Python methods of str, dict and list that templates call ("x.strip()",
// "d.items()"). As in the sandbox Hugging Face renders with, methods that would
// modify a list or dict exist but are unsafe: reading them gives an undefined
// value, and calling it fails.
#include <optional>
#include <string>

#include "jinja/value.h"

namespace rayo::jinja {

// The method `name` bound to `obj`; nullopt when the type has no such method.
std::optional<Value> bound_method(const Value& obj, const std::string& name);

// Python str.split(sep) with sep = nullopt splitting on runs of whitespace.
std::vector<std::string> python_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.strip/lstrip/rstrip with chars = nullopt meaning whitespace.
std::string python_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);

}  // namespace rayo::jinja
