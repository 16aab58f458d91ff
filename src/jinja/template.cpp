#include "jinja/template.h"

#include "common/error.h"
#include "jinja/json_bridge.h"
#include "jinja/parser.h"

namespace rayo::jinja {

Template::Template(std::string_view source) {
  try {
    body_ = std::make_shared<const Body>(parse_template(source));
  } catch (const Error& e) {
    fail("template syntax error, ", e.what());
  }
}

std::string Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  if (!context.is_object() && !context.is_null()) fail("template context must be a JSON object");
  Interpreter interpreter(options.limits);
  // Render variables shadow the global functions, as in jinja2.
  auto globals = std::make_shared<Scope>();
  add_global_functions(*globals, interpreter, options.clock);
  auto variables = std::make_shared<Scope>(globals);
  try {
    if (context.is_object())
      for (auto it = context.begin(); it != context.end(); ++it) variables->set(it.key(), from_json(it.value()));
  } catch (const Error& e) {
    fail("template variables: ", e.what());
  }
  try {
    return interpreter.render(*body_, variables);
  } catch (const Error& e) {
    fail("template error, ", e.what());
  }
}

}  // namespace rayo::jinja
