#pragma once
// Rendering helpers shared by the jinja_* unit tests. Expected strings in those
// tests are what jinja2 renders with Hugging Face's settings (trim_blocks,
// lstrip_blocks, loop controls).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "jinja/template.h"

namespace rayo::jinja::testing {

inline std::string render(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                          const RenderOptions& options = {}) {
  return Template(source).render(context, options);
}

// The message of the rayo::Error that parsing or rendering throws; fails the
// test when nothing is thrown.
inline std::string render_error(const std::string& source,
                                const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                                const RenderOptions& options = {}) {
  try {
    std::string out = render(source, context, options);
    ADD_FAILURE() << "expected an error from " << source << " but it rendered: " << out.substr(0, 200);
  } catch (const rayo::Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace rayo::jinja::testing
