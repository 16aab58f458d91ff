#include "jinja/interpreter.h"

#include "common/error.h"
#include "jinja/builtins.h"
#include "jinja/operations.h"

namespace rayo::jinja {

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

namespace {
// Marks an error that already carries its line, so outer statements keep it.
struct LocatedError : Error {
  using Error::Error;
};
}  // namespace

// Counts how deeply statements and expressions are being evaluated, across
// macro calls, so that no template can recurse the evaluator off the stack.
struct Interpreter::DepthGuard {
  Interpreter& in;
  explicit DepthGuard(Interpreter& interpreter) : in(interpreter) {
    if (++in.eval_depth_ > in.limits_.max_eval_depth) {
      --in.eval_depth_;
      fail("template evaluation nested more than ", in.limits_.max_eval_depth, " levels deep");
    }
  }
  ~DepthGuard() { --in.eval_depth_; }
};

std::string Interpreter::render(const Body& body, std::shared_ptr<Scope> globals) {
  std::string out;
  out_ = &out;
  steps_ = 0;
  bytes_built_ = 0;
  call_depth_ = 0;
  eval_depth_ = 0;
  line_ = 1;
  try {
    exec_body(body, globals);
  } catch (const LocatedError& e) {
    throw Error(e.what());
  } catch (const Error& e) {
    throw Error(cat("line ", line_, ": ", e.what()));
  }
  out_ = nullptr;
  return out;
}

void Interpreter::count_steps(uint64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps) fail("template did more than ", limits_.max_steps, " steps of work (runaway loop?)");
}

void Interpreter::charge_bytes(size_t n) {
  if (n > limits_.max_output_bytes) fail("template built a string longer than ", limits_.max_output_bytes, " bytes");
  bytes_built_ += n;
  if (bytes_built_ > limits_.max_bytes_built)
    fail("template built more than ", limits_.max_bytes_built, " bytes of text (runaway loop?)");
}

void Interpreter::emit(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes)
    fail("template output exceeds ", limits_.max_output_bytes, " bytes");
  out_->append(text);
}

std::string Interpreter::capture(const Body& body, const std::shared_ptr<Scope>& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  charge_bytes(buffer.size());
  return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const auto& s : body) {
    Flow flow = exec(*s, scope);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  DepthGuard guard(*this);
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::Text:
      emit(s.text);
      return Flow::Normal;
    case StmtKind::Output: {
      Value v = eval(*s.expr, scope);
      if (v.is_string()) {
        emit(v.as_string());
      } else {
        std::string text = to_python_str(v);
        charge_bytes(text.size());
        emit(text);
      }
      return Flow::Normal;
    }
    case StmtKind::If:
      for (size_t i = 0; i < s.conditions.size(); ++i) {
        if (eval(*s.conditions[i], scope).truthy()) return exec_body(s.bodies[i], scope);
      }
      if (s.bodies.size() > s.conditions.size()) return exec_body(s.bodies.back(), scope);
      return Flow::Normal;
    case StmtKind::For:
      return exec_for(s, scope);
    case StmtKind::Set:
      exec_set(s, scope);
      return Flow::Normal;
    case StmtKind::SetBlock: {
      Value captured = Value::string(capture(s.bodies[0], scope));
      if (s.expr) captured = eval_filter(*s.expr, scope, &captured);
      line_ = s.line;
      scope->set(s.targets[0], captured);
      return Flow::Normal;
    }
    case StmtKind::Macro:
      define_macro(s, scope);
      return Flow::Normal;
    case StmtKind::CallBlock:
      exec_call_block(s, scope);
      return Flow::Normal;
    case StmtKind::FilterBlock: {
      Value captured = Value::string(capture(s.bodies[0], scope));
      Value result = eval_filter(*s.expr, scope, &captured);
      emit(to_python_str(result));
      return Flow::Normal;
    }
    case StmtKind::Break:
      return Flow::Break;
    case StmtKind::Continue:
      return Flow::Continue;
    case StmtKind::Scope:
      return exec_body(s.bodies[0], scope);
  }
  return Flow::Normal;
}

