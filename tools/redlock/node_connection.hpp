// A blocking connection of the tool's own to one node, for plain read commands (`show`, the
// read-back after `extend`): TCP or TLS (the node list's rediss:// and Config::tls, verified as
// the library verifies them), AUTH and SELECT from the node list. Never used for locking: the
// library's connections do that.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

#include "redlock/config.hpp"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX and SSL
struct ssl_st;

namespace redlock::cli {

using ReplyPtr = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

class NodeConnection;

// The text of a string, status, error or integer reply; empty for any other (or none).
std::string reply_text(const redisReply* r);

// The reply to `args` on `conn`; throws std::runtime_error with the node's words for an error
// reply (and as NodeConnection::command does when the node cannot be reached).
ReplyPtr must(NodeConnection& conn, const std::vector<std::string>& args);

class NodeConnection {
 public:
  // Connects (within connect_timeout), shakes hands, authenticates and selects the database;
  // later commands wait at most request_timeout. Throws std::runtime_error with the reason.
  NodeConnection(const NodeAddress& node, const TlsOptions& tls, Milliseconds connect_timeout,
                 Milliseconds request_timeout);
  ~NodeConnection();
  NodeConnection(const NodeConnection&) = delete;
  NodeConnection& operator=(const NodeConnection&) = delete;

  // The reply (an error reply too). Throws std::runtime_error when the node cannot be reached
  // or its answer is not RESP.
  ReplyPtr command(const std::vector<std::string>& args);

 private:
  void open(const NodeAddress& node, const TlsOptions& tls, Milliseconds connect_timeout,
            Milliseconds request_timeout);
  void send_all(const char* data, std::size_t size);
  std::size_t receive(char* buf, std::size_t size);

  int fd_ = -1;
  void close() noexcept;

  ::ssl_ctx_st* ctx_ = nullptr;
  ::ssl_st* ssl_ = nullptr;
  redisReader* reader_ = nullptr;
};

}  // namespace redlock::cli
