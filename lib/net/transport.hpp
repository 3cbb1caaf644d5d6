// One TCP connection to a node, driven by libuv: connect, read, and the writes of one loop turn
// sent together. Between the socket and the session sits a BytePump: plain TCP passes bytes
// through unchanged; TLS (tls.hpp) is OpenSSL with memory BIOs in that place, on the loop
// thread, and nothing above or below it changes. Loop thread only.
//
// Lifecycle: connecting -> open -> closing -> closed. The owner calls close() exactly once; the
// object frees itself when libuv has closed its handle (always in a later loop phase), and then
// says so with TransportEvents::on_transport_closed().
//
// Writes: the transports of one loop that queued output during a loop turn are flushed together,
// in the order they queued it (a fan-out reaches node 0 first), by one idle handle just before
// the loop waits for I/O. That per-loop queue lives in uv_loop_t::data, which is the transport
// layer's: nothing else on the loop may use it.
#pragma once

#include <uv.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "redlock/errors.hpp"

namespace redlock::detail {

// What the session hears from its transport (the upward interface, owned here).
class TransportEvents {
 public:
  // Bytes may flow: TCP connected (TLS: handshake done).
  virtual void on_transport_open() = 0;
  // Bytes from the server, in order (after the pump: plaintext).
  virtual void on_transport_data(const char* data, std::size_t len) = 0;
  // The connection failed (Errc::connect_failed before it was open, Errc::connection_lost
  // after). Nothing more is read or written; the owner is expected to close() it.
  virtual void on_transport_error(std::error_code error, std::string_view detail) = 0;
  // After close(): the transport is gone. Called once, from a later loop phase, never from
  // inside another call of this interface.
  virtual void on_transport_closed() = 0;

 protected:
  ~TransportEvents() = default;
};

// The seam between the stream and the session: what the bytes pass through. One per connection.
class BytePump {
 public:
  // What a pump can do with the stream it sits on.
  class Stream {
   public:
    // Hands plaintext to the session. False when the session closed the stream meanwhile: stop.
    virtual bool deliver(const char* data, std::size_t len) = 0;
    // Bytes for the socket, written at the end of this loop turn.
    virtual std::string& wire() = 0;
    // The session may begin (plain: at once; TLS: when the handshake is done).
    virtual void open() = 0;

   protected:
    ~Stream() = default;
  };

  virtual ~BytePump() = default;
  // The TCP connection is established.
  virtual std::error_code on_connected(Stream& stream) = 0;
  // Bytes arrived from the socket.
  virtual std::error_code on_received(const char* data, std::size_t len, Stream& stream) = 0;
  // The session's bytes of this loop turn (`plain`, left empty) go to stream.wire().
  virtual std::error_code on_flush(std::string& plain, Stream& stream) = 0;
  // After one of the calls above returned an error: a sentence saying why (empty: the error's
  // message will do). An error of redlock's own category (Errc::tls_*) reaches the session as it
  // is; any other becomes connect_failed or connection_lost.
  virtual std::string error_detail() const { return {}; }
};

// Plain TCP: bytes pass unchanged, without a copy.
std::unique_ptr<BytePump> make_plain_pump();

class WriteQueue;

class Transport final : private BytePump::Stream {
 public:
  // Starts connecting to `address`. The transport then reports to `events` until it is closed.
  // Null when it could not even start (`error` says why): then nothing will be called.
  static Transport* open(uv_loop_t* loop, const sockaddr* address, std::unique_ptr<BytePump> pump,
                         TransportEvents* events, std::string& error);

  // The session's bytes. What is appended during a loop turn is written at its end, in one
  // write (the socket permitting), before the loop waits for I/O again. Kept until the stream
  // opens.
  std::string& output() noexcept { return plain_out_; }
  void flush_soon();

  // True once the TCP connection is made (a TLS handshake may still be under way).
  bool connected() const noexcept { return connected_; }

  // Stops every callback but on_transport_closed(); frees the object later. Safe from inside
  // a TransportEvents call.
  void close();

 private:
  friend class WriteQueue;
  Transport(std::unique_ptr<BytePump> pump, TransportEvents* events);
  ~Transport();

  bool deliver(const char* data, std::size_t len) override;
  std::string& wire() override { return wire_out_; }
  void open() override;

  void flush();
  void fail(std::error_code error, std::string_view detail);
  void pump_failed(std::error_code pump_error, Errc otherwise);

  static void on_connect(uv_connect_t* req, int status);
  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_closed(uv_handle_t* handle);

  std::unique_ptr<BytePump> pump_;
  TransportEvents* events_;
  WriteQueue* queue_ = nullptr;  // this loop's
  uv_tcp_t tcp_{};
  uv_connect_t connect_req_{};
  uv_write_t write_req_{};
  std::string plain_out_;  // the session's bytes, not yet through the pump
  std::string wire_out_;   // bytes for the socket, not yet written
  std::string in_flight_;  // what a uv_write still holds (the socket was full)
  bool queued_ = false;    // in queue_, to be flushed this loop turn
  bool connected_ = false;
  bool open_ = false;
  bool writing_ = false;
  bool failed_ = false;
  bool closing_ = false;
  static constexpr std::size_t kReadBuffer = 16 * 1024;
  char read_buf_[kReadBuffer];
};

}  // namespace redlock::detail
