// TLS for `rediss://` nodes: OpenSSL between the socket and the session, as a BytePump
// (transport.hpp). The pump owns one SSL object and two memory BIOs: bytes from the socket go
// into one, bytes for the socket come out of the other, on the loop thread, with no thread or
// socket of OpenSSL's own. The handshake runs before the stream opens, so the session (AUTH,
// SELECT, the callers' commands) only ever sees a verified connection; a failure is a typed
// TLS error (Errc::tls_*), never a fall-back to plain text.
//
// The OpenSSL context (trust store, client certificate, verification mode) is shared: one per
// distinct TlsOptions in the process, kept while a connection or a caller holds it.
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include "redlock/config.hpp"
#include "transport.hpp"

namespace redlock::detail {

class TlsContext;

// The context for `options` shared by the connections of the calling thread (a client's loop),
// loaded now if none is live or one of its files changed since. Null on failure, with
// Errc::invalid_config and `message` naming the file and OpenSSL's reason.
std::shared_ptr<TlsContext> tls_context(const TlsOptions& options, std::error_code& error,
                                        std::string& message);

// Checks, when the client is created, that the TLS files of `config` load (only if it has a
// `rediss://` node). Same contract as redlock::validate().
std::error_code check_tls_config(const Config& config, std::string& message);

// For a node that is `rediss://`: a TLS pump for one connection to it (SNI and the name
// checked: options.server_name, or else the node's host), or null with `error` / `message` set (the
// context failed to load). For a `redis://` node: the plain pump.
std::unique_ptr<BytePump> make_pump(const NodeAddress& node, const TlsOptions& options,
                                    std::error_code& error, std::string& message);

}  // namespace redlock::detail
