#include "tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <map>
#include <tuple>
#include <utility>

#include "redlock/errors.hpp"

namespace redlock::detail {

class TlsContext {
 public:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  ~TlsContext() { SSL_CTX_free(ctx_); }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* get() const noexcept { return ctx_; }

 private:
  SSL_CTX* ctx_;
};

namespace {

// OpenSSL's error queue of this thread, as one line, emptied.
std::string openssl_errors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no reason given by OpenSSL" : out;
}

std::error_code load_failed(std::string& message, const std::string& what) {
  message = what + ": " + openssl_errors();
  return make_error_code(Errc::invalid_config);
}

SSL_CTX* new_context(const TlsOptions& o, std::error_code& error, std::string& message) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    error = load_failed(message, "cannot create a TLS context");
    return nullptr;
  }
  auto fail = [&](const std::string& what) {
    error = load_failed(message, what);
    SSL_CTX_free(ctx);
    return nullptr;
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_verify(ctx, o.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  if (!o.ca_file.empty() || !o.ca_dir.empty()) {
    const char* file = o.ca_file.empty() ? nullptr : o.ca_file.c_str();
    const char* dir = o.ca_dir.empty() ? nullptr : o.ca_dir.c_str();
    if (SSL_CTX_load_verify_locations(ctx, file, dir) != 1)
      return fail(file != nullptr ? "cannot load TLS CA file '" + o.ca_file + "'"
                                  : "cannot use TLS CA directory '" + o.ca_dir + "'");
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return fail("cannot load the system's default TLS trust store");
  }
  if (!o.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1)
      return fail("cannot load TLS certificate file '" + o.cert_file + "'");
    if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      return fail("cannot load TLS key file '" + o.key_file + "'");
    if (SSL_CTX_check_private_key(ctx) != 1)
      return fail("TLS key file '" + o.key_file + "' does not match certificate file '" +
                  o.cert_file + "'");
  }
  return ctx;
}

// What a file is now: device, inode, size and change time. A CA, certificate or key replaced
// (renamed over, rewritten, or added to a CA directory) gives another stamp, so the next
// connection loads the new files instead of sharing a context made from the old ones.
std::string stamp(const std::string& path) {
  if (path.empty()) return {};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "?";
  return std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
         std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
         std::to_string(st.st_mtim.tv_nsec) + ':' + std::to_string(st.st_ctim.tv_sec) + '.' +
         std::to_string(st.st_ctim.tv_nsec);
}

// The options and the stamps of the files they name.
using Key = std::tuple<std::string, std::string, std::string, std::string, bool, std::string>;

Key key_of(const TlsOptions& o) {
  return {o.ca_file,
          o.ca_dir,
          o.cert_file,
          o.key_file,
          o.insecure_skip_verify,
          stamp(o.ca_file) + '|' + stamp(o.ca_dir) + '|' + stamp(o.cert_file) + '|' +
              stamp(o.key_file)};
}

// Contexts are shared by the connections of one thread only: each client's loop has its own.
// OpenSSL allows an SSL_CTX in several threads, but what it changes in one during a handshake
// (cached certificate fields, the session cache) is guarded by its own atomics and locks, which
// ThreadSanitizer cannot see; one context per loop leaves nothing to share, for one CA load per
// client.
using Cache = std::map<Key, std::weak_ptr<TlsContext>>;

Cache& cache() {
  thread_local Cache contexts;
  return contexts;
}

