#include "jinja/json_bridge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "jinja/python_text.h"

namespace rayo::jinja {

static Value from_json_at(const nlohmann::ordered_json& j, uint32_t depth) {
  if (depth > kMaxValueDepth) fail("JSON nested more than ", kMaxValueDepth, " levels deep");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<DictData>();
      for (auto it = j.begin(); it != j.end(); ++it)
        d->set(Value::string(it.key()), from_json_at(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      fail("unsupported JSON value (binary data)");
  }
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

static void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  for (char32_t c : decode_utf8(s)) {
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {  // a surrogate pair, as json.dumps writes it
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      append_utf8(out, c);
    }
  }
  out.push_back('"');
}

static std::string json_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f < 0 ? "-Infinity" : "Infinity";
  return python_float_repr(f);
}

// A dict key as json.dumps converts it: strings as is, numbers, bools and None
// to their JSON spelling.
static std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Kind::String: return k.as_string();
    case Kind::Int: return std::to_string(k.as_int());
    case Kind::Bool: return k.as_bool() ? "true" : "false";
    case Kind::None: return "null";
    case Kind::Float: return json_float(k.as_double());
    default: fail("keys must be str, int, float, bool or None, not ", k.type_name());
  }
}

namespace {
struct JsonWriter {
  const JsonDumpOptions& options;
  std::string out;
  int level = 0;

  void newline() {
    if (!options.indent) return;
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *options.indent;
  }

  std::string item_separator() const {
    // json.dumps: with an indent, the default item separator loses its space.
    if (options.indent && options.item_separator == ", ") return ",";
    return options.item_separator;
  }

  void write(const Value& v) {
    switch (v.kind()) {
      case Kind::None: out += "null"; return;
      case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Kind::Int: out += std::to_string(v.as_int()); return;
      case Kind::Float: out += json_float(v.as_double()); return;
      case Kind::String: append_json_string(out, v.as_string(), options.ensure_ascii); return;
      case Kind::List: {
        const auto& items = v.items();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        ++level;
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_separator();
          newline();
          write(items[i]);
        }
        --level;
        newline();
        out.push_back(']');
        return;
      }
      case Kind::Dict: {
        const DictData& d = v.as_dict();
        if (d.flavor != DictFlavor::Plain) break;
        if (d.entries.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [k, val] : d.entries) entries.emplace_back(json_key(k), &val);
        if (options.sort_keys)
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        out.push_back('{');
        ++level;
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) out += item_separator();
          newline();
          append_json_string(out, entries[i].first, options.ensure_ascii);
          out += options.key_separator;
          write(*entries[i].second);
        }
        --level;
        newline();
        out.push_back('}');
        return;
      }
      default:
        break;
    }
    fail("Object of type ", v.type_name(), " is not JSON serializable");
  }
};
}  // namespace

std::string to_json_text(const Value& v, const JsonDumpOptions& options) {
  JsonWriter writer{options, {}, 0};
  writer.write(v);
  return std::move(writer.out);
}

}  // namespace rayo::jinja
