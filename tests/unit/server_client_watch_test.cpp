// ClientWatch on a real loopback connection: it finds the server side's socket
// from the two addresses a request carries and sees the client leave.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "server/client_watch.h"

namespace rayo::server {
namespace {

struct Endpoint {
  std::string host;
  int port;
};

Endpoint endpoint(const sockaddr_in& a) {
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
  return {host, ntohs(a.sin_port)};
}

// A connected pair on 127.0.0.1: the client's socket and the server's.
struct Connection {
  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    server = accept(listener, nullptr, nullptr);
    EXPECT_GE(server, 0);
    sockaddr_in l{}, p{};
    len = sizeof l;
    getsockname(server, reinterpret_cast<sockaddr*>(&l), &len);
    len = sizeof p;
    getpeername(server, reinterpret_cast<sockaddr*>(&p), &len);
    local = endpoint(l);
    remote = endpoint(p);
  }
  ~Connection() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
  int listener = -1, client = -1, server = -1;
  Endpoint local, remote;
};

TEST(ClientWatch, SeesTheClientCloseItsConnection) {
  Connection c;
  const ClientWatch watch(c.local.host, c.local.port, c.remote.host, c.remote.port);
  ASSERT_TRUE(watch.watching());
  EXPECT_FALSE(watch.client_gone());
  close(c.client);
  c.client = -1;
  bool gone = false;  // the FIN crosses loopback at once; allow it a second
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = watch.client_gone();
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone);
}

TEST(ClientWatch, AClientThatSentItsNextRequestIsStillThere) {
  Connection c;
  const ClientWatch watch(c.local.host, c.local.port, c.remote.host, c.remote.port);
  ASSERT_TRUE(watch.watching());
  ASSERT_EQ(send(c.client, "GET", 3, 0), 3);
  EXPECT_FALSE(watch.client_gone());
  char buf[3];
  ASSERT_EQ(recv(c.server, buf, 3, 0), 3);  // the bytes were only peeked at
  EXPECT_FALSE(watch.client_gone());
}

TEST(ClientWatch, WithoutAMatchingSocketItNeverReportsTheClientGone) {
  Connection c;
  const ClientWatch other_port(c.local.host, c.local.port, c.remote.host, c.remote.port == 1 ? 2 : 1);
  EXPECT_FALSE(other_port.watching());
  EXPECT_FALSE(other_port.client_gone());
  const ClientWatch no_address("", 0, "", 0);
  EXPECT_FALSE(no_address.watching());
}

}  // namespace
}  // namespace rayo::server
