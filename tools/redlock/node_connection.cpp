#include "node_connection.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace redlock::cli {
namespace {

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

bool is_ip(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A TCP connection to host:port within `timeout`, or throws.
int tcp_connect(const std::string& host, std::uint16_t port, Milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) fail(std::string("cannot resolve '") + host + "': " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    int error = 0;
    socklen_t len = sizeof error;
    if (ready <= 0) {
      why = ready == 0 ? "connect timed out" : std::strerror(errno);
    } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
      why = std::strerror(error != 0 ? error : errno);
    } else {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    ::close(fd);
  }
  fail(why);
}

}  // namespace

NodeConnection::NodeConnection(const NodeAddress& node, const TlsOptions& tls,
                               Milliseconds connect_timeout, Milliseconds request_timeout) {
  try {
    open(node, tls, connect_timeout, request_timeout);
  } catch (...) {
    close();
    throw;
  }
}

void NodeConnection::open(const NodeAddress& node, const TlsOptions& tls,
                          Milliseconds connect_timeout, Milliseconds request_timeout) {
  fd_ = tcp_connect(node.host, node.port, connect_timeout);
  // Every later read and write is bounded: the handshake by the connect timeout, the commands
  // by the request timeout (set below).
  auto bound = [this](Milliseconds d) {
    timeval tv{static_cast<time_t>(d.count() / 1000),
               static_cast<suseconds_t>((d.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  };
  bound(connect_timeout);
  if (node.tls) {
    // As the library's contexts (lib/net/tls.cpp): TLS 1.2 or newer, the peer verified against
    // the CA file or directory (else the system's), its name checked against --sni or the host.
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) fail(openssl_error());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx_, tls.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
    if (!tls.ca_file.empty() || !tls.ca_dir.empty()) {
      if (SSL_CTX_load_verify_locations(ctx_, tls.ca_file.empty() ? nullptr : tls.ca_file.c_str(),
                                        tls.ca_dir.empty() ? nullptr : tls.ca_dir.c_str()) != 1)
        fail("cannot load the CA certificates: " + openssl_error());
    } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
      fail("cannot load the system's CA certificates: " + openssl_error());
    }
    if (!tls.cert_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(ctx_, tls.cert_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx_, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1))
      fail("cannot load the client certificate or key: " + openssl_error());
    ssl_ = SSL_new(ctx_);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) fail(openssl_error());
    const std::string name = tls.server_name.empty() ? node.host : tls.server_name;
    if (!is_ip(name)) SSL_set_tlsext_host_name(ssl_, name.c_str());
    if (!tls.insecure_skip_verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      if (is_ip(name)) {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      } else {
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      }
    }
    if (SSL_connect(ssl_) != 1) {
      long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK && !tls.insecure_skip_verify)
        fail(std::string("TLS: ") + X509_verify_cert_error_string(verify));
      fail("TLS handshake failed: " + openssl_error());
    }
  }
  bound(request_timeout);
  reader_ = redisReaderCreate();
  if (reader_ == nullptr) fail("out of memory");
  auto check = [](ReplyPtr r) {
    if (r->type == REDIS_REPLY_ERROR) fail(std::string(r->str, r->len));
  };
  if (!node.password.empty()) {
    if (node.user.empty())
      check(command({"AUTH", node.password}));
    else
      check(command({"AUTH", node.user, node.password}));
  }
  if (node.db != 0) check(command({"SELECT", std::to_string(node.db)}));
}

NodeConnection::~NodeConnection() { close(); }

void NodeConnection::close() noexcept {
  if (reader_ != nullptr) redisReaderFree(reader_);
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
  reader_ = nullptr;
  ssl_ = nullptr;
  ctx_ = nullptr;
  fd_ = -1;
}

void NodeConnection::send_all(const char* data, std::size_t size) {
  while (size > 0) {
    if (ssl_ != nullptr) {
      int n = SSL_write(ssl_, data, static_cast<int>(size));
      if (n <= 0) fail("write failed: " + openssl_error());
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(std::string("write failed: ") + std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

std::size_t NodeConnection::receive(char* buf, std::size_t size) {
  for (;;) {
    if (ssl_ != nullptr) {
      int n = SSL_read(ssl_, buf, static_cast<int>(size));
      if (n > 0) return static_cast<std::size_t>(n);
      if (errno == EAGAIN || errno == EWOULDBLOCK) fail("request timed out");
      fail("connection closed: " + openssl_error());
    }
    ssize_t n = ::recv(fd_, buf, size, 0);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) fail("request timed out");
    fail(n == 0 ? "connection closed by the node" : std::strerror(errno));
  }
}

ReplyPtr NodeConnection::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* formatted = nullptr;
  int len =
      redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (len < 0) fail("out of memory");
  std::unique_ptr<char, decltype(&redisFreeCommand)> request(formatted, &redisFreeCommand);
  send_all(formatted, static_cast<std::size_t>(len));
  for (int i = 0; i < 1'000'000; ++i) {  // bounded: each pass reads some bytes or throws
    void* reply = nullptr;
    if (redisReaderGetReply(reader_, &reply) != REDIS_OK) fail("protocol error: not RESP");
    if (reply != nullptr) return ReplyPtr(static_cast<redisReply*>(reply), &freeReplyObject);
    char buf[16384];
    std::size_t n = receive(buf, sizeof buf);
    if (redisReaderFeed(reader_, buf, n) != REDIS_OK) fail("protocol error: not RESP");
  }
  fail("reply too large");
}

std::string reply_text(const redisReply* r) {
  if (r == nullptr) return {};
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR)
    return std::string(r->str, r->len);
  if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
  return {};
}

ReplyPtr must(NodeConnection& conn, const std::vector<std::string>& args) {
  auto r = conn.command(args);
  if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(reply_text(r.get()));
  return r;
}

}  // namespace redlock::cli
