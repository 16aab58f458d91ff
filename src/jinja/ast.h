#pragma once
// The syntax tree the parser builds and the interpreter walks. Nodes are plain
// tagged structs: one kind field, the operands the kind needs, and the source
// line for error messages.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace rayo::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  Literal,    // value
  Name,       // name
  List,       // args
  Tuple,      // args
  Dict,       // args: key, value, key, value, ...
  Unary,      // op ("not", "-", "+"), args[0]
  Binary,     // op (+ - * / // % ** and or), args[0..1]
  Concat,     // ~ over args
  Compare,    // args[0] ops[0] args[1] ops[1] args[2] ... (chained like Python)
  Condition,  // args: test, then[, else]   (then if test else else)
  GetAttr,    // args[0] . name
  GetItem,    // args[0] [ args[1] ]
  Slice,      // args[0] [ args[1] : args[2] : args[3] ], missing parts null
  Call,       // args[0] ( args[1..], kwargs )
  Filter,     // args[0] | name ( args[1..], kwargs ); args[0] null inside {% filter %}
  Test,       // args[0] is [not] name ( args[1..], kwargs ); negated
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;  // Name, GetAttr, Filter, Test, or the operator for Unary/Binary
  std::vector<std::string> ops;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;
};

enum class StmtKind {
  Text,        // text
  Output,      // {{ expr }}
  If,          // conditions[i] guards bodies[i]; bodies.back() is else when one longer
  For,         // targets in expr [if condition]: bodies[0], else bodies[1]
  Set,         // targets (or target + attribute) = expr
  SetBlock,    // {% set target %}bodies[0]{% endset %}, optional filter expr
  Macro,       // name(params) bodies[0]
  CallBlock,   // {% call(params) expr %}bodies[0]{% endcall %}
  FilterBlock, // {% filter expr %}bodies[0]{% endfilter %}
  Break,
  Continue,
  Scope,       // bodies[0] rendered in place ({% generation %})
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                  // Text; macro name
  std::vector<std::string> targets;  // For/Set targets; Set on namespace: {name}
  std::string attribute;             // Set ns.attribute
  ExprPtr expr;                      // Output, For iterable, Set value, CallBlock call, filter
  ExprPtr condition;                 // For filter
  std::vector<ExprPtr> conditions;   // If
  std::vector<Body> bodies;
  std::vector<MacroParam> params;    // Macro, CallBlock caller params
};

}  // namespace rayo::jinja
