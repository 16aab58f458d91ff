#include "jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "common/error.h"
#include "jinja/lexer.h"

namespace rayo::jinja {
namespace {

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::Text: return "template text";
    case TokenType::BlockBegin: return "'{%'";
    case TokenType::BlockEnd: return "end of statement '%}'";
    case TokenType::VarBegin: return "'{{'";
    case TokenType::VarEnd: return "end of expression '}}'";
    case TokenType::String: return "string literal";
    case TokenType::End: return "end of template";
    default: return "'" + t.text + "'";
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse() {
    std::string end;
    Body body = parse_body({}, &end);
    return body;
  }

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;

  // Counts nesting for the lifetime of one recursive parse call.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxSyntaxDepth) p.error(p.current(), cat("template nested more than ", kMaxSyntaxDepth, " levels deep"));
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }

  [[noreturn]] void error(const Token& at, const std::string& message) { fail("line ", at.line, ": ", message); }

  bool at_name(std::string_view name) const { return current().type == TokenType::Name && current().text == name; }
  bool at_op(std::string_view op) const { return current().type == TokenType::Operator && current().text == op; }

  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) error(current(), cat("expected '", op, "', got ", describe(current())));
  }
  std::string expect_name() {
    if (current().type != TokenType::Name) error(current(), cat("expected a name, got ", describe(current())));
    std::string name = current().text;
    next();
    return name;
  }
  void expect_block_end() {
    if (current().type != TokenType::BlockEnd)
      error(current(), cat("expected end of statement '%}', got ", describe(current())));
    next();
  }

  // ---- statements ------------------------------------------------------

  // Parses until a block tag whose name is in `ends`; consumes "{%" and that
  // name, stores it in *found and leaves the rest of the tag to the caller.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string* found) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& t = current();
      switch (t.type) {
        case TokenType::End:
          if (ends.size() == 0) {
            *found = "";
            return body;
          }
          // Name the tag that closes the block (the last one listed).
          error(t, cat("unexpected end of template, expected '", *(ends.end() - 1), "'"));
        case TokenType::Text: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::Text;
          s->line = t.line;
          s->text = t.text;
          body.push_back(std::move(s));
          next();
          break;
        }
        case TokenType::VarBegin: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::Output;
          s->line = t.line;
          next();
          s->expr = parse_tuple_expression(true);
          if (current().type != TokenType::VarEnd)
            error(current(), cat("expected end of expression '}}', got ", describe(current())));
          next();
          body.push_back(std::move(s));
          break;
        }
        case TokenType::BlockBegin: {
          const Token& name = peek();
          if (name.type != TokenType::Name) error(name, cat("expected a tag name, got ", describe(name)));
          for (std::string_view end : ends) {
            if (name.text == end) {
              *found = name.text;
              next();
              next();
              return body;
            }
          }
          next();
          body.push_back(parse_statement());
          break;
        }
        default:
          error(t, cat("unexpected ", describe(t)));
      }
    }
  }

  StmtPtr make_stmt(StmtKind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  StmtPtr parse_statement() {
    const Token tag = current();
    next();
    const std::string& name = tag.text;
    if (name == "if") return parse_if(tag.line);
    if (name == "for") return parse_for(tag.line);
    if (name == "set") return parse_set(tag.line);
    if (name == "macro") return parse_macro(tag.line);
    if (name == "call") return parse_call_block(tag.line);
    if (name == "filter") return parse_filter_block(tag.line);
    if (name == "break" || name == "continue") {
      auto s = make_stmt(name == "break" ? StmtKind::Break : StmtKind::Continue, tag.line);
      expect_block_end();
      return s;
    }
    if (name == "generation") {  // Hugging Face's marker around assistant text
      auto s = make_stmt(StmtKind::Scope, tag.line);
      expect_block_end();
      s->bodies.push_back(parse_block_body("endgeneration"));
      return s;
    }
    if (name.starts_with("end") || name == "elif" || name == "else")
      error(tag, cat("unexpected '", name, "' outside the block it closes"));
    error(tag, cat("unknown or unsupported tag '", name, "'"));
  }

  Body parse_block_body(std::string_view end) {
    std::string found;
    Body body = parse_body({end}, &found);
    expect_block_end();
    return body;
  }

  StmtPtr parse_if(int line) {
    auto s = make_stmt(StmtKind::If, line);
    s->conditions.push_back(parse_tuple_expression(true));
    expect_block_end();
    for (;;) {
      std::string found;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &found));
      if (found == "elif") {
        s->conditions.push_back(parse_tuple_expression(true));
        expect_block_end();
      } else if (found == "else") {
        expect_block_end();
        s->bodies.push_back(parse_block_body("endif"));
        return s;
      } else {
        expect_block_end();
        return s;
      }
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    bool parenthesized = skip_op("(");
    do {
      if (parenthesized && at_op(")")) break;
      targets.push_back(expect_name());
    } while (skip_op(","));
    if (parenthesized) expect_op(")");
    return targets;
  }

  StmtPtr parse_for(int line) {
    auto s = make_stmt(StmtKind::For, line);
    s->targets = parse_targets();
    if (!skip_name("in")) error(current(), cat("expected 'in' in for loop, got ", describe(current())));
    s->expr = parse_tuple_expression(false);
    if (skip_name("if")) s->condition = parse_expression(true);
    if (at_name("recursive")) error(current(), "recursive loops are not supported");
    expect_block_end();
    std::string found;
    s->bodies.push_back(parse_body({"else", "endfor"}, &found));
    if (found == "else") {
      expect_block_end();
      s->bodies.push_back(parse_block_body("endfor"));
    } else {
      expect_block_end();
    }
    return s;
  }

  StmtPtr parse_set(int line) {
    auto s = make_stmt(StmtKind::Set, line);
    std::string first = expect_name();
    if (skip_op(".")) {
      s->targets = {first};
      s->attribute = expect_name();
    } else {
      s->targets = {first};
      while (skip_op(",")) s->targets.push_back(expect_name());
    }
    if (skip_op("=")) {
      s->expr = parse_tuple_expression(true);
      expect_block_end();
      return s;
    }
    if (s->targets.size() != 1 || !s->attribute.empty())
      error(current(), "expected '=' after the assignment target");
    s->kind = StmtKind::SetBlock;
    if (at_op("|")) s->expr = parse_filter_chain(nullptr);
    expect_block_end();
    s->bodies.push_back(parse_block_body("endset"));
    return s;
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!at_op(")")) {
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      params.push_back(std::move(p));
      if (!skip_op(",")) break;
    }
    expect_op(")");
    return params;
  }

  StmtPtr parse_macro(int line) {
    auto s = make_stmt(StmtKind::Macro, line);
    s->text = expect_name();
    s->params = parse_params();
    expect_block_end();
    s->bodies.push_back(parse_block_body("endmacro"));
    return s;
  }

  StmtPtr parse_call_block(int line) {
    auto s = make_stmt(StmtKind::CallBlock, line);
    if (at_op("(")) s->params = parse_params();
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) error(current(), "expected a macro call after 'call'");
    expect_block_end();
    s->bodies.push_back(parse_block_body("endcall"));
    return s;
  }

  StmtPtr parse_filter_block(int line) {
    auto s = make_stmt(StmtKind::FilterBlock, line);
    s->expr = parse_filter_chain(nullptr, /*first_bar_optional=*/true);
    expect_block_end();
    s->bodies.push_back(parse_block_body("endfilter"));
    return s;
  }

  // ---- expressions -----------------------------------------------------

  ExprPtr make_expr(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // An expression, or a tuple when commas follow ("a, b").
  ExprPtr parse_tuple_expression(bool allow_condition) {
    int line = current().line;
    ExprPtr first = parse_expression(allow_condition);
    if (!at_op(",")) return first;
    auto tuple = make_expr(ExprKind::Tuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (current().type == TokenType::BlockEnd || current().type == TokenType::VarEnd || at_op(")")) break;
      tuple->args.push_back(parse_expression(allow_condition));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool allow_condition) {
    DepthGuard guard(*this);
    if (!allow_condition) return parse_or();
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      int line = current().line;
      next();
      auto cond = make_expr(ExprKind::Condition, line);
      ExprPtr test = parse_or();
      cond->args.push_back(std::move(test));
      cond->args.push_back(std::move(expr));
      if (skip_name("else")) cond->args.push_back(parse_expression(true));
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    auto e = make_expr(ExprKind::Binary, line);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      int line = current().line;
      next();
      left = binary("or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      int line = current().line;
      next();
      left = binary("and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(*this);
      auto e = make_expr(ExprKind::Unary, current().line);
      next();
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = current().line;
    ExprPtr first = parse_math1();
    std::unique_ptr<Expr> cmp;
    for (;;) {
      std::string op;
      if (current().type == TokenType::Operator &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
        op = current().text;
        next();
      } else if (at_name("in")) {
        op = "in";
        next();
      } else if (at_name("not") && peek().type == TokenType::Name && peek().text == "in") {
        op = "not in";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make_expr(ExprKind::Compare, line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      std::string op = current().text;
      int line = current().line;
      next();
      left = binary(op, std::move(left), parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = current().line;
    ExprPtr first = parse_math2();
    if (!at_op("~")) return first;
    auto e = make_expr(ExprKind::Concat, line);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      std::string op = current().text;
      int line = current().line;
      next();
      left = binary(op, std::move(left), parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_op("**")) {
      int line = current().line;
      next();
      left = binary("**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      node = make_expr(ExprKind::Unary, current().line);
      node->name = current().text;
      next();
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_postfix(parse_primary());
    }
    if (with_filter) node = parse_filter_expression(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = current();
    switch (t.type) {
      case TokenType::Name: {
        int line = t.line;
        std::string name = t.text;
        next();
        auto lit = make_expr(ExprKind::Literal, line);
        if (name == "true" || name == "True") {
          lit->value = Value::boolean(true);
        } else if (name == "false" || name == "False") {
          lit->value = Value::boolean(false);
        } else if (name == "none" || name == "None") {
          lit->value = Value::none();
        } else {
          auto e = make_expr(ExprKind::Name, line);
          e->name = name;
          return e;
        }
        return lit;
      }
      case TokenType::String: {
        auto lit = make_expr(ExprKind::Literal, t.line);
        std::string s;
        while (current().type == TokenType::String) {  // adjacent literals join, as in Python
          s += current().text;
          next();
        }
        lit->value = Value::string(std::move(s));
        return lit;
      }
      case TokenType::Integer: {
        auto lit = make_expr(ExprKind::Literal, t.line);
        errno = 0;
        long long v = std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) error(t, cat("integer literal ", t.text, " is too large"));
        lit->value = Value::integer(v);
        next();
        return lit;
      }
      case TokenType::Float: {
        auto lit = make_expr(ExprKind::Literal, t.line);
        lit->value = Value::number(std::strtod(t.text.c_str(), nullptr));
        next();
        return lit;
      }
      case TokenType::Operator:
        if (t.text == "(") return parse_parenthesized();
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    error(t, cat("unexpected ", describe(t), " in expression"));
  }

  ExprPtr parse_parenthesized() {
    int line = current().line;
    next();
    if (skip_op(")")) return make_expr(ExprKind::Tuple, line);
    ExprPtr first = parse_expression(true);
    if (skip_op(")")) return first;
    auto tuple = make_expr(ExprKind::Tuple, line);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (at_op(")")) break;
      tuple->args.push_back(parse_expression(true));
    }
    expect_op(")");
    return tuple;
  }

  ExprPtr parse_list() {
    auto e = make_expr(ExprKind::List, current().line);
    next();
    while (!at_op("]")) {
      e->args.push_back(parse_expression(true));
      if (!skip_op(",")) break;
    }
    expect_op("]");
    return e;
  }

  ExprPtr parse_dict() {
    auto e = make_expr(ExprKind::Dict, current().line);
    next();
    while (!at_op("}")) {
      e->args.push_back(parse_expression(true));
      expect_op(":");
      e->args.push_back(parse_expression(true));
      if (!skip_op(",")) break;
    }
    expect_op("}");
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    for (;;) {
      int line = current().line;
      if (at_op(".")) {
        next();
        auto e = make_expr(ExprKind::GetAttr, line);
        if (current().type == TokenType::Name) {
          e->name = current().text;
          next();
        } else if (current().type == TokenType::Integer) {  // x.0 is x[0]
          e->kind = ExprKind::GetItem;
          auto index = make_expr(ExprKind::Literal, line);
          index->value = Value::integer(std::strtoll(current().text.c_str(), nullptr, 10));
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(index));
          next();
          node = std::move(e);
          continue;
        } else {
          error(current(), cat("expected an attribute name after '.', got ", describe(current())));
        }
        e->args.push_back(std::move(node));
        node = std::move(e);
      } else if (at_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(*this);
    int line = current().line;
    next();
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    for (;;) {
      if (at_op(":")) {
        if (part == 2) error(current(), "too many ':' in slice");
        is_slice = true;
        ++part;
        next();
        continue;
      }
      if (at_op("]")) break;
      if (parts[part]) error(current(), cat("expected ']', got ", describe(current())));
      parts[part] = parse_expression(true);
    }
    next();
    if (!is_slice) {
      if (!parts[0]) error(current(), "empty subscript");
      auto e = make_expr(ExprKind::GetItem, line);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make_expr(ExprKind::Slice, line);
    e->args.push_back(std::move(node));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  // "(" args ")" into e->args (after any already there) and e->kwargs.
  void parse_arguments(Expr& e) {
    expect_op("(");
    while (!at_op(")")) {
      if (at_op("*") || at_op("**")) error(current(), "*args and **kwargs in calls are not supported");
      if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().text == "=") {
        std::string key = current().text;
        next();
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error(current(), "positional argument follows keyword argument");
        e.args.push_back(parse_expression(true));
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    DepthGuard guard(*this);
    auto e = make_expr(ExprKind::Call, current().line);
    e->args.push_back(std::move(callee));
    parse_arguments(*e);
    return e;
  }

  // Filters ("|name(args)"), tests ("is [not] name args") and calls after a
  // unary expression, as jinja2's parse_filter_expr.
  ExprPtr parse_filter_expression(ExprPtr node) {
    for (;;) {
      if (at_op("|")) {
        node = parse_filter_chain(std::move(node));
      } else if (at_name("is")) {
        node = parse_test(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_chain(ExprPtr node, bool first_bar_optional = false) {
    bool first = true;
    while (at_op("|") || (first && first_bar_optional)) {
      DepthGuard guard(*this);
      if (!(first && first_bar_optional && !at_op("|"))) next();
      first = false;
      auto e = make_expr(ExprKind::Filter, current().line);
      e->name = expect_name();
      e->args.push_back(std::move(node));
      if (at_op("(")) parse_arguments(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    DepthGuard guard(*this);
    auto e = make_expr(ExprKind::Test, current().line);
    next();  // is
    if (skip_name("not")) e->negated = true;
    e->name = expect_name();
    e->args.push_back(std::move(node));
    if (at_op("(")) {
      parse_arguments(*e);
    } else {
      const Token& t = current();
      bool starts_primary = t.type == TokenType::Name || t.type == TokenType::String ||
                            t.type == TokenType::Integer || t.type == TokenType::Float ||
                            (t.type == TokenType::Operator && (t.text == "(" || t.text == "[" || t.text == "{"));
      bool keyword = t.type == TokenType::Name &&
                     (t.text == "else" || t.text == "or" || t.text == "and" || t.text == "if" || t.text == "is");
      if (starts_primary && !keyword) e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse(); }

}  // namespace rayo::jinja
