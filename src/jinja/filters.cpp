// Builtin filters, following jinja2's definitions (and Hugging Face's `tojson`,
// which is json.dumps with ensure_ascii=False and keys in their given order).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/error.h"
#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/json_bridge.h"
#include "jinja/methods.h"
#include "jinja/operations.h"
#include "jinja/python_text.h"

namespace rayo::jinja {
namespace {

// CallArgs without the first `n` positional arguments (the rest are passed on to
// a test or filter named by the first).
CallArgs drop_positional(const CallArgs& args, size_t n) {
  CallArgs rest;
  for (size_t i = n; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.named = args.named;
  return rest;
}

// jinja2's attribute getter for filters: "a.b.0" looks up a, then b, then item 0.
Value lookup_path(const Value& v, const Value& path) {
  if (path.is_int()) return get_item(v, path);
  std::string p = to_python_str(path);
  Value current = v;
  size_t start = 0;
  for (;;) {
    size_t dot = p.find('.', start);
    std::string part = p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = numeric && part.size() < 18 ? get_item(current, Value::integer(std::stoll(part))) : get_item(current, Value::string(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

// Sort/unique key: strings compare lower-cased unless case-sensitive.
Value fold_case(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value::string(python_lower(v.as_string())) : v;
}

bool bool_argument(const CallArgs& args, size_t position, std::string_view name, bool fallback) {
  const Value* v = find_argument(args, position, name);
  return v ? v->truthy() : fallback;
}

std::string str_of(const Value& v) { return to_python_str(v); }

Value do_indent(const Value& subject, const CallArgs& args) {
  const Value width = argument_or(args, 0, "width", Value::integer(4));
  if (!width.is_string() && !width.is_int() && !width.is_bool()) fail("indent width must be an integer or a string");
  std::string indentation = width.is_string() ? width.as_string() : std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 4096)), ' ');
  bool first = bool_argument(args, 1, "first", false);
  bool blank = bool_argument(args, 2, "blank", false);
  // jinja2 appends a newline so that splitlines keeps a trailing empty line.
  std::string s = str_of(subject) + "\n";
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
      lines.push_back(s.substr(start, i - start));
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += indentation;
    }
    out += lines[i];
    if (out.size() > kMaxBuiltBytes) fail("indent result is too large");
  }
  if (first) out = indentation + out;
  return Value::string(out);
}

Value do_tojson(const Value& subject, const CallArgs& args) {
  JsonDumpOptions options;
  options.ensure_ascii = bool_argument(args, 0, "ensure_ascii", false);
  if (const Value* indent = find_argument(args, 1, "indent"); indent && !indent->is_none() && !indent->is_undefined()) {
    if (indent->is_string()) {
      options.indent = indent->as_string();
    } else if (indent->is_int()) {
      options.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 4096)), ' ');
    } else {
      fail("tojson indent must be an integer or a string");
    }
  }
  if (const Value* separators = find_argument(args, 2, "separators"); separators && separators->is_list()) {
    if (separators->items().size() != 2 || !separators->items()[0].is_string() || !separators->items()[1].is_string())
      fail("tojson separators must be a pair of strings");
    options.item_separator = separators->items()[0].as_string();
    options.key_separator = separators->items()[1].as_string();
  }
  options.sort_keys = bool_argument(args, 3, "sort_keys", false);
  return Value::string(to_json_text(subject, options));
}

Value do_round(const Value& subject, const CallArgs& args) {
  if (!subject.is_number()) fail("round filter needs a number, not ", subject.type_name());
  int64_t precision = int_argument(args, 0, "precision", 0, "round");
  std::string method = to_python_str(argument_or(args, 1, "method", Value::string("common")));
  double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision, -300, 300)));
  double x = subject.as_double() * scale;
  double r;
  if (method == "common")
    r = std::nearbyint(x);  // Python's round: halves go to even
  else if (method == "ceil")
    r = std::ceil(x);
  else if (method == "floor")
    r = std::floor(x);
  else
    fail("round method must be 'common', 'ceil' or 'floor'");
  return Value::number(r / scale);
}

Value to_int(const Value& subject, const CallArgs& args) {
  Value fallback = argument_or(args, 0, "default", Value::integer(0));
  if (subject.is_int() || subject.is_bool()) return Value::integer(subject.as_int());
  if (subject.is_float()) {
    double f = subject.as_double();
    if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(f));
  }
  if (subject.is_string()) {
    std::string s = python_strip(subject.as_string(), std::nullopt, true, true);
    int64_t base = int_argument(args, 1, "base", 10, "int");
    if (base < 2 || base > 36) return fallback;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, static_cast<int>(base));
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value::integer(v);
    // jinja2 falls back to int(float(s)).
    end = nullptr;
    double f = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(f) && std::fabs(f) < 9.2e18)
      return Value::integer(static_cast<int64_t>(f));
  }
  return fallback;
}

