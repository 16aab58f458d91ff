#pragma once
// Renders a parsed template: walks the statements, evaluates expressions with
// Python/jinja2 semantics, and enforces the limits that keep any template, even
// a hostile one, from running away (output size, work done, call depth).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace rayo::jinja {

struct RenderLimits {
  size_t max_output_bytes = 16u << 20;     // also the longest string a template may build
  uint64_t max_steps = 10'000'000;         // loop iterations, macro calls and items built
  uint64_t max_bytes_built = 1ull << 30;   // total bytes of strings produced while rendering
  int max_call_depth = 64;                 // nested macro calls
  int max_eval_depth = 1000;               // nested statements + expressions, across calls (bounds stack use)
};

// A frame of variables. Loops and macro calls push one; `if` does not, so an
// assignment inside an if is seen after it, while one inside a loop body is
// not (as in jinja2).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;

  explicit Scope(std::shared_ptr<Scope> p = nullptr) : parent(std::move(p)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { vars[name] = std::move(v); }
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}

  // Renders `body` with `globals` as the outermost scope. Errors are
  // rayo::Error with "line N: " in front.
  std::string render(const Body& body, std::shared_ptr<Scope> globals);

  // For builtins that call back into the template (map, select, sort, ...).
  Value call(const Value& callee, CallArgs& args);
  Value filter(const std::string& name, const Value& subject, CallArgs& args);
  bool test(const std::string& name, const Value& subject, CallArgs& args);

  // Work accounting: every loop iteration, call and built item is a step, every
  // built string is charged by size; exceeding a limit fails the render.
  void count_steps(uint64_t n = 1);
  void charge_bytes(size_t n);
  const RenderLimits& limits() const { return limits_; }

 private:
  enum class Flow { Normal, Break, Continue };
  struct DepthGuard;

  RenderLimits limits_;
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  uint64_t bytes_built_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  int line_ = 0;  // of the statement or expression being evaluated, for errors

  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void define_macro(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_call_block(const Stmt& s, const std::shared_ptr<Scope>& scope);
  std::string capture(const Body& body, const std::shared_ptr<Scope>& scope);
  void emit(std::string_view text);

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_filter(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* block_subject);
  Value eval_compare(const Expr& e, const std::shared_ptr<Scope>& scope);
  CallArgs eval_arguments(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope);
  Value call_macro(const Stmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args);
};

}  // namespace rayo::jinja