bool is_ip(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// The typed error of a failed handshake or read, and a sentence of OpenSSL's reasons.
std::error_code classify(SSL* ssl, int ssl_error, bool handshake_done, std::string& detail) {
  long verify = SSL_get_verify_result(ssl);
  unsigned long last = ERR_peek_last_error();
  int reason = ERR_GET_REASON(last);
  std::string reasons = openssl_errors();
  if (!handshake_done && verify != X509_V_OK && SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE) {
    detail = std::string("TLS certificate verification failed: ") +
             X509_verify_cert_error_string(verify);
    switch (verify) {
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
      case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      case X509_V_ERR_CERT_UNTRUSTED:
        return make_error_code(Errc::tls_unknown_ca);
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return make_error_code(Errc::tls_name_mismatch);
      case X509_V_ERR_CERT_HAS_EXPIRED:
      case X509_V_ERR_CERT_NOT_YET_VALID:
        return make_error_code(Errc::tls_cert_expired);
      default:
        return make_error_code(Errc::tls_handshake_failed);
    }
  }
  if (ERR_GET_LIB(last) == ERR_LIB_SSL && (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
                                           reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)) {
    detail = "the server requires a client certificate (TLS --cert and --key): " + reasons;
    return make_error_code(Errc::tls_client_cert_required);
  }
  if (ssl_error == SSL_ERROR_ZERO_RETURN) {
    detail = "the server closed the TLS session";
    return make_error_code(handshake_done ? Errc::connection_lost : Errc::tls_handshake_failed);
  }
  if (ERR_GET_LIB(last) == ERR_LIB_SSL &&
      (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
       reason == SSL_R_UNKNOWN_PROTOCOL || reason == SSL_R_RECORD_LENGTH_MISMATCH)) {
    detail = "not a TLS server? (is this a plain redis:// port?): " + reasons;
    return make_error_code(Errc::tls_handshake_failed);
  }
  detail = (handshake_done ? "TLS error: " : "TLS handshake failed: ") + reasons;
  return make_error_code(handshake_done ? Errc::connection_lost : Errc::tls_handshake_failed);
}

class TlsPump final : public BytePump {
 public:
  TlsPump(std::shared_ptr<TlsContext> context, const std::string& host, bool verify_name,
          const std::string& server_name)
      : context_(std::move(context)) {
    ssl_ = SSL_new(context_->get());
    if (ssl_ == nullptr) return;
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    if (in == nullptr || out == nullptr) {
      BIO_free(in);
      BIO_free(out);
      SSL_free(ssl_);
      ssl_ = nullptr;
      return;
    }
    // An empty memory BIO means "no bytes yet", not end of file.
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl_, in, out);  // the SSL owns both now
    in_ = in;
    out_ = out;
    SSL_set_connect_state(ssl_);
    const std::string& name = server_name.empty() ? host : server_name;
    if (!is_ip(name)) SSL_set_tlsext_host_name(ssl_, name.c_str());
    if (verify_name) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      if (is_ip(name)) {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      } else {
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      }
    }
  }
  ~TlsPump() override { SSL_free(ssl_); }  // frees both BIOs

  std::error_code on_connected(Stream& stream) override {
    if (ssl_ == nullptr) {
      detail_ = "cannot create a TLS session: " + openssl_errors();
      return make_error_code(Errc::tls_handshake_failed);
    }
    return handshake(stream);
  }

  std::error_code on_received(const char* data, std::size_t len, Stream& stream) override {
    if (BIO_write(in_, data, static_cast<int>(len)) != static_cast<int>(len)) {
      detail_ = "TLS: out of memory";
      return make_error_code(Errc::connection_lost);
    }
    if (!done_) return handshake(stream);
    return read_plain(stream);
  }

  std::error_code on_flush(std::string& plain, Stream& stream) override {
    if (!plain.empty()) {
      ERR_clear_error();
      // Into a memory BIO, a write never waits: it takes everything at once.
      int n = SSL_write(ssl_, plain.data(), static_cast<int>(plain.size()));
      if (n <= 0) return fail(SSL_get_error(ssl_, n));
      plain.clear();
    }
    drain(stream);
    return {};
  }

  std::string error_detail() const override { return detail_; }

 private:
  std::error_code handshake(Stream& stream) {
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl_);
    drain(stream);  // the ClientHello, or the client's last flight, or an alert
    if (rc == 1) {
      done_ = true;
      stream.open();
      // Records that came with the server's last flight (TLS 1.3 session tickets).
      return read_plain(stream);
    }
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return {};
    return fail(err);
  }

  std::error_code read_plain(Stream& stream) {
    char buf[16 * 1024];
    for (;;) {
      ERR_clear_error();
      int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) {
        if (!stream.deliver(buf, static_cast<std::size_t>(n))) return {};
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      drain(stream);  // a key update's answer
      if (err == SSL_ERROR_WANT_READ) return {};
      return fail(err);
    }
  }

  std::error_code fail(int ssl_error) { return classify(ssl_, ssl_error, done_, detail_); }

  void drain(Stream& stream) {
    char* data = nullptr;
    long n = BIO_get_mem_data(out_, &data);
    if (n <= 0) return;
    stream.wire().append(data, static_cast<std::size_t>(n));
    (void)BIO_reset(out_);
  }

  std::shared_ptr<TlsContext> context_;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // socket -> OpenSSL
  BIO* out_ = nullptr;  // OpenSSL -> socket
  bool done_ = false;
  std::string detail_;
};

}  // namespace

std::shared_ptr<TlsContext> tls_context(const TlsOptions& o, std::error_code& error,
                                        std::string& message) {
  const Key key = key_of(o);
  Cache& c = cache();
  auto& slot = c[key];
  if (auto live = slot.lock()) return live;
  SSL_CTX* ctx = new_context(o, error, message);
  if (ctx == nullptr) return nullptr;
  auto made = std::make_shared<TlsContext>(ctx);
  slot = made;
  // Forget the entries of contexts that are gone.
  for (auto it = c.begin(); it != c.end();) it = it->second.expired() ? c.erase(it) : std::next(it);
  return made;
}

std::error_code check_tls_config(const Config& config, std::string& message) {
  bool any = false;
  for (const auto& n : config.nodes) any = any || n.tls;
  if (!any) return {};
  std::error_code error;
  if (!tls_context(config.tls, error, message)) return error;
  return {};
}

std::unique_ptr<BytePump> make_pump(const NodeAddress& node, const TlsOptions& options,
                                    std::error_code& error, std::string& message) {
  if (!node.tls) return make_plain_pump();
  auto context = tls_context(options, error, message);
  if (!context) return nullptr;
  return std::make_unique<TlsPump>(std::move(context), node.host, !options.insecure_skip_verify,
                                   options.server_name);
}

}  // namespace redlock::detail
