#pragma once
// rayo reports every user-facing failure (bad file, bad flag, bad request) as a
// rayo::Error whose message is one line, complete in itself: the CLI prints it
// as "rayo: error: <message>" and exits non-zero; the server turns it into an
// HTTP error. Internal invariant violations use RAYO_CHECK, which also throws,
// so that no input can take the process down with an abort.
#include "common/strings.h"
#include "rayo/error.h"  // rayo::Error itself is public API

namespace rayo {

// Throws rayo::Error with the arguments concatenated: fail("bad dim ", d, " in ", name).
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(cat(args...));
}

}  // namespace rayo

#define RAYO_CHECK(cond, ...)                                                    \
  do {                                                                           \
    if (!(cond)) ::rayo::fail("internal check failed: " #cond " ", ##__VA_ARGS__); \
  } while (0)
