// Global functions every template sees: range, namespace, dict, and the two
// Hugging Face adds, raise_exception and strftime_now.
#include "common/error.h"
#include "jinja/arguments.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"

namespace rayo::jinja {

std::tm local_time_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

static Value make_range(Interpreter& interpreter, CallArgs& args) {
  int64_t start = 0, stop, step = 1;
  if (args.positional.size() == 1) {
    stop = int_argument(args, 0, "stop", 0, "range");
  } else if (args.positional.size() == 2 || args.positional.size() == 3) {
    start = int_argument(args, 0, "start", 0, "range");
    stop = int_argument(args, 1, "stop", 0, "range");
    step = int_argument(args, 2, "step", 1, "range");
  } else {
    fail("range expected 1 to 3 integer arguments, got ", args.positional.size());
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  // Count first (in wide arithmetic), so a huge range fails before any allocation.
  __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  __int128 abs_step = step > 0 ? step : -static_cast<__int128>(step);
  __int128 count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  if (count > static_cast<__int128>(interpreter.limits().max_steps)) fail("range of ", static_cast<long long>(std::min<__int128>(count, INT64_MAX)), " items is too large");
  interpreter.count_steps(static_cast<uint64_t>(count));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::integer(start + i * step));
  return Value::list(std::move(items));
}

static Value make_dict(CallArgs& args, DictFlavor flavor) {
  auto d = std::make_shared<DictData>(flavor);
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict()) {
      for (const auto& [k, v] : init.as_dict().entries) d->set(k, v);
    } else if (!init.is_undefined() && !init.is_none()) {
      fail(flavor == DictFlavor::Namespace ? "namespace" : "dict", "() argument must be a mapping");
    }
  }
  for (const auto& [k, v] : args.named) {
    if (flavor == DictFlavor::Namespace && v.holds_namespace()) fail("a namespace cannot hold another namespace");
    d->set(Value::string(k), v);
  }
  return Value::dict(std::move(d));
}

void add_global_functions(Scope& scope, Interpreter& interpreter, Clock clock) {
  scope.set("range", Value::function("range", [&interpreter](CallArgs& args) { return make_range(interpreter, args); }));
  scope.set("namespace", Value::function("namespace", [](CallArgs& args) { return make_dict(args, DictFlavor::Namespace); }));
  scope.set("dict", Value::function("dict", [](CallArgs& args) { return make_dict(args, DictFlavor::Plain); }));
  scope.set("raise_exception", Value::function("raise_exception", [](CallArgs& args) -> Value {
    fail(to_python_str(argument_or(args, 0, "message", Value::string(""))));
  }));
  scope.set("strftime_now", Value::function("strftime_now", [clock](CallArgs& args) {
    std::string format = string_argument(args, 0, "format", "strftime_now");
    std::tm now = clock ? clock() : local_time_now();
    if (format.empty()) return Value::string("");
    // strftime reports 0 both for "too small" and for an empty result; grow the
    // buffer a few times, then accept an empty result.
    for (size_t size = 256; size <= (1u << 20); size *= 8) {
      std::string buf(size, '\0');
      size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &now);
      if (n > 0) {
        buf.resize(n);
        return Value::string(buf);
      }
    }
    return Value::string("");
  }));
}

}  // namespace rayo::jinja