// Binds loop targets: one name takes the item, several unpack it.
static void bind_targets(Scope& scope, const std::vector<std::string>& targets, const Value& item) {
  if (targets.size() == 1) {
    scope.set(targets[0], item);
    return;
  }
  std::vector<Value> parts = iterate(item);
  if (parts.size() != targets.size())
    fail(parts.size() < targets.size() ? "not enough" : "too many", " values to unpack (expected ", targets.size(),
         ", got ", parts.size(), ")");
  for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], parts[i]);
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  Value iterable = eval(*s.expr, scope);
  std::vector<Value> items = iterate(iterable);
  if (s.condition) {  // "for x in xs if cond": the loop sees only the items that pass
    std::vector<Value> kept;
    for (auto& item : items) {
      count_steps();
      auto probe = std::make_shared<Scope>(scope);
      bind_targets(*probe, s.targets, item);
      if (eval(*s.condition, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.bodies.size() > 1) return exec_body(s.bodies[1], std::make_shared<Scope>(scope));
    return Flow::Normal;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    count_steps();
    auto iteration = std::make_shared<Scope>(scope);
    bind_targets(*iteration, s.targets, items[static_cast<size_t>(i)]);
    auto loop = std::make_shared<DictData>(DictFlavor::Loop);
    loop->set(Value::string("index"), Value::integer(i + 1));
    loop->set(Value::string("index0"), Value::integer(i));
    loop->set(Value::string("revindex"), Value::integer(n - i));
    loop->set(Value::string("revindex0"), Value::integer(n - i - 1));
    loop->set(Value::string("first"), Value::boolean(i == 0));
    loop->set(Value::string("last"), Value::boolean(i == n - 1));
    loop->set(Value::string("length"), Value::integer(n));
    loop->set(Value::string("depth"), Value::integer(1));
    loop->set(Value::string("depth0"), Value::integer(0));
    if (i > 0) loop->set(Value::string("previtem"), items[static_cast<size_t>(i - 1)]);
    if (i + 1 < n) loop->set(Value::string("nextitem"), items[static_cast<size_t>(i + 1)]);
    loop->set(Value::string("cycle"), Value::function("cycle", [i](CallArgs& args) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    }));
    iteration->set("loop", Value::dict(std::move(loop)));
    Flow flow = exec_body(s.bodies[0], iteration);
    if (flow == Flow::Break) break;
  }
  return Flow::Normal;
}

void Interpreter::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  Value v = eval(*s.expr, scope);
  line_ = s.line;
  if (!s.attribute.empty()) {
    const Value* target = scope->lookup(s.targets[0]);
    if (!target || !target->is_dict() || target->as_dict().flavor != DictFlavor::Namespace)
      fail("cannot assign attribute on non-namespace object '", s.targets[0], "'");
    if (v.holds_namespace()) fail("a namespace cannot hold another namespace");
    target->as_dict().set(Value::string(s.attribute), std::move(v));
    return;
  }
  bind_targets(*scope, s.targets, v);
}

void Interpreter::define_macro(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  // The macro holds its defining scope weakly: the scope holds the macro, and a
  // strong reference both ways would never be freed.
  std::weak_ptr<Scope> closure = scope;
  const Stmt* macro = &s;
  scope->set(s.text, Value::function(s.text, [this, macro, closure](CallArgs& args) {
    auto defining = closure.lock();
    if (!defining) fail("macro '", macro->text, "' called after its scope ended");
    return call_macro(*macro, defining, args);
  }));
}

