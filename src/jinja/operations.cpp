#include "jinja/operations.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <limits>

#include "common/error.h"
#include "jinja/methods.h"
#include "jinja/python_text.h"

namespace rayo::jinja {

void fail_undefined(const Value& v) { fail(v.undefined_reason()); }

std::string object_description(const Value& v) {
  if (v.is_none()) return "None";
  return v.type_name() + " object";
}

static int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("integer overflow");
  return r;
}

static int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) fail("integer overflow");
  return r;
}

static int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("integer overflow");
  return r;
}

static int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) fail("integer division or modulo by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) fail("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

static int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) fail("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

static Value repeat(const Value& seq, int64_t times, size_t max_items) {
  if (times <= 0) return seq.is_string() ? Value::string("") : Value::list({});
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(times) > max_items / s.size()) fail("string repetition result is too large");
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.items();
  if (!items.empty() && static_cast<uint64_t>(times) > max_items / items.size()) fail("list repetition result is too large");
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.as_list().is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// Python's printf-style "text %s" % args for the conversions templates use:
// %s %r %d %i %f %x %%, with the flags '-' and '0', a width and a precision.
static Value percent_format(const std::string& format, const Value& args, size_t max_bytes) {
  std::vector<Value> values = args.is_list() && args.as_list().is_tuple ? args.items() : std::vector<Value>{args};
  size_t next = 0;
  std::string out;
  auto read_number = [&](size_t& j) {
    int n = 0;
    for (; j < format.size() && format[j] >= '0' && format[j] <= '9'; ++j) n = std::min(n * 10 + (format[j] - '0'), 4096);
    return n;
  };
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    size_t j = i + 1;
    bool left = false, zero = false;
    for (; j < format.size() && (format[j] == '-' || format[j] == '0'); ++j) (format[j] == '-' ? left : zero) = true;
    int width = read_number(j);
    int precision = -1;
    if (j < format.size() && format[j] == '.') {
      ++j;
      precision = read_number(j);
    }
    if (j >= format.size()) fail("incomplete format");
    char conversion = format[j];
    i = j;
    if (conversion == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= values.size()) fail("not enough arguments for format string");
    const Value& v = values[next++];
    std::string field;
    bool numeric = false;
    switch (conversion) {
      case 's':
        field = to_python_str(v);
        if (precision >= 0 && static_cast<size_t>(precision) < field.size()) field.resize(static_cast<size_t>(precision));
        break;
      case 'r':
        field = to_python_repr(v);
        break;
      case 'd':
      case 'i':
      case 'x':
      case 'f': {
        if (!v.is_number()) fail("%", conversion, " format: a real number is required, not ", v.type_name());
        char buf[512];
        if (conversion == 'f')
          std::snprintf(buf, sizeof buf, "%.*f", precision < 0 ? 6 : std::min(precision, 100), v.as_double());
        else
          std::snprintf(buf, sizeof buf, conversion == 'x' ? "%llx" : "%lld",
                        static_cast<long long>(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int()));
        field = buf;
        numeric = true;
        break;
      }
      default:
        fail("unsupported format character '", conversion, "'");
    }
    size_t w = static_cast<size_t>(width);
    if (field.size() < w) {
      size_t pad = w - field.size();
      if (left)
        field.append(pad, ' ');
      else if (zero && numeric)
        field.insert(field[0] == '-' ? 1 : 0, pad, '0');
      else
        field.insert(0, pad, ' ');
    }
    out += field;
    if (out.size() > max_bytes) fail("string result is too large");
  }
  if (next < values.size()) fail("not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

[[noreturn]] static void unsupported(std::string_view op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

Value binary_operation(std::string_view op, const Value& a, const Value& b, size_t max_items) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    bool ints = !a.is_float() && !b.is_float();
    if (op == "/") {
      if (b.as_double() == 0.0) fail("division by zero");
      return Value::number(a.as_double() / b.as_double());
    }
    if (ints) {
      int64_t x = a.as_int(), y = b.as_int();
      if (op == "+") return Value::integer(checked_add(x, y));
      if (op == "-") return Value::integer(checked_sub(x, y));
      if (op == "*") return Value::integer(checked_mul(x, y));
      if (op == "//") return Value::integer(floor_div(x, y));
      if (op == "%") return Value::integer(floor_mod(x, y));
      if (op == "**") {
        if (y < 0) return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
        int64_t result = 1;
        for (int64_t base = x; y > 0; y >>= 1) {
          if (y & 1) result = checked_mul(result, base);
          if (y > 1) base = checked_mul(base, base);
        }
        return Value::integer(result);
      }
    } else {
      double x = a.as_double(), y = b.as_double();
      if (op == "+") return Value::number(x + y);
      if (op == "-") return Value::number(x - y);
      if (op == "*") return Value::number(x * y);
      if (op == "//") {
        if (y == 0.0) fail("float floor division by zero");
        return Value::number(std::floor(x / y));
      }
      if (op == "%") {
        if (y == 0.0) fail("float modulo");
        double r = std::fmod(x, y);
        if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
        return Value::number(r);
      }
      if (op == "**") return Value::number(std::pow(x, y));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > max_items) fail("string result is too large");
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
      if (a.items().size() + b.items().size() > max_items) fail("list result is too large");
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.as_list().is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.is_string()) fail("can only concatenate str (not \"", b.type_name(), "\") to str");
    if (a.is_list()) fail("can only concatenate ", a.type_name(), " (not \"", b.type_name(), "\") to ", a.type_name());
  }
  if (op == "%" && a.is_string()) return percent_format(a.as_string(), b, max_items);
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), max_items);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), max_items);
  }
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value::number(-v.as_double());
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
    return Value::integer(-v.as_int());
  }
  fail("bad operand type for unary -: '", v.type_name(), "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::Undefined:
      return false;  // jinja2's Undefined iterates as empty
    case Kind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not ", item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::List:
      for (const auto& x : container.items())
        if (values_equal(x, item)) return true;
      return false;
    case Kind::Dict:
      if (container.as_dict().flavor != DictFlavor::Plain) break;
      return container.as_dict().find(item) != nullptr;
    default:
      break;
  }
  fail("argument of type '", container.type_name(), "' is not iterable");
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return {};
    case Kind::List:
      return v.items();
    case Kind::Dict: {
      if (v.as_dict().flavor != DictFlavor::Plain) break;
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& [k, _] : v.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      for (char32_t c : decode_utf8(v.as_string())) {
        std::string s;
        append_utf8(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      return chars;
    }
    default:
      break;
  }
  fail("'", v.type_name(), "' object is not iterable");
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined: return 0;
    case Kind::String: return static_cast<int64_t>(code_point_count(v.as_string()));
    case Kind::List: return static_cast<int64_t>(v.items().size());
    case Kind::Dict: return static_cast<int64_t>(v.as_dict().size());
    default: fail("object of type '", v.type_name(), "' has no len()");
  }
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    const DictData& d = obj.as_dict();
    if (d.flavor == DictFlavor::Plain) {
      if (auto method = bound_method(obj, name)) return *method;
    }
    if (const Value* v = d.find(name)) return *v;
  } else if (auto method = bound_method(obj, name)) {
    return *method;
  }
  return Value::undefined(cat("'", object_description(obj), "' has no attribute '", name, "'"));
}

