#pragma once
// A compiled Jinja template, rendered the way Hugging Face's
// apply_chat_template renders chat templates: jinja2 with trim_blocks,
// lstrip_blocks and loop controls, undefined variables printing as nothing,
// Python value printing, `tojson` as json.dumps(ensure_ascii=False), and the
// globals raise_exception(msg) and strftime_now(fmt).
//
//   Template t("{{ greeting ~ ', ' ~ name }}!");
//   std::string s = t.render({{"greeting", "Hello"}, {"name", "Ada"}});
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/interpreter.h"

namespace rayo::jinja {

struct RenderOptions {
  RenderLimits limits;
  Clock clock;  // strftime_now reads this; the local time when empty
};

class Template {
 public:
  // Parses the source; throws rayo::Error ("template syntax error, line N: ...").
  explicit Template(std::string_view source);

  // Renders with the members of `context` (a JSON object) as variables. Throws
  // rayo::Error ("template error, line N: ...") when the template fails or
  // calls raise_exception.
  std::string render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace rayo::jinja