Value to_float(const Value& subject, const CallArgs& args) {
  Value fallback = argument_or(args, 0, "default", Value::number(0.0));
  if (subject.is_number()) return Value::number(subject.as_double());
  if (subject.is_string()) {
    std::string s = python_strip(subject.as_string(), std::nullopt, true, true);
    char* end = nullptr;
    double f = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value::number(f);
  }
  return fallback;
}

std::vector<Value> sorted(std::vector<Value> items, const CallArgs& args, size_t attribute_position) {
  bool reverse = bool_argument(args, 0, "reverse", false);
  bool case_sensitive = bool_argument(args, 1, "case_sensitive", false);
  const Value* attribute = find_argument(args, attribute_position, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : items) {
    Value key = attribute && !attribute->is_none() ? lookup_path(item, *attribute) : item;
    keyed.emplace_back(fold_case(key, case_sensitive), std::move(item));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? value_less(b.first, a.first) : value_less(a.first, b.first);
  });
  std::vector<Value> out;
  for (auto& [_, item] : keyed) out.push_back(std::move(item));
  return out;
}

// select/reject/selectattr/rejectattr share this: keep items whose (attribute)
// value passes the named test, or is truthy when no test is named.
Value select_items(Interpreter& interpreter, const Value& subject, const CallArgs& args, bool by_attribute, bool keep) {
  size_t test_position = by_attribute ? 1 : 0;
  Value attribute = by_attribute ? required_argument(args, 0, "attribute", "selectattr") : Value();
  const Value* test_name = find_argument(args, test_position, "");
  CallArgs test_args = drop_positional(args, test_position + 1);
  test_args.named.clear();
  std::vector<Value> out;
  for (const auto& item : iterate(subject)) {
    interpreter.count_steps();
    Value probe = by_attribute ? lookup_path(item, attribute) : item;
    bool passes = test_name ? interpreter.test(to_python_str(*test_name), probe, test_args) : probe.truthy();
    if (passes == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_items(Interpreter& interpreter, const Value& subject, const CallArgs& args) {
  std::vector<Value> out;
  const Value* attribute = nullptr;
  for (const auto& [k, v] : args.named)
    if (k == "attribute") attribute = &v;
  if (attribute) {
    Value fallback = argument_or(args, 99, "default", Value());
    for (const auto& item : iterate(subject)) {
      interpreter.count_steps();
      Value v = lookup_path(item, *attribute);
      out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) fail("map() needs a filter name or attribute=");
  std::string filter = to_python_str(args.positional[0]);
  CallArgs rest = drop_positional(args, 1);
  for (const auto& item : iterate(subject)) {
    interpreter.count_steps();
    CallArgs each = rest;
    out.push_back(interpreter.filter(filter, item, each));
  }
  return Value::list(std::move(out));
}

Value html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return Value::string(out);
}

Value min_max(const Value& subject, const CallArgs& args, bool want_max) {
  bool case_sensitive = bool_argument(args, 0, "case_sensitive", false);
  const Value* attribute = find_argument(args, 1, "attribute");
  std::vector<Value> items = iterate(subject);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  auto key = [&](const Value& v) { return fold_case(attribute ? lookup_path(v, *attribute) : v, case_sensitive); };
  for (size_t i = 1; i < items.size(); ++i) {
    bool better = want_max ? value_less(key(items[best]), key(items[i])) : value_less(key(items[i]), key(items[best]));
    if (better) best = i;
  }
  return items[best];
}

}  // namespace

Value apply_filter(Interpreter& interpreter, const std::string& name, const Value& v, CallArgs& args) {
  if (name == "safe" || name == "forceescape") return v;
  if (name == "default" || name == "d") {
    Value fallback = argument_or(args, 0, "default_value", Value::string(""));
    bool boolean = bool_argument(args, 1, "boolean", false);
    return v.is_undefined() || (boolean && !v.truthy()) ? fallback : v;
  }
  if (name == "length" || name == "count") return Value::integer(length_of(v));
  if (name == "string") return Value::string(str_of(v));
  if (name == "trim") {
    const Value* chars = find_argument(args, 0, "chars");
    std::optional<std::string> set;
    if (chars && chars->is_string()) set = chars->as_string();
    return Value::string(python_strip(str_of(v), set, true, true));
  }
  if (name == "upper") return Value::string(python_upper(str_of(v)));
  if (name == "lower") return Value::string(python_lower(str_of(v)));
  if (name == "title") return Value::string(python_title(str_of(v)));
  if (name == "capitalize") return Value::string(python_capitalize(str_of(v)));
  if (name == "tojson") return do_tojson(v, args);
  if (name == "indent") return do_indent(v, args);
  if (name == "escape" || name == "e") return html_escape(str_of(v));
  if (name == "replace") {
    Value s = Value::string(str_of(v));
    CallArgs method_args;
    method_args.positional = {required_argument(args, 0, "old", name), required_argument(args, 1, "new", name)};
    if (const Value* count = find_argument(args, 2, "count"); count && !count->is_none())
      method_args.positional.push_back(*count);
    return bound_method(s, "replace")->as_function().call(method_args);
  }
  if (name == "join") {
    std::string separator = to_python_str(argument_or(args, 0, "d", Value::string("")));
    const Value* attribute = find_argument(args, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += separator;
      first = false;
      out += str_of(attribute ? lookup_path(item, *attribute) : item);
      if (out.size() > kMaxBuiltBytes) fail("join result is too large");
    }
    return Value::string(out);
  }
  if (name == "list") return Value::list(iterate(v));
  if (name == "first") {
    if (v.is_list()) return v.items().empty() ? Value::undefined("No first item, sequence was empty.") : v.items().front();
    auto items = iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
  }
  if (name == "last") {
    if (v.is_list()) return v.items().empty() ? Value::undefined("No last item, sequence was empty.") : v.items().back();
    auto items = iterate(v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::u32string cps = decode_utf8(v.as_string());
      std::reverse(cps.begin(), cps.end());
      return Value::string(encode_utf8(cps));
    }
    auto items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::tuple({k, val}));
    return Value::list(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) fail("dictsort needs a mapping, not ", v.type_name());
    bool case_sensitive = bool_argument(args, 0, "case_sensitive", false);
    std::string by = to_python_str(argument_or(args, 1, "by", Value::string("key")));
    bool reverse = bool_argument(args, 2, "reverse", false);
    if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
    std::vector<Value> pairs;
    for (const auto& [k, val] : v.as_dict().entries) pairs.push_back(Value::tuple({k, val}));
    size_t index = by == "key" ? 0 : 1;
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
      Value x = fold_case(a.items()[index], case_sensitive), y = fold_case(b.items()[index], case_sensitive);
      return reverse ? value_less(y, x) : value_less(x, y);
    });
    return Value::list(std::move(pairs));
  }
  if (name == "sort") return Value::list(sorted(iterate(v), args, 2));
  if (name == "unique") {
    bool case_sensitive = bool_argument(args, 0, "case_sensitive", false);
    const Value* attribute = find_argument(args, 1, "attribute");
    std::vector<Value> out, seen;
    for (const auto& item : iterate(v)) {
      interpreter.count_steps();
      Value key = fold_case(attribute ? lookup_path(item, *attribute) : item, case_sensitive);
      bool duplicate = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); });
      if (!duplicate) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "select" || name == "reject") return select_items(interpreter, v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_items(interpreter, v, args, true, name == "selectattr");
  if (name == "map") return map_items(interpreter, v, args);
  if (name == "attr") return get_attribute(v, string_argument(args, 0, "name", name));
  if (name == "abs") {
    if (v.is_float()) return Value::number(std::fabs(v.as_double()));
    if (v.is_int() || v.is_bool()) return v.as_int() < 0 ? negate(v) : Value::integer(v.as_int());
    fail("bad operand type for abs(): '", v.type_name(), "'");
  }
  if (name == "int") return to_int(v, args);
  if (name == "float") return to_float(v, args);
  if (name == "round") return do_round(v, args);
  if (name == "sum") {
    const Value* attribute = find_argument(args, 0, "attribute");
    Value total = argument_or(args, 1, "start", Value::integer(0));
    for (const auto& item : iterate(v))
      total = binary_operation("+", total, attribute && !attribute->is_none() ? lookup_path(item, *attribute) : item, kMaxBuiltBytes);
    return total;
  }
  if (name == "min" || name == "max") return min_max(v, args, name == "max");
  if (name == "wordcount") {
    int64_t words = 0;
    bool in_word = false;
    for (char32_t c : decode_utf8(str_of(v))) {
      bool word_char = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                       (c >= 0x80 && !is_python_space(c));
      if (word_char && !in_word) ++words;
      in_word = word_char;
    }
    return Value::integer(words);
  }
  if (name == "format") {  // "%s - %s"|format(a, b) is "%s - %s" % (a, b)
    if (!v.is_string()) fail("format filter needs a format string, not ", v.type_name());
    return binary_operation("%", v, Value::tuple(args.positional), kMaxBuiltBytes);
  }
  if (name == "center") {
    std::string s = str_of(v);
    int64_t width = std::min<int64_t>(int_argument(args, 0, "width", 80, name), 1 << 20);
    int64_t len = static_cast<int64_t>(code_point_count(s));
    if (width <= len) return Value::string(s);
    int64_t pad = width - len;
    int64_t left = pad / 2 + (pad & width & 1);  // Python's centring rule
    return Value::string(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
  }
  fail("no filter named '", name, "'");
}

}  // namespace rayo::jinja
