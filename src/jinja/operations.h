#pragma once
// Python's operators and protocols on template values, as jinja2 applies them:
// arithmetic, membership, iteration, length, and jinja2's forgiving attribute
// and item lookup (a missing attribute or element yields an undefined value
// that only fails when used).
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace rayo::jinja {

// Throws the error a use of an undefined value raises in jinja2.
[[noreturn]] void fail_undefined(const Value& v);

// + - * / // % ** on numbers, strings and lists. Results longer than max_items
// (bytes or elements) are refused.
Value binary_operation(std::string_view op, const Value& a, const Value& b, size_t max_items);
Value negate(const Value& v);

// `item in container`.
bool contains(const Value& container, const Value& item);

// The elements `for x in v` visits: list items, dict keys, string code points;
// nothing for an undefined value. Fails like Python on anything else.
std::vector<Value> iterate(const Value& v);
// len(v); fails on values without a length.
int64_t length_of(const Value& v);

// obj.name and obj[key] with jinja2's fallbacks between the two.
Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step]; missing parts are undefined values.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// "dict object", "list object", "None": how jinja2 names a value's type in messages.
std::string object_description(const Value& v);

}  // namespace rayo::jinja
