#pragma once
// Reading the arguments of a builtin (filter, test, method, global function) the
// way Python binds them: by position, or by keyword.
#include <string_view>

#include "common/error.h"
#include "jinja/value.h"

namespace rayo::jinja {

// The argument at `position` or named `name`; nullptr when not given.
inline const Value* find_argument(const CallArgs& args, size_t position, std::string_view name) {
  if (position < args.positional.size()) return &args.positional[position];
  for (const auto& [key, value] : args.named)
    if (key == name) return &value;
  return nullptr;
}

inline Value argument_or(const CallArgs& args, size_t position, std::string_view name, Value fallback) {
  const Value* v = find_argument(args, position, name);
  return v ? *v : std::move(fallback);
}

inline const Value& required_argument(const CallArgs& args, size_t position, std::string_view name,
                                      std::string_view function) {
  const Value* v = find_argument(args, position, name);
  if (!v) fail(function, "() missing required argument '", name, "'");
  return *v;
}

inline int64_t int_argument(const CallArgs& args, size_t position, std::string_view name, int64_t fallback,
                            std::string_view function) {
  const Value* v = find_argument(args, position, name);
  if (!v || v->is_none() || v->is_undefined()) return fallback;
  if (!v->is_int() && !v->is_bool()) fail(function, "() argument '", name, "' must be an integer, not ", v->type_name());
  return v->as_int();
}

inline std::string string_argument(const CallArgs& args, size_t position, std::string_view name,
                                   std::string_view function) {
  const Value& v = required_argument(args, position, name, function);
  if (!v.is_string()) fail(function, "() argument '", name, "' must be str, not ", v.type_name());
  return v.as_string();
}

}  // namespace rayo::jinja