Value Interpreter::call_macro(const Stmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args) {
  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    fail("macro calls nested more than ", limits_.max_call_depth, " deep (runaway recursion?)");
  }
  count_steps();
  struct DepthRestore {
    int& depth;
    int saved_line;
    int& line;
    ~DepthRestore() {
      --depth;
      line = saved_line;
    }
  } restore{call_depth_, line_, line_};

  auto frame = std::make_shared<Scope>(closure);
  std::vector<bool> bound(macro.params.size(), false);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < macro.params.size()) {
      frame->set(macro.params[i].name, args.positional[i]);
      bound[i] = true;
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  auto kwargs = std::make_shared<DictData>();
  for (auto& [name, value] : args.named) {
    if (name == "caller") {
      frame->set("caller", value);
      continue;
    }
    bool matched = false;
    for (size_t i = 0; i < macro.params.size(); ++i) {
      if (macro.params[i].name == name) {
        if (bound[i]) fail("macro '", macro.text, "' got multiple values for argument '", name, "'");
        frame->set(name, value);
        bound[i] = matched = true;
      }
    }
    if (!matched) kwargs->set(Value::string(name), value);
  }
  for (size_t i = 0; i < macro.params.size(); ++i) {
    if (bound[i]) continue;
    const MacroParam& p = macro.params[i];
    frame->set(p.name, p.default_value ? eval(*p.default_value, frame)
                                       : Value::undefined(cat("parameter '", p.name, "' was not provided")));
  }
  frame->set("varargs", Value::list(std::move(varargs)));
  frame->set("kwargs", Value::dict(std::move(kwargs)));
  try {
    return Value::string(capture(macro.bodies[0], frame));
  } catch (const LocatedError&) {
    throw;
  } catch (const Error& e) {
    // Name the line inside the macro; the caller's line is restored on return.
    throw LocatedError(cat("line ", line_, ": ", e.what()));
  }
}

void Interpreter::exec_call_block(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  // caller() renders the block's body like a macro whose parameters are the
  // block's own: {% call(item) list_of(items) %}...{{ item }}...{% endcall %}.
  std::weak_ptr<Scope> closure = scope;
  const Stmt* block = &s;
  Value caller = Value::function("caller", [this, block, closure](CallArgs& args) {
    auto defining = closure.lock();
    if (!defining) fail("caller() used after its call block ended");
    return call_macro(*block, defining, args);
  });
  const Expr& call = *s.expr;
  Value callee = eval(*call.args[0], scope);
  CallArgs args = eval_arguments(call, 1, scope);
  args.named.emplace_back("caller", caller);
  line_ = s.line;
  Value result = this->call(callee, args);
  emit(to_python_str(result));
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (!callee.is_function()) fail("'", callee.type_name(), "' object is not callable");
  Value result = callee.as_function().call(args);
  if (result.is_string()) charge_bytes(result.as_string().size());
  return result;
}

Value Interpreter::filter(const std::string& name, const Value& subject, CallArgs& args) {
  Value result = apply_filter(*this, name, subject, args);
  if (result.is_string()) charge_bytes(result.as_string().size());
  return result;
}

bool Interpreter::test(const std::string& name, const Value& subject, CallArgs& args) {
  return apply_test(*this, name, subject, args);
}

CallArgs Interpreter::eval_arguments(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], scope));
  for (const auto& [name, expr] : e.kwargs) args.named.emplace_back(name, eval(*expr, scope));
  return args;
}

Value Interpreter::eval_filter(const Expr& e, const std::shared_ptr<Scope>& scope, const Value* block_subject) {
  Value subject;
  if (e.args[0])
    subject = e.args[0]->kind == ExprKind::Filter ? eval_filter(*e.args[0], scope, block_subject) : eval(*e.args[0], scope);
  else if (block_subject)
    subject = *block_subject;
  CallArgs args = eval_arguments(e, 1, scope);
  line_ = e.line;
  return filter(e.name, subject, args);
}

