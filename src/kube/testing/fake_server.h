#pragma once
// The fake API server's HTTPS front: TLS (its own certificate, from a CA the tests generate),
// bearer-token or client-certificate authentication, HTTP/1.1 keep-alive, and chunked streams
// for watches and followed logs. Requests go to FakeApi; paths under /_fake/ are the tests'
// hooks (they need the token too):
//   POST /_fake/watches/cut   close every open watch mid-stream (no final chunk)
//   POST /_fake/compact       forget the change history: older resourceVersions answer 410
//   POST /_fake/bookmarks     send a BOOKMARK now to every watch that allows them
//   POST /_fake/throttle      {"count": N, "retryAfterSeconds": S}: the next N API requests
//                             answer 429 with Retry-After: S
//   POST /_fake/config        {"expiredWatchAs410": bool}: how an expired watch is refused
//   POST /_fake/restart       {"downMs": D}: drop every connection, refuse new ones for D ms,
//                             then serve again with the same state (etcd survives)
//   GET  /_fake/events        every Event ({"items": [...]}), outside the role under test
//   POST /_fake/admin         {"method", "path", "body"}: that API request made as a cluster
//                             administrator (outside the role under test, not counted); its
//                             answer is the hook's
//   POST /_fake/fail          {"method", "path", "code", "count"}: the next `count` (1) such
//                             requests answer `code` and change nothing (FakeApi::FailNext)
//   GET  /_fake/stats         requests by RBAC verb and resource (and those denied by the
//                             role, fake_rbac.h), 429s sent, the gaps between
//                             each 429 and the client's retry of that request, open watches
// Thread contract: Start() once; Stop() from any thread; the work runs on the io_context's
// threads (as many as the caller runs it on).

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "kube/testing/fake_api.h"

namespace gpupool::kube::fake {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // optional: client certificates signed by it authenticate
  std::string token;           // bearer token
  int64_t bookmark_interval_ms = 60000;
  int64_t default_watch_timeout_s = 1800;  // a watch without timeoutSeconds
};

class FakeServer {
 public:
  FakeServer(boost::asio::io_context& io, FakeApi& api, ObjectStore& store, ServerOptions options);
  ~FakeServer();

  // Listens; returns the port.
  Result<int> Start();
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpupool::kube::fake
