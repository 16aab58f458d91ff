#include "tools/sse_client.h"

#include <httplib.h>

#include <algorithm>

#include "common/error.h"

namespace rayo::tools {
namespace {

httplib::Client client(const ServerAddress& ep, double timeout_s) {
  httplib::Client c(ep.host, ep.port);
  const auto t = std::chrono::duration<double>(timeout_s);
  c.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(t));
  c.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(t));
  c.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(t));
  if (!ep.api_key.empty()) c.set_bearer_token_auth(ep.api_key);
  return c;
}

HttpResult result_of(const httplib::Result& r) {
  HttpResult out;
  if (!r) {
    out.error = httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  out.body = r->body;
  for (const auto& [k, v] : r->headers) out.headers.push_back({k, v});
  return out;
}

}  // namespace

std::string HttpResult::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() &&
        std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
      return v;
  }
  return {};
}

ServerAddress parse_url(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos) fail("only http:// URLs are supported, got '", url, "'");
  rest = rest.substr(0, rest.find('/'));
  ServerAddress ep;
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    ep.host = rest;
    ep.port = 80;
  } else {
    ep.host = rest.substr(0, colon);
    try {
      ep.port = std::stoi(rest.substr(colon + 1));
    } catch (...) {
      fail("bad port in '", url, "'");
    }
  }
  if (ep.host.empty()) fail("no host in '", url, "'");
  return ep;
}

HttpResult http_get(const ServerAddress& ep, const std::string& path, double timeout_s) {
  auto c = client(ep, timeout_s);
  return result_of(c.Get(path));
}

HttpResult http_post(const ServerAddress& ep, const std::string& path, const std::string& body,
                     const std::string& content_type, double timeout_s) {
  auto c = client(ep, timeout_s);
  return result_of(c.Post(path, body, content_type));
}

HttpResult post_stream(const ServerAddress& ep, const std::string& path, const std::string& body,
                       const std::function<bool(const std::string& data)>& on_event, double timeout_s) {
  auto c = client(ep, timeout_s);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  if (!ep.api_key.empty()) req.set_header("Authorization", "Bearer " + ep.api_key);
  HttpResult out;
  std::string buffer;
  bool is_stream = false;
  req.response_handler = [&](const httplib::Response& r) {
    out.status = r.status;
    for (const auto& [k, v] : r.headers) out.headers.push_back({k, v});
    is_stream = r.status == 200 && r.get_header_value("Content-Type").rfind("text/event-stream", 0) == 0;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (!is_stream) {
      out.body.append(data, len);
      return true;
    }
    buffer.append(data, len);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      size_t pos = 0;
      while (pos < event.size()) {
        size_t eol = event.find('\n', pos);
        if (eol == std::string::npos) eol = event.size();
        const std::string line = event.substr(pos, eol - pos);
        pos = eol + 1;
        if (line.rfind("data: ", 0) == 0 && !on_event(line.substr(6))) return false;
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  if (!c.send(req, res, err) && out.status == 0) out.error = httplib::to_string(err);
  if (out.status == 0 && err == httplib::Error::Success) out.status = res.status;
  return out;
}

}  // namespace rayo::tools