Value Interpreter::eval_compare(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value left = eval(*e.args[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i + 1], scope);
    line_ = e.line;
    const std::string& op = e.ops[i];
    bool result;
    if (op == "==") {
      result = values_equal(left, right);
    } else if (op == "!=") {
      result = !values_equal(left, right);
    } else if (op == "in" || op == "not in") {
      result = contains(right, left) == (op == "in");
    } else {
      if (left.is_undefined()) fail_undefined(left);
      if (right.is_undefined()) fail_undefined(right);
      if (op == "<")
        result = value_less(left, right);
      else if (op == ">")
        result = value_less(right, left);
      else if (op == "<=")
        result = !value_less(right, left);
      else
        result = !value_less(left, right);
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  DepthGuard guard(*this);
  switch (e.kind) {
    case ExprKind::Literal:
      return e.value;
    case ExprKind::Name: {
      if (const Value* v = scope->lookup(e.name)) return *v;
      return Value::undefined(cat("'", e.name, "' is undefined"));
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      for (const auto& a : e.args) items.push_back(eval(*a, scope));
      count_steps(items.size());
      return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
      auto d = std::make_shared<DictData>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value key = eval(*e.args[i], scope);
        Value value = eval(*e.args[i + 1], scope);
        line_ = e.line;
        d->set(key, std::move(value));
      }
      count_steps(d->size());
      return Value::dict(std::move(d));
    }
    case ExprKind::Unary: {
      Value v = eval(*e.args[0], scope);
      line_ = e.line;
      if (e.name == "not") return Value::boolean(!v.truthy());
      if (e.name == "-") return negate(v);
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) fail("bad operand type for unary +: '", v.type_name(), "'");
      return v.is_bool() ? Value::integer(v.as_int()) : v;
    }
    case ExprKind::Binary: {
      Value left = eval(*e.args[0], scope);
      if (e.name == "and") return left.truthy() ? eval(*e.args[1], scope) : left;
      if (e.name == "or") return left.truthy() ? left : eval(*e.args[1], scope);
      Value right = eval(*e.args[1], scope);
      line_ = e.line;
      Value result = binary_operation(e.name, left, right, limits_.max_output_bytes);
      if (result.is_string()) charge_bytes(result.as_string().size());
      if (result.is_list()) count_steps(result.items().size());
      return result;
    }
    case ExprKind::Concat: {
      std::string out;
      for (const auto& a : e.args) {
        Value v = eval(*a, scope);
        out += to_python_str(v);
        if (out.size() > limits_.max_output_bytes) {
          line_ = e.line;
          charge_bytes(out.size());
        }
      }
      line_ = e.line;
      charge_bytes(out.size());
      return Value::string(std::move(out));
    }
    case ExprKind::Compare:
      return eval_compare(e, scope);
    case ExprKind::Condition:
      if (eval(*e.args[0], scope).truthy()) return eval(*e.args[1], scope);
      if (e.args.size() > 2) return eval(*e.args[2], scope);
      return Value::undefined("the inline if expression evaluated to false and has no else section");
    case ExprKind::GetAttr: {
      Value obj = eval(*e.args[0], scope);
      line_ = e.line;
      return get_attribute(obj, e.name);
    }
    case ExprKind::GetItem: {
      Value obj = eval(*e.args[0], scope);
      Value key = eval(*e.args[1], scope);
      line_ = e.line;
      return get_item(obj, key);
    }
    case ExprKind::Slice: {
      Value obj = eval(*e.args[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i)
        if (e.args[i + 1]) parts[i] = eval(*e.args[i + 1], scope);
      line_ = e.line;
      Value result = slice(obj, parts[0], parts[1], parts[2]);
      if (result.is_list()) count_steps(result.items().size());
      return result;
    }
    case ExprKind::Call: {
      Value callee = eval(*e.args[0], scope);
      CallArgs args = eval_arguments(e, 1, scope);
      line_ = e.line;
      return call(callee, args);
    }
    case ExprKind::Filter:
      return eval_filter(e, scope, nullptr);
    case ExprKind::Test: {
      Value subject = eval(*e.args[0], scope);
      CallArgs args = eval_arguments(e, 1, scope);
      line_ = e.line;
      return Value::boolean(test(e.name, subject, args) != e.negated);
    }
  }
  return Value();
}

}  // namespace rayo::jinja
