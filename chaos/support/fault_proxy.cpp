// The fault proxy's epoll loop. Everything below FaultProxy's public members runs on the
// proxy's own thread; the members shared with other threads are atomics or guarded by
// mode_mutex_.
#include "fault_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace redlock::chaos {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadSize = 64 * 1024;
constexpr std::size_t kMaxQueued = 4u << 20;  // per direction; reading pauses above it
constexpr int kMaxReadsPerEvent = 16;         // fairness between connections
constexpr int kMaxAcceptsPerEvent = 64;
constexpr std::uint64_t kListenTag = 0;
constexpr std::uint64_t kWakeTag = 1;

constexpr std::uint32_t kUnregistered = 0xffffffffu;  // an fd not yet added to epoll

constexpr int kClient = 0;
constexpr int kServer = 1;

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error("FaultProxy: " + what + ": " + std::strerror(errno));
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// close() that sends a TCP reset instead of a FIN.
void close_with_reset(int fd) {
  linger l{};
  l.l_onoff = 1;
  l.l_linger = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// Whether data read from `side` travels on in `mode`.
bool forwards(ProxyMode mode, int side) {
  switch (mode) {
    case ProxyMode::pass:
    case ProxyMode::delay:
      return true;
    case ProxyMode::drop_replies:
      return side == kClient;
    case ProxyMode::blackhole:
    case ProxyMode::reset:
      return false;
  }
  return false;
}

struct Chunk {
  Clock::time_point due;
  std::string data;
};

// Bytes read on one side, waiting to be written on the other, in the order they were read.
struct Direction {
  std::deque<Chunk> queue;
  std::size_t offset = 0;  // bytes of queue.front() already written
  std::size_t bytes = 0;   // unwritten bytes in the queue
  bool eof = false;        // the source side ended (EOF or error): nothing more to read
  bool blocked = false;    // the last write to the destination would have blocked

  bool empty() const { return queue.empty(); }
  void clear() {
    queue.clear();
    offset = 0;
    bytes = 0;
    blocked = false;
  }
};

struct Conn {
  std::uint64_t id = 0;
  int fd[2] = {-1, -1};  // client side, server side (-1 once closed)
  std::uint32_t interest[2] = {kUnregistered, kUnregistered};  // what epoll watches on each fd
  bool connecting = false;  // the server side's connect is in progress
  bool shut_sent = false;   // the client's EOF was passed on (shutdown of the server side)
  bool dead = false;        // closed; erased at the end of the loop turn
  Direction dir[2];         // dir[s]: read from side s, written to side 1 - s
};

std::uint64_t tag_of(std::uint64_t id, int side) { return (id << 1) | static_cast<unsigned>(side); }

}  // namespace

const char* to_string(ProxyMode mode) {
  switch (mode) {
    case ProxyMode::pass:
      return "pass";
    case ProxyMode::delay:
      return "delay";
    case ProxyMode::blackhole:
      return "blackhole";
    case ProxyMode::drop_replies:
      return "drop_replies";
    case ProxyMode::reset:
      return "reset";
  }
  return "?";
}

bool parse_proxy_mode(const std::string& text, ProxyMode& mode) {
  for (ProxyMode m : {ProxyMode::pass, ProxyMode::delay, ProxyMode::blackhole,
                      ProxyMode::drop_replies, ProxyMode::reset}) {
    if (text == to_string(m)) {
      mode = m;
      return true;
    }
  }
  return false;
}

// The proxy thread's state: the connections and the mode as last applied to them.
class FaultProxy::Loop {
 public:
  explicit Loop(FaultProxy& proxy) : p_(proxy) {}
  ~Loop() {
    for (auto& entry : conns_) close_conn(*entry.second, false);
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void run() {
    std::vector<epoll_event> events(64);
    while (!p_.stop_.load()) {
      int n =
          ::epoll_wait(p_.epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms());
      if (n < 0 && errno != EINTR) {
        std::perror("FaultProxy: epoll_wait");
        return;
      }
      now_ = Clock::now();
      if (accept_paused_ && now_ >= accept_resume_at_) watch_listener(true);
      apply_mode();  // checked again before every accept, read and write: see apply_mode()
      for (int i = 0; i < n; ++i) {
        std::uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
          accept_all();
        } else if (tag == kWakeTag) {
          std::uint64_t count = 0;
          [[maybe_unused]] ssize_t r = ::read(p_.wake_fd_, &count, sizeof count);
        } else {
          auto it = conns_.find(tag >> 1);
          if (it != conns_.end() && !it->second->dead)
            on_event(*it->second, static_cast<int>(tag & 1), events[i].events);
        }
      }
      now_ = Clock::now();
      for (auto& entry : conns_) service(*entry.second);
      for (auto it = conns_.begin(); it != conns_.end();) {
        it = it->second->dead ? conns_.erase(it) : std::next(it);
      }
    }
  }

