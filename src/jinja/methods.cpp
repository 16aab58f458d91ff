#include "jinja/methods.h"

#include <algorithm>
#include <functional>

#include "common/error.h"
#include "jinja/arguments.h"
#include "jinja/operations.h"
#include "jinja/python_text.h"

namespace rayo::jinja {

std::string python_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string cps = decode_utf8(s);
  std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_python_space(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  if (b == 0 && e == cps.size()) return s;
  return encode_utf8(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> python_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) fail("empty separator");
    size_t start = 0;
    for (;;) {
      size_t hit = maxsplit != 0 ? s.find(*sep, start) : std::string::npos;
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(start, hit - start));
      start = hit + sep->size();
      if (maxsplit > 0) --maxsplit;
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  // Runs of whitespace separate; leading and trailing whitespace yield nothing.
  std::u32string cps = decode_utf8(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_python_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (maxsplit == 0) {
      size_t e = cps.size();
      while (e > i && is_python_space(cps[e - 1])) --e;
      parts.push_back(encode_utf8(std::u32string_view(cps).substr(i, e - i)));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !is_python_space(cps[j])) ++j;
    parts.push_back(encode_utf8(std::u32string_view(cps).substr(i, j - i)));
    i = j;
    if (maxsplit > 0) --maxsplit;
  }
  return parts;
}

static std::optional<std::string> optional_string(const CallArgs& args, size_t position, std::string_view name,
                                                  std::string_view function) {
  const Value* v = find_argument(args, position, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail(function, "() argument must be str or None, not ", v->type_name());
  return v->as_string();
}

static Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::list(std::move(out));
}

// Code point index of the byte offset `byte` in s (for find()).
static int64_t code_point_index(const std::string& s, size_t byte) {
  return static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, byte)));
}

