#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "jinja/python_text.h"

namespace rayo::jinja {

Value Value::undefined(std::string reason) {
  Value v;
  if (!reason.empty()) v.string_ = std::make_shared<const std::string>(std::move(reason));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.scalar_.b = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.scalar_.i = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.scalar_.f = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.string_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

static std::shared_ptr<const ListData> make_list(std::vector<Value> items, bool tuple) {
  auto data = std::make_shared<ListData>();
  for (const auto& item : items) {
    data->depth = std::max(data->depth, item.depth() + 1);
    data->holds_namespace = data->holds_namespace || item.holds_namespace();
  }
  if (data->depth > kMaxValueDepth) fail("value nested more than ", kMaxValueDepth, " levels deep");
  data->items = std::move(items);
  data->is_tuple = tuple;
  return data;
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = make_list(std::move(items), false);
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = make_list(std::move(items), true);
  return v;
}

uint32_t Value::depth() const {
  if (kind_ == Kind::List) return list_->depth;
  if (kind_ == Kind::Dict) return dict_->depth;
  return 0;
}

bool Value::holds_namespace() const {
  if (kind_ == Kind::List) return list_->holds_namespace;
  if (kind_ == Kind::Dict) return dict_->holds_namespace;
  return false;
}

Value Value::dict(std::shared_ptr<DictData> d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::move(d);
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::Function;
  v.function_ = std::make_shared<const Function>(Function{std::move(name), std::move(fn)});
  return v;
}

const std::string& Value::undefined_reason() const {
  static const std::string generic = "value is undefined";
  return string_ ? *string_ : generic;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return scalar_.b;
    case Kind::Int:
      return scalar_.i != 0;
    case Kind::Float:
      return scalar_.f != 0.0;
    case Kind::String:
      return !string_->empty();
    case Kind::List:
      return !list_->items.empty();
    case Kind::Dict:
      return dict_->flavor != DictFlavor::Plain || dict_->size() != 0;
    case Kind::Function:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return list_->is_tuple ? "tuple" : "list";
    case Kind::Dict:
      return dict_->flavor == DictFlavor::Namespace ? "Namespace"
             : dict_->flavor == DictFlavor::Loop    ? "LoopContext"
                                                    : "dict";
    case Kind::Function: return "function";
  }
  return "object";
}

std::string hash_key(const Value& key) {
  switch (key.kind()) {
    case Kind::None:
      return "n";
    case Kind::Bool:
    case Kind::Int:
      return cat("i", key.as_int());
    case Kind::Float: {
      double f = key.as_double();
      // Python: equal numbers hash alike, so 1.0 finds the key 1.
      if (std::floor(f) == f && std::fabs(f) < 9.2e18) return cat("i", static_cast<int64_t>(f));
      return cat("f", python_float_repr(f));
    }
    case Kind::String:
      return cat("s", key.as_string());
    case Kind::List:
      if (key.as_list().is_tuple) {
        std::string k = "t(";
        for (const auto& item : key.items()) k += hash_key(item) + ",";
        return k + ")";
      }
      break;
    default:
      break;
  }
  fail("unhashable type: '", key.type_name(), "'");
}

const Value* DictData::find(const Value& key) const {
  auto it = index_.find(hash_key(key));
  return it == index_.end() ? nullptr : &entries[it->second].second;
}

const Value* DictData::find(std::string_view key) const {
  auto it = index_.find(cat("s", key));
  return it == index_.end() ? nullptr : &entries[it->second].second;
}

void DictData::set(const Value& key, Value value) {
  uint32_t child_depth = std::max(key.depth(), value.depth()) + 1;
  if (child_depth > kMaxValueDepth) fail("value nested more than ", kMaxValueDepth, " levels deep");
  depth = std::max(depth, child_depth);
  holds_namespace = holds_namespace || value.holds_namespace();
  auto [it, inserted] = index_.emplace(hash_key(key), entries.size());
  if (inserted)
    entries.emplace_back(key, std::move(value));
  else
    entries[it->second].second = std::move(value);
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.as_string() == b.as_string();
    case Kind::List: {
      if (a.as_list().is_tuple != b.as_list().is_tuple) return false;
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case Kind::Dict: {
      if (a.dict_ptr() == b.dict_ptr()) return true;
      const DictData& x = a.as_dict();
      const DictData& y = b.as_dict();
      if (x.flavor != DictFlavor::Plain || y.flavor != DictFlavor::Plain) return false;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case Kind::Function:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

bool value_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return value_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

static void append_repr(std::string& out, const Value& v);

static void append_dict_body(std::string& out, const DictData& d) {
  out += "{";
  bool first = true;
  for (const auto& [k, v] : d.entries) {
    if (!first) out += ", ";
    first = false;
    append_repr(out, k);
    out += ": ";
    append_repr(out, v);
  }
  out += "}";
}

static void append_str(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return;
    case Kind::None:
      out += "None";
      return;
    case Kind::Bool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::Int:
      out += std::to_string(v.as_int());
      return;
    case Kind::Float:
      out += python_float_repr(v.as_double());
      return;
    case Kind::String:
      out += v.as_string();
      return;
    case Kind::List: {
      bool tuple = v.as_list().is_tuple;
      out += tuple ? "(" : "[";
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        append_repr(out, items[i]);
      }
      if (tuple && items.size() == 1) out += ",";
      out += tuple ? ")" : "]";
      return;
    }
    case Kind::Dict: {
      const DictData& d = v.as_dict();
      if (d.flavor == DictFlavor::Namespace) {
        out += "<Namespace ";
        append_dict_body(out, d);
        out += ">";
      } else if (d.flavor == DictFlavor::Loop) {
        out += "<LoopContext>";
      } else {
        append_dict_body(out, d);
      }
      return;
    }
    case Kind::Function:
      out += "<function " + v.as_function().name + ">";
      return;
  }
}

static void append_repr(std::string& out, const Value& v) {
  if (v.is_string())
    out += python_string_repr(v.as_string());
  else if (v.is_undefined())
    out += "Undefined";
  else
    append_str(out, v);
}

std::string to_python_str(const Value& v) {
  if (v.is_string()) return v.as_string();
  std::string out;
  append_str(out, v);
  return out;
}

std::string to_python_repr(const Value& v) {
  std::string out;
  append_repr(out, v);
  return out;
}

}  // namespace rayo::jinja