// Python's index normalisation: negative counts from the end; false when out of range.
static bool normalize_index(int64_t& i, size_t size) {
  if (i < 0) i += static_cast<int64_t>(size);
  return i >= 0 && static_cast<uint64_t>(i) < size;
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (key.is_undefined() && !obj.is_dict()) fail_undefined(key);
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      if (normalize_index(i, obj.items().size())) return obj.items()[static_cast<size_t>(i)];
    } else if (is_ascii(obj.as_string())) {
      if (normalize_index(i, obj.as_string().size())) return Value::string(std::string(1, obj.as_string()[static_cast<size_t>(i)]));
    } else {
      std::u32string cps = decode_utf8(obj.as_string());
      if (normalize_index(i, cps.size())) return Value::string(encode_utf8(cps.substr(static_cast<size_t>(i), 1)));
    }
    return Value::undefined(cat(object_description(obj), " has no element ", key.as_int()));
  }
  if (obj.is_dict() && obj.as_dict().flavor == DictFlavor::Plain) {
    if (key.is_undefined()) fail_undefined(key);
    if (const Value* v = obj.as_dict().find(key)) return *v;
  }
  if (key.is_string()) return get_attribute(obj, key.as_string());
  return Value::undefined(cat("'", object_description(obj), "' has no element ", to_python_repr(key)));
}

// Python slice bounds for a sequence of `size` elements.
static void slice_indices(const Value& start, const Value& stop, const Value& step, size_t size, int64_t& b,
                          int64_t& e, int64_t& s) {
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail("slice ", what, " must be an integer or None, not ", v.type_name());
    return v.as_int();
  };
  int64_t n = static_cast<int64_t>(size);
  s = as_index(step, "step").value_or(1);
  if (s == 0) fail("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t missing) {
    if (!v) return missing;
    int64_t x = *v;
    if (x < 0) x += n;
    if (s > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  b = clamp(as_index(start, "start"), s > 0 ? 0 : n - 1);
  e = clamp(as_index(stop, "stop"), s > 0 ? n : -1);
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_list()) {
    const auto& items = obj.items();
    int64_t b, e, s;
    slice_indices(start, stop, step, items.size(), b, e, s);
    std::vector<Value> out;
    // 128-bit index: a huge step must not overflow on its way past the end.
    for (__int128 i = b; s > 0 ? i < e : i > e; i += s) out.push_back(items[static_cast<size_t>(i)]);
    return obj.as_list().is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (obj.is_string()) {
    std::u32string cps = decode_utf8(obj.as_string());
    int64_t b, e, s;
    slice_indices(start, stop, step, cps.size(), b, e, s);
    std::u32string out;
    for (__int128 i = b; s > 0 ? i < e : i > e; i += s) out.push_back(cps[static_cast<size_t>(i)]);
    return Value::string(encode_utf8(out));
  }
  fail("'", obj.type_name(), "' object is not subscriptable");
}

}  // namespace rayo::jinja
