#pragma once
// Builds the syntax tree of a template from its tokens: jinja2's statement set
// as chat templates use it (if, for, set, macro, call, filter, break,
// continue, generation) and its expression grammar with jinja2's precedence.
#include <string_view>

#include "jinja/ast.h"

namespace rayo::jinja {

// Nesting of statements and expressions beyond this is refused, so that parsing
// and rendering cannot exhaust the stack.
constexpr int kMaxSyntaxDepth = 128;

// Throws rayo::Error ("line N: ...") on a syntax error.
Body parse_template(std::string_view source);

}  // namespace rayo::jinja
