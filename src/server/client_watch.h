#pragma once
// Whether the client of an HTTP request has gone away, for a handler that
// writes nothing until its answer is complete (a completion without
// `stream`), so that a request nobody waits for any more is cancelled and its
// sequence freed at once, as a streaming one is when a write fails.
//
// Why it looks for the socket itself: cpp-httplib 0.11 (Debian 12's) gives a
// handler neither its connection's socket nor a way to ask whether it is
// still open, only the connection's two addresses. The socket is the one
// among the process's descriptors with those local and peer addresses; while
// the handler runs, the connection is its thread's and cannot be closed or
// reused under it.
#include <string>

namespace rayo::server {

class ClientWatch {
 public:
  // Finds the connection's socket. When none matches, client_gone() is
  // always false (the request then runs to its end, as before).
  ClientWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

  bool watching() const { return fd_ >= 0; }

  // True once the client has closed its side of the connection or reset it.
  // A client that pipelined its next request still counts as present.
  bool client_gone() const;

 private:
  int fd_ = -1;
};

}  // namespace rayo::server
