#pragma once
// The values a template computes with, modelled on the Python objects jinja2
// sees when Hugging Face renders a chat template: undefined, None, bool, int,
// float, str, list/tuple, dict (plus namespace() and the loop object, which are
// dicts read through attributes) and callables (macros, builtins, bound methods).
//
// Lists and dicts are shared and, as in the sandbox Hugging Face uses, never
// mutated through the template; only namespace() objects are, by assignment.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rayo::jinja {

class Value;

// Arguments of a call: positional, then name=value pairs in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};

using NativeFunction = std::function<Value(CallArgs&)>;

struct Function {
  std::string name;
  NativeFunction call;
};

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function };

// How a dict is read: a plain dict has Python methods (items, get, ...) that
// attribute access finds first; a namespace or loop object exposes its entries
// as attributes only.
enum class DictFlavor { Plain, Namespace, Loop };

// Containers record how deeply they nest and whether a namespace lies inside:
// nesting is capped (so printing, comparing and freeing cannot exhaust the
// stack) and a namespace may not be stored inside a namespace (so no cycle can
// form).
constexpr uint32_t kMaxValueDepth = 512;
// No builtin builds a string longer than this (renders have tighter limits).
constexpr size_t kMaxBuiltBytes = 256u << 20;

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;
  bool holds_namespace = false;
};

struct DictData;

class Value {
 public:
  Value() = default;  // undefined
  static Value undefined(std::string reason = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(std::shared_ptr<DictData> d);
  static Value function(std::string name, NativeFunction fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  // Python numbers include bool.
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_function() const { return kind_ == Kind::Function; }

  bool as_bool() const { return scalar_.b; }
  int64_t as_int() const { return kind_ == Kind::Bool ? (scalar_.b ? 1 : 0) : scalar_.i; }
  double as_double() const {
    return kind_ == Kind::Float ? scalar_.f : static_cast<double>(as_int());
  }
  const std::string& as_string() const { return *string_; }
  const ListData& as_list() const { return *list_; }
  const std::vector<Value>& items() const { return list_->items; }
  DictData& as_dict() const { return *dict_; }
  const std::shared_ptr<DictData>& dict_ptr() const { return dict_; }
  const Function& as_function() const { return *function_; }
  // Nesting depth (0 for scalars) and whether a namespace object lies within.
  uint32_t depth() const;
  bool holds_namespace() const;
  // Why this value is undefined, as jinja2 words it ("'x' is undefined").
  const std::string& undefined_reason() const;

  // Python truthiness.
  bool truthy() const;
  // Python type name for error messages: 'NoneType', 'str', 'list', ...
  std::string type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  union {
    bool b;
    int64_t i;
    double f;
  } scalar_{};
  std::shared_ptr<const std::string> string_;  // String, or an Undefined's reason
  std::shared_ptr<const ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<const Function> function_;
};

// An insertion-ordered dict with Python key equality (1 == 1.0 == True).
struct DictData {
  explicit DictData(DictFlavor f = DictFlavor::Plain) : flavor(f), holds_namespace(f == DictFlavor::Namespace) {}
  DictFlavor flavor;
  std::vector<std::pair<Value, Value>> entries;  // change only through set()
  uint32_t depth = 1;
  bool holds_namespace;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts or replaces, keeping the first insertion's position.
  void set(const Value& key, Value value);
  size_t size() const { return entries.size(); }

 private:
  std::unordered_map<std::string, size_t> index_;
};

// Python ==, deep for containers.
bool values_equal(const Value& a, const Value& b);
// Python <, ordering numbers, strings and sequences; fails on other pairs.
bool value_less(const Value& a, const Value& b);
// The key a dict stores a value under; fails for unhashable values.
std::string hash_key(const Value& key);

// str(x) as Python prints it (an undefined prints as nothing).
std::string to_python_str(const Value& v);
// repr(x), used for items inside containers.
std::string to_python_repr(const Value& v);

}  // namespace rayo::jinja
