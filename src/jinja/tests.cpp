// Builtin tests: "x is defined", "n is divisibleby 3", "a is equalto b", ...
#include "common/error.h"
#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/operations.h"

namespace rayo::jinja {

static int64_t integer_subject(const Value& v, const std::string& test) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_int() || v.is_bool()) return v.as_int();
  fail("test '", test, "' needs an integer, not ", v.type_name());
}

static bool is_lower_text(const std::string& s, bool upper) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (upper) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (!upper) return false;
      cased = true;
    }
  }
  return cased;
}

bool apply_test(Interpreter& interpreter, const std::string& name, const Value& v, CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && v.as_dict().flavor == DictFlavor::Plain;
  if (name == "iterable" || name == "sequence")
    return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && v.as_dict().flavor == DictFlavor::Plain);
  if (name == "callable") return v.is_function();
  if (name == "escaped") return false;
  if (name == "odd") return integer_subject(v, name) % 2 != 0;
  if (name == "even") return integer_subject(v, name) % 2 == 0;
  if (name == "divisibleby") {
    int64_t n = int_argument(args, 0, "num", 0, name);
    if (n == 0) fail("integer division or modulo by zero");
    int64_t x = integer_subject(v, name);
    return n == -1 || x % n == 0;
  }
  if (name == "lower" || name == "upper") return v.is_string() && is_lower_text(v.as_string(), name == "upper");
  if (name == "sameas") {
    const Value& other = required_argument(args, 0, "other", name);
    if (v.kind() != other.kind()) return false;
    if (v.is_list()) return &v.as_list() == &other.as_list();
    if (v.is_dict()) return v.dict_ptr() == other.dict_ptr();
    return values_equal(v, other);
  }
  if (name == "in") return contains(required_argument(args, 0, "seq", name), v);
  const bool eq = name == "eq" || name == "equalto" || name == "==";
  if (eq || name == "ne" || name == "!=") {
    bool same = values_equal(v, required_argument(args, 0, "other", name));
    return eq ? same : !same;
  }
  const Value* other = nullptr;
  if (name == "lt" || name == "lessthan" || name == "<" || name == "le" || name == "<=" || name == "gt" ||
      name == "greaterthan" || name == ">" || name == "ge" || name == ">=") {
    other = &required_argument(args, 0, "other", name);
    if (v.is_undefined()) fail_undefined(v);
    if (other->is_undefined()) fail_undefined(*other);
    if (name == "lt" || name == "lessthan" || name == "<") return value_less(v, *other);
    if (name == "le" || name == "<=") return !value_less(*other, v);
    if (name == "gt" || name == "greaterthan" || name == ">") return value_less(*other, v);
    return !value_less(v, *other);
  }
  (void)interpreter;
  fail("no test named '", name, "'");
}

}  // namespace rayo::jinja