 private:
  // Milliseconds until the earliest held-back chunk is due (-1: none), rounded up so that a
  // wake-up never comes before the chunk is due.
  int timeout_ms() const {
    bool any = false;
    Clock::time_point earliest{};
    for (const auto& entry : conns_) {
      const Conn& c = *entry.second;
      for (int s = 0; s < 2; ++s) {
        const Direction& d = c.dir[s];
        if (d.empty() || d.blocked || !writable(c, 1 - s)) continue;
        if (!any || d.queue.front().due < earliest) earliest = d.queue.front().due;
        any = true;
      }
    }
    if (accept_paused_ && (!any || accept_resume_at_ < earliest)) {
      earliest = accept_resume_at_;
      any = true;
    }
    if (!any) return -1;
    auto left = earliest - Clock::now();
    if (left <= Clock::duration::zero()) return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<long long>(ms, 60'000));
  }

  static bool writable(const Conn& c, int side) {
    return c.fd[side] >= 0 && !(side == kServer && c.connecting);
  }

  // Applies the latest set_mode() to every connection, if it changed since last time. Called
  // before each accept, read and flush (one atomic load when nothing changed), so that whatever
  // happens on a socket after set_mode() returned is handled in the new mode.
  void apply_mode() {
    std::uint64_t version = p_.mode_version_.load();
    if (version == applied_version_) return;
    {
      std::lock_guard<std::mutex> lock(p_.mode_mutex_);
      mode_ = p_.mode_;
      delay_ = p_.delay_;
      applied_version_ = p_.mode_version_.load();
    }
    for (auto& entry : conns_) {
      Conn& c = *entry.second;
      if (c.dead) continue;
      if (mode_ == ProxyMode::reset) {
        close_conn(c, true);
        continue;
      }
      for (int s = 0; s < 2; ++s) {
        if (!forwards(mode_, s)) {
          c.dir[s].clear();
        } else if (mode_ == ProxyMode::pass) {
          for (Chunk& chunk : c.dir[s].queue) chunk.due = std::min(chunk.due, now_);
        }
      }
    }
  }

  void accept_all() {
    for (int i = 0; i < kMaxAcceptsPerEvent; ++i) {
      apply_mode();  // a connection made after set_mode() returned must see the new mode
      int fd = ::accept4(p_.listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of descriptors (or worse): the pending connection stays in the backlog and the
        // listener stays readable. Stop watching it for a while instead of spinning.
        if (!accept_failing_) std::perror("FaultProxy: accept4 (retried every 100 ms)");
        accept_failing_ = true;
        watch_listener(false);
        accept_resume_at_ = now_ + std::chrono::milliseconds(100);
        return;
      }
      ++p_.accepted_;
      accept_failing_ = false;
      if (mode_ == ProxyMode::reset) {
        close_with_reset(fd);
        continue;
      }
      set_nodelay(fd);
      auto conn = std::make_unique<Conn>();
      Conn& c = *conn;
      c.id = next_id_++;
      c.fd[kClient] = fd;
      ++p_.open_;
      conns_.emplace(c.id, std::move(conn));
      connect_server(c);
      update_interest(c);
    }
  }

  void watch_listener(bool on) {
    epoll_event ev{};
    ev.events = on ? static_cast<std::uint32_t>(EPOLLIN) : 0u;
    ev.data.u64 = kListenTag;
    ::epoll_ctl(p_.epoll_fd_, EPOLL_CTL_MOD, p_.listen_fd_, &ev);
    accept_paused_ = !on;
  }

  void connect_server(Conn& c) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      server_gone(c);
      return;
    }
    set_nodelay(fd);
    sockaddr_in addr = loopback(p_.target_port_.load());
    c.fd[kServer] = fd;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return;
    if (errno == EINPROGRESS) {
      c.connecting = true;
      return;
    }
    server_gone(c);  // refused at once
  }

  void on_event(Conn& c, int side, std::uint32_t events) {
    if (side == kServer && c.connecting) {
      if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd[kServer], SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        server_gone(c);
        return;
      }
      c.connecting = false;
      return;
    }
    if (events & EPOLLOUT) c.dir[1 - side].blocked = false;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) read_side(c, side);
    // A reset or a socket shut both ways: what could be read was read above.
    if (!c.dead && c.fd[side] >= 0 && (events & (EPOLLERR | EPOLLHUP))) {
      if (side == kServer) {
        server_gone(c);
      } else {
        close_conn(c, false);
      }
    }
  }

  void read_side(Conn& c, int side) {
    Direction& d = c.dir[side];
    char buf[kReadSize];
    for (int i = 0; i < kMaxReadsPerEvent && !d.eof && c.fd[side] >= 0; ++i) {
      if (d.bytes >= kMaxQueued) return;
      apply_mode();  // data sent after set_mode() returned must see the new mode
      if (c.dead) return;
      ssize_t n = ::recv(c.fd[side], buf, sizeof buf, 0);
      if (n > 0) {
        if (!forwards(mode_, side)) continue;  // read and discarded
        auto held = mode_ == ProxyMode::delay ? delay_ : std::chrono::milliseconds(0);
        d.queue.push_back(Chunk{now_ + held, std::string(buf, static_cast<std::size_t>(n))});
        d.bytes += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      // EOF or an error.
      if (side == kServer) {
        server_gone(c);
      } else if (n < 0) {
        close_conn(c, false);  // the client failed: nobody is left to serve
      } else {
        d.eof = true;  // passed on by service() once what it sent before was written
      }
      return;
    }
  }

  // The server side ended (refused, closed, failed): close it; the client side follows once the
  // server's last data was forwarded (service()).
  void server_gone(Conn& c) {
    if (c.fd[kServer] >= 0) {
      ::epoll_ctl(p_.epoll_fd_, EPOLL_CTL_DEL, c.fd[kServer], nullptr);
      ::close(c.fd[kServer]);
      c.fd[kServer] = -1;
    }
    c.interest[kServer] = kUnregistered;
    c.connecting = false;
    c.dir[kServer].eof = true;
    c.dir[kClient].clear();  // undeliverable
  }

  // Writes what is due from dir[side] to the other side.
  void flush(Conn& c, int side) {
    Direction& d = c.dir[side];
    int to = 1 - side;
    if (!writable(c, to)) return;
    while (!d.empty() && !d.blocked && d.queue.front().due <= now_) {
      Chunk& front = d.queue.front();
      ssize_t n = ::send(c.fd[to], front.data.data() + d.offset, front.data.size() - d.offset,
                         MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          d.blocked = true;
          return;
        }
        if (to == kServer) {
          server_gone(c);
        } else {
          close_conn(c, false);
        }
        return;
      }
      d.offset += static_cast<std::size_t>(n);
      d.bytes -= static_cast<std::size_t>(n);
      if (d.offset == front.data.size()) {
        d.queue.pop_front();
        d.offset = 0;
      }
    }
  }

  void service(Conn& c) {
    apply_mode();
    if (c.dead) return;
    flush(c, kClient);
    if (c.dead) return;
    flush(c, kServer);
    if (c.dead) return;
    // The client ended: pass its EOF on once its data was written (or discarded).
    if (c.dir[kClient].eof && c.dir[kClient].empty() && !c.shut_sent) {
      if (mode_ == ProxyMode::blackhole || c.fd[kServer] < 0 || c.connecting) {
        close_conn(c, false);
        return;
      }
      ::shutdown(c.fd[kServer], SHUT_WR);
      c.shut_sent = true;
    }
    // The server ended: so does the client, after the server's last data; not in blackhole mode.
    if (c.dir[kServer].eof && c.dir[kServer].empty() && mode_ != ProxyMode::blackhole) {
      close_conn(c, false);
      return;
    }
    update_interest(c);
  }

  void update_interest(Conn& c) {
    for (int s = 0; s < 2; ++s) {
      if (c.fd[s] < 0) continue;
      std::uint32_t want = 0;
      if (s == kServer && c.connecting) {
        want = EPOLLOUT;
      } else {
        if (!c.dir[s].eof && c.dir[s].bytes < kMaxQueued) want |= EPOLLIN;
        if (c.dir[1 - s].blocked) want |= EPOLLOUT;
      }
      if (want == c.interest[s] && c.interest[s] != kUnregistered) continue;
      epoll_event ev{};
      ev.events = want;
      ev.data.u64 = tag_of(c.id, s);
      int op = c.interest[s] == kUnregistered ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
      if (::epoll_ctl(p_.epoll_fd_, op, c.fd[s], &ev) == 0) c.interest[s] = want;
    }
  }

  void close_conn(Conn& c, bool with_reset) {
    if (c.dead) return;
    for (int s = 0; s < 2; ++s) {
      if (c.fd[s] < 0) continue;
      ::epoll_ctl(p_.epoll_fd_, EPOLL_CTL_DEL, c.fd[s], nullptr);
      if (with_reset) {
        close_with_reset(c.fd[s]);
      } else {
        ::close(c.fd[s]);
      }
      c.fd[s] = -1;
    }
    c.dead = true;
    --p_.open_;
  }

  FaultProxy& p_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::uint64_t next_id_ = 1;  // tags 0 and 1 are the listener and the eventfd: ids start at 1
  std::uint64_t applied_version_ = ~std::uint64_t{0};
  ProxyMode mode_ = ProxyMode::pass;
  std::chrono::milliseconds delay_{0};
  Clock::time_point now_ = Clock::now();
  bool accept_paused_ = false;   // the listener is unwatched until accept_resume_at_
  bool accept_failing_ = false;  // reported once until an accept succeeds
  Clock::time_point accept_resume_at_{};
};

