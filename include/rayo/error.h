#pragma once
// The exception rayo throws for every user-facing failure (a bad file, a bad
// option, a prompt longer than the context): a std::runtime_error whose
// message is one line, complete in itself. It is declared here, in the public
// API, so that users can catch it by name; the library throws this very type
// (src/common/error.h builds fail() and RAYO_CHECK on it), so there is one
// definition only.
#include <stdexcept>
#include <string>

namespace rayo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace rayo