// startswith/endswith take a string or a tuple of strings.
static bool affix_matches(const Value& affix, const std::string& s, bool prefix, std::string_view function) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) fail(function, "() argument must be str or a tuple of str, not ", a.type_name());
    return prefix ? s.starts_with(a.as_string()) : s.ends_with(a.as_string());
  };
  if (affix.is_list()) {
    for (const auto& a : affix.items())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

static bool all_code_points(const std::string& s, const std::function<bool(char32_t)>& pred) {
  if (s.empty()) return false;
  for (char32_t c : decode_utf8(s))
    if (!pred(c)) return false;
  return true;
}

// str.format with "{}", "{0}" and "{name}" fields (no format specs).
static std::string python_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out.push_back('}');
      ++i;
    } else if (c == '{') {
      size_t close = fmt.find('}', i);
      if (close == std::string::npos) fail("single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
        ++auto_index;
      } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        size_t index = std::stoul(field);
        v = index < args.positional.size() ? &args.positional[index] : nullptr;
      } else {
        for (const auto& [k, val] : args.named)
          if (k == field) v = &val;
      }
      if (!v) fail("format field {", field, "} has no argument");
      out += to_python_str(*v);
      i = close;
    } else if (c == '}') {
      fail("single '}' encountered in format string");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

static std::optional<Value> string_method(const Value& obj, const std::string& name) {
  const std::string s = obj.as_string();
  auto method = [&](auto fn) { return Value::function(name, [s, name, fn](CallArgs& args) { return fn(s, name, args); }); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return Value::function(name, [s, name, left, right](CallArgs& args) {
      return Value::string(python_strip(s, optional_string(args, 0, "chars", name), left, right));
    });
  }
  if (name == "split" || name == "rsplit")
    return method([](const std::string& str, const std::string& fn, CallArgs& args) {
      auto sep = optional_string(args, 0, "sep", fn);
      int64_t maxsplit = int_argument(args, 1, "maxsplit", -1, fn);
      if (fn == "rsplit" && maxsplit >= 0 && sep) {
        // rsplit with a limit splits from the right.
        std::vector<std::string> parts;
        std::string rest = str;
        while (maxsplit-- > 0) {
          size_t hit = rest.rfind(*sep);
          if (hit == std::string::npos) break;
          parts.insert(parts.begin(), rest.substr(hit + sep->size()));
          rest.resize(hit);
        }
        parts.insert(parts.begin(), rest);
        return string_list(parts);
      }
      return string_list(python_split(str, sep, maxsplit));
    });
  if (name == "splitlines")
    return method([](const std::string& str, const std::string&, CallArgs&) {
      std::vector<std::string> parts;
      size_t start = 0;
      for (size_t i = 0; i < str.size(); ++i) {
        if (str[i] == '\n' || str[i] == '\r') {
          parts.push_back(str.substr(start, i - start));
          if (str[i] == '\r' && i + 1 < str.size() && str[i + 1] == '\n') ++i;
          start = i + 1;
        }
      }
      if (start < str.size()) parts.push_back(str.substr(start));
      return string_list(parts);
    });
  if (name == "startswith" || name == "endswith")
    return method([](const std::string& str, const std::string& fn, CallArgs& args) {
      const Value& affix = required_argument(args, 0, "prefix", fn);
      return Value::boolean(affix_matches(affix, str, fn == "startswith", fn));
    });
  if (name == "upper") return method([](const std::string& str, const std::string&, CallArgs&) { return Value::string(python_upper(str)); });
  if (name == "lower") return method([](const std::string& str, const std::string&, CallArgs&) { return Value::string(python_lower(str)); });
  if (name == "title") return method([](const std::string& str, const std::string&, CallArgs&) { return Value::string(python_title(str)); });
  if (name == "capitalize")
    return method([](const std::string& str, const std::string&, CallArgs&) { return Value::string(python_capitalize(str)); });
  if (name == "replace")
    return method([](const std::string& str, const std::string& fn, CallArgs& args) {
      std::string from = string_argument(args, 0, "old", fn), to = string_argument(args, 1, "new", fn);
      int64_t count = int_argument(args, 2, "count", -1, fn);
      std::string out;
      if (from.empty()) {  // Python inserts `to` around every code point
        std::u32string cps = decode_utf8(str);
        for (size_t i = 0; i <= cps.size(); ++i) {
          if (count < 0 || static_cast<int64_t>(i) < count) out += to;
          if (i < cps.size()) append_utf8(out, cps[i]);
          if (out.size() > kMaxBuiltBytes) fail("replace result is too large");
        }
        return Value::string(out);
      }
      size_t start = 0;
      for (size_t hit; count != 0 && (hit = str.find(from, start)) != std::string::npos; --count) {
        out.append(str, start, hit - start);
        out += to;
        if (out.size() > kMaxBuiltBytes) fail("replace result is too large");
        start = hit + from.size();
      }
      out.append(str, start);
      return Value::string(out);
    });
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex")
    return method([](const std::string& str, const std::string& fn, CallArgs& args) {
      std::string sub = string_argument(args, 0, "sub", fn);
      size_t hit = fn[0] == 'r' ? str.rfind(sub) : str.find(sub);
      if (hit == std::string::npos) {
        if (fn.ends_with("index")) fail("substring not found");
        return Value::integer(-1);
      }
      return Value::integer(code_point_index(str, hit));
    });
  if (name == "count")
    return method([](const std::string& str, const std::string& fn, CallArgs& args) {
      std::string sub = string_argument(args, 0, "sub", fn);
      if (sub.empty()) return Value::integer(static_cast<int64_t>(code_point_count(str)) + 1);
      int64_t n = 0;
      for (size_t at = str.find(sub); at != std::string::npos; at = str.find(sub, at + sub.size())) ++n;
      return Value::integer(n);
    });
  if (name == "join")
    return method([](const std::string& str, const std::string& fn, CallArgs& args) {
      std::string out;
      bool first = true;
      for (const auto& item : iterate(required_argument(args, 0, "iterable", fn))) {
        if (!item.is_string()) fail("sequence item: expected str instance, ", item.type_name(), " found");
        if (!first) out += str;
        first = false;
        out += item.as_string();
        if (out.size() > kMaxBuiltBytes) fail("join result is too large");
      }
      return Value::string(out);
    });
  if (name == "format")
    return method([](const std::string& str, const std::string&, CallArgs& args) { return Value::string(python_format(str, args)); });
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
    return method([](const std::string& str, const std::string&, CallArgs&) {
      return Value::boolean(all_code_points(str, [](char32_t c) { return c >= '0' && c <= '9'; }));
    });
  if (name == "isalpha")
    return method([](const std::string& str, const std::string&, CallArgs&) {
      return Value::boolean(all_code_points(str, [](char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }));
    });
  if (name == "isalnum")
    return method([](const std::string& str, const std::string&, CallArgs&) {
      return Value::boolean(all_code_points(
          str, [](char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80; }));
    });
  if (name == "isspace")
    return method([](const std::string& str, const std::string&, CallArgs&) { return Value::boolean(all_code_points(str, is_python_space)); });
  if (name == "islower" || name == "isupper")
    return method([](const std::string& str, const std::string& fn, CallArgs&) {
      bool any_cased = false, ok = true;
      for (char c : str) {
        if (c >= 'a' && c <= 'z') any_cased = true, ok = ok && fn == "islower";
        if (c >= 'A' && c <= 'Z') any_cased = true, ok = ok && fn == "isupper";
      }
      return Value::boolean(any_cased && ok);
    });
  return std::nullopt;
}

static std::optional<Value> dict_method(const Value& obj, const std::string& name) {
  std::shared_ptr<DictData> d = obj.dict_ptr();
  if (name == "items")
    return Value::function(name, [d](CallArgs&) {
      std::vector<Value> out;
      for (const auto& [k, v] : d->entries) out.push_back(Value::tuple({k, v}));
      return Value::list(std::move(out));
    });
  if (name == "keys")
    return Value::function(name, [d](CallArgs&) {
      std::vector<Value> out;
      for (const auto& [k, _] : d->entries) out.push_back(k);
      return Value::list(std::move(out));
    });
  if (name == "values")
    return Value::function(name, [d](CallArgs&) {
      std::vector<Value> out;
      for (const auto& [_, v] : d->entries) out.push_back(v);
      return Value::list(std::move(out));
    });
  if (name == "get")
    return Value::function(name, [d](CallArgs& args) {
      const Value& key = required_argument(args, 0, "key", "get");
      if (const Value* v = d->find(key)) return *v;
      return argument_or(args, 1, "default", Value::none());
    });
  if (name == "copy") return Value::function(name, [obj](CallArgs&) { return obj; });
  if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" || name == "clear")
    return Value::undefined(cat("access to attribute '", name, "' of 'dict' object is unsafe."));
  return std::nullopt;
}

static std::optional<Value> list_method(const Value& obj, const std::string& name) {
  if (name == "index")
    return Value::function(name, [obj](CallArgs& args) {
      const Value& x = required_argument(args, 0, "value", "index");
      const auto& items = obj.items();
      for (size_t i = 0; i < items.size(); ++i)
        if (values_equal(items[i], x)) return Value::integer(static_cast<int64_t>(i));
      fail(to_python_repr(x), " is not in list");
    });
  if (name == "count")
    return Value::function(name, [obj](CallArgs& args) {
      const Value& x = required_argument(args, 0, "value", "count");
      int64_t n = 0;
      for (const auto& item : obj.items()) n += values_equal(item, x) ? 1 : 0;
      return Value::integer(n);
    });
  if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
      name == "clear" || name == "sort" || name == "reverse")
    return Value::undefined(cat("access to attribute '", name, "' of '", obj.type_name(), "' object is unsafe."));
  return std::nullopt;
}

std::optional<Value> bound_method(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Kind::String: return string_method(obj, name);
    case Kind::Dict: return obj.as_dict().flavor == DictFlavor::Plain ? dict_method(obj, name) : std::nullopt;
    case Kind::List: return list_method(obj, name);
    default: return std::nullopt;
  }
}

}  // namespace rayo::jinja