FaultProxy::FaultProxy(std::uint16_t target_port, std::uint16_t listen_port)
    : FaultProxy(target_port, listen_port, ProxyMode::pass) {}

FaultProxy::FaultProxy(std::uint16_t target_port, std::uint16_t listen_port, ProxyMode mode,
                       std::chrono::milliseconds delay)
    : target_port_(target_port),
      mode_(mode),
      delay_(std::max(delay, std::chrono::milliseconds(0))) {
  try {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw sys_error("socket");
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr = loopback(listen_port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw sys_error("cannot listen on 127.0.0.1:" + std::to_string(listen_port));
    if (::listen(listen_fd_, 128) != 0) throw sys_error("listen");
    socklen_t len = sizeof addr;
    if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw sys_error("getsockname");
    port_ = ntohs(addr.sin_port);

    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw sys_error("eventfd");
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw sys_error("epoll_create1");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenTag;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) throw sys_error("epoll_ctl");
    ev.data.u64 = kWakeTag;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) throw sys_error("epoll_ctl");
  } catch (...) {
    for (int fd : {listen_fd_, wake_fd_, epoll_fd_})
      if (fd >= 0) ::close(fd);
    throw;
  }
  thread_ = std::thread([this] {
    try {
      Loop loop(*this);
      loop.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "FaultProxy: the proxy thread stopped: %s\n", e.what());
    }
  });
}

FaultProxy::~FaultProxy() {
  stop_.store(true);
  wake();
  if (thread_.joinable()) thread_.join();
  ::close(epoll_fd_);
  ::close(wake_fd_);
  ::close(listen_fd_);
}

void FaultProxy::wake() const {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
}

void FaultProxy::set_mode(ProxyMode mode, std::chrono::milliseconds delay) {
  {
    std::lock_guard<std::mutex> lock(mode_mutex_);
    mode_ = mode;
    delay_ = delay < std::chrono::milliseconds(0) ? std::chrono::milliseconds(0) : delay;
    ++mode_version_;
  }
  wake();
}

ProxyMode FaultProxy::mode() const {
  std::lock_guard<std::mutex> lock(mode_mutex_);
  return mode_;
}

std::chrono::milliseconds FaultProxy::delay() const {
  std::lock_guard<std::mutex> lock(mode_mutex_);
  return delay_;
}

void FaultProxy::set_target(std::uint16_t target_port) { target_port_.store(target_port); }

}  // namespace redlock::chaos
