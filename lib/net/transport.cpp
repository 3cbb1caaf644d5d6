#include "transport.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "redlock/errors.hpp"

namespace redlock::detail {
namespace {

class PlainPump final : public BytePump {
 public:
  std::error_code on_connected(Stream& stream) override {
    stream.open();
    return {};
  }
  std::error_code on_received(const char* data, std::size_t len, Stream& stream) override {
    stream.deliver(data, len);
    return {};
  }
  std::error_code on_flush(std::string& plain, Stream& stream) override {
    // The buffers trade places: their capacity circulates, nothing is copied or allocated.
    std::string& wire = stream.wire();
    if (wire.empty()) {
      wire.swap(plain);
    } else {
      wire.append(plain);
      plain.clear();
    }
    return {};
  }
};

std::string uv_text(const char* what, int status) {
  return std::string(what) + uv_strerror(status);
}

}  // namespace

std::unique_ptr<BytePump> make_plain_pump() { return std::make_unique<PlainPump>(); }

// The transports of one loop with output queued in this loop turn, in the order they queued it,
// and the one idle handle that flushes them. Created with the loop's first transport, kept in
// uv_loop_t::data, closed with its last.
class WriteQueue {
 public:
  static WriteQueue* attach(uv_loop_t* loop) {
    auto* q = static_cast<WriteQueue*>(loop->data);
    if (q == nullptr) {
      q = new WriteQueue(loop);
      loop->data = q;
    }
    ++q->users_;
    return q;
  }

  void detach() {
    if (--users_ > 0) return;
    loop_->data = nullptr;  // a later transport starts a queue of its own
    uv_close(reinterpret_cast<uv_handle_t*>(&idle_),
             [](uv_handle_t* h) { delete static_cast<WriteQueue*>(h->data); });
  }

  void add(Transport* t) {
    queued_.push_back(t);
    // While it is started, the loop does not wait for I/O: output queued even in this very
    // phase is written before the loop sleeps.
    uv_idle_start(&idle_, &WriteQueue::on_idle);
  }

  void remove(Transport* t) {
    for (auto* list : {&queued_, &running_})
      std::replace(list->begin(), list->end(), t, static_cast<Transport*>(nullptr));
  }

 private:
  explicit WriteQueue(uv_loop_t* loop) : loop_(loop) {
    uv_idle_init(loop, &idle_);
    idle_.data = this;
  }

  static void on_idle(uv_idle_t* idle) {
    auto* self = static_cast<WriteQueue*>(idle->data);
    self->running_.swap(self->queued_);
    // What a flush causes (a failure whose callbacks send elsewhere) is queued for the next turn.
    for (std::size_t i = 0; i < self->running_.size(); ++i) {
      Transport* t = self->running_[i];
      if (t == nullptr) continue;
      t->queued_ = false;
      t->flush();
    }
    self->running_.clear();
    if (self->queued_.empty()) uv_idle_stop(idle);
  }

  uv_loop_t* loop_;
  uv_idle_t idle_{};
  std::vector<Transport*> queued_;
  std::vector<Transport*> running_;
  std::size_t users_ = 0;
};

Transport::Transport(std::unique_ptr<BytePump> pump, TransportEvents* events)
    : pump_(std::move(pump)), events_(events) {
  tcp_.data = connect_req_.data = write_req_.data = this;
}

Transport::~Transport() {
  if (queue_ != nullptr) queue_->detach();
}

Transport* Transport::open(uv_loop_t* loop, const sockaddr* address, std::unique_ptr<BytePump> pump,
                           TransportEvents* events, std::string& error) {
  auto* t = new Transport(std::move(pump), events);
  int rc = uv_tcp_init(loop, &t->tcp_);
  if (rc != 0) {
    delete t;
    error = uv_text("socket: ", rc);
    return nullptr;
  }
  t->queue_ = WriteQueue::attach(loop);
  uv_tcp_nodelay(&t->tcp_, 1);  // applied when the socket is created
  rc = uv_tcp_connect(&t->connect_req_, &t->tcp_, address, &Transport::on_connect);
  if (rc != 0) {
    t->events_ = nullptr;  // nothing is reported for a transport that was never opened
    t->close();
    error = uv_text("connect: ", rc);
    return nullptr;
  }
  return t;
}

void Transport::on_connect(uv_connect_t* req, int status) {
  auto* self = static_cast<Transport*>(req->data);
  if (status == UV_ECANCELED || self->closing_) return;
  if (status < 0) {
    self->fail(make_error_code(Errc::connect_failed), uv_text("connect: ", status));
    return;
  }
  self->connected_ = true;
  int rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&self->tcp_), &Transport::on_alloc,
                         &Transport::on_read);
  if (rc != 0) {
    self->fail(make_error_code(Errc::connect_failed), uv_text("read: ", rc));
    return;
  }
  if (auto ec = self->pump_->on_connected(*self)) {
    self->pump_failed(ec, Errc::connect_failed);
    return;
  }
  if (!self->closing_ && !self->wire_out_.empty()) self->flush_soon();
}

