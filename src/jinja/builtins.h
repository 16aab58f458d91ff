#pragma once
// The builtin filters ("x | trim"), tests ("x is defined") and global functions
// (range, namespace, raise_exception, strftime_now, ...) of the template
// language, as jinja2 defines them and Hugging Face configures them.
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include "jinja/value.h"

namespace rayo::jinja {

class Interpreter;
struct Scope;

// Fails with "no filter named ..." for an unknown name.
Value apply_filter(Interpreter& interpreter, const std::string& name, const Value& subject, CallArgs& args);
// Fails with "no test named ..." for an unknown name.
bool apply_test(Interpreter& interpreter, const std::string& name, const Value& subject, CallArgs& args);

// The wall clock strftime_now reads; injectable so renders are reproducible.
using Clock = std::function<std::tm()>;
std::tm local_time_now();

// Adds range, namespace, dict, raise_exception and strftime_now to `scope`.
void add_global_functions(Scope& scope, Interpreter& interpreter, Clock clock);

}  // namespace rayo::jinja