void Transport::open() {
  open_ = true;
  if (events_ != nullptr) events_->on_transport_open();
  // What waited for the connection (the session's opening commands, and callers' commands held
  // until then) goes out now, from the connect callback, as each connection opens.
  if (closing_ || failed_ || plain_out_.empty()) return;
  if (queued_) queue_->remove(this);
  queued_ = false;
  flush();
}

bool Transport::deliver(const char* data, std::size_t len) {
  if (closing_ || failed_) return false;
  if (events_ != nullptr) events_->on_transport_data(data, len);
  return !closing_ && !failed_;
}

void Transport::on_alloc(uv_handle_t* handle, std::size_t /*suggested*/, uv_buf_t* buf) {
  auto* self = static_cast<Transport*>(handle->data);
  *buf = uv_buf_init(self->read_buf_, sizeof self->read_buf_);
}

void Transport::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<Transport*>(stream->data);
  if (self->closing_ || self->failed_ || nread == 0) return;
  // Before the pump opened the stream (a TLS handshake), a failure is a failed connect.
  auto code = make_error_code(self->open_ ? Errc::connection_lost : Errc::connect_failed);
  if (nread == UV_EOF) {
    self->fail(code, "connection closed by the server");
    return;
  }
  if (nread < 0) {
    self->fail(code, uv_text("read: ", static_cast<int>(nread)));
    return;
  }
  auto ec = self->pump_->on_received(buf->base, static_cast<std::size_t>(nread), *self);
  if (self->closing_ || self->failed_) return;
  if (ec) {
    self->pump_failed(ec, self->open_ ? Errc::connection_lost : Errc::connect_failed);
    return;
  }
  if (!self->wire_out_.empty()) self->flush_soon();  // a pump's own answer (TLS)
}

void Transport::flush_soon() {
  if (closing_ || failed_ || queued_) return;
  queued_ = true;
  queue_->add(this);
}

void Transport::flush() {
  if (closing_ || failed_ || !connected_) return;  // kept until the stream can take it
  if (open_ && !plain_out_.empty()) {
    if (auto ec = pump_->on_flush(plain_out_, *this)) {
      pump_failed(ec, Errc::connection_lost);
      return;
    }
  }
  if (writing_ || wire_out_.empty()) return;  // on_write() comes back for the rest
  // Straight to the socket: one write(2), no write request, no change of poll interest. Only
  // what the socket cannot take now waits for it in a uv_write.
  uv_buf_t buf = uv_buf_init(wire_out_.data(), static_cast<unsigned>(wire_out_.size()));
  int n = uv_try_write(reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1);
  if (n == UV_EAGAIN) n = 0;
  if (n < 0) {
    fail(make_error_code(Errc::connection_lost), uv_text("write: ", n));
    return;
  }
  if (static_cast<std::size_t>(n) == wire_out_.size()) {
    wire_out_.clear();
    return;
  }
  wire_out_.erase(0, static_cast<std::size_t>(n));
  in_flight_.swap(wire_out_);
  buf = uv_buf_init(in_flight_.data(), static_cast<unsigned>(in_flight_.size()));
  int rc =
      uv_write(&write_req_, reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1, &Transport::on_write);
  if (rc != 0) {
    fail(make_error_code(Errc::connection_lost), uv_text("write: ", rc));
    return;
  }
  writing_ = true;
}

void Transport::on_write(uv_write_t* req, int status) {
  auto* self = static_cast<Transport*>(req->data);
  self->writing_ = false;
  self->in_flight_.clear();
  if (status == UV_ECANCELED || self->closing_ || self->failed_) return;
  if (status < 0) {
    self->fail(make_error_code(Errc::connection_lost), uv_text("write: ", status));
    return;
  }
  if (!self->wire_out_.empty() || !self->plain_out_.empty()) self->flush_soon();
}

void Transport::fail(std::error_code error, std::string_view detail) {
  if (failed_ || closing_) return;
  failed_ = true;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
  if (queued_) queue_->remove(this);
  queued_ = false;
  if (events_ != nullptr) events_->on_transport_error(error, detail);
}

void Transport::pump_failed(std::error_code pump_error, Errc otherwise) {
  if (closing_ || failed_) return;
  std::string detail = pump_->error_detail();
  if (detail.empty()) detail = pump_error.message();
  // What the pump could not send any more (a TLS alert) is lost with the connection: fine.
  fail(pump_error.category() == error_category() ? pump_error : make_error_code(otherwise), detail);
}

void Transport::close() {
  if (closing_) return;
  closing_ = true;
  if (queued_) queue_->remove(this);
  queued_ = false;
  // A connect or write still pending is cancelled first (its callback sees UV_ECANCELED); the
  // close callback follows in the loop's closing phase.
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &Transport::on_closed);
}

void Transport::on_closed(uv_handle_t* handle) {
  auto* self = static_cast<Transport*>(handle->data);
  TransportEvents* events = self->events_;
  delete self;
  if (events != nullptr) events->on_transport_closed();
}

}  // namespace redlock::detail
