// Test support: a loopback server that is not Redis, for connection faults.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redlock::test {

// A loopback server that is not Redis: it counts the connections it accepts and either closes
// each at once (a crashing node), answers anything with bytes that are not RESP, accepts and
// never answers (a hung host), or forwards bytes both ways to a real server on `backend` (a
// cured node). set_mode() switches at any time and closes the connections of the old mode, so
// a client meets the new behaviour on its next connection. Mode::before_redis7 forwards too, but
// turns the GET option of a SET into an option Redis does not know, so that the server answers
// "ERR syntax error" as a server older than 7.0 does to SET with both NX and GET.
class FakeServer {
 public:
  enum class Mode { close_at_once, garbage, silent, proxy, before_redis7 };

  explicit FakeServer(Mode mode, std::uint16_t backend = 0) : mode_(mode), backend_(backend) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 128) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("cannot listen");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    for (const auto& c : conns_) close_pair(c);
    ::close(fd_);
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string url() const { return "redis://" + address(); }
  int accepted() const { return accepted_.load(); }

  // From the next connection on (the current ones are closed); `backend` for Mode::proxy.
  void set_mode(Mode mode, std::uint16_t backend = 0) {
    mode_ = mode;
    backend_ = backend;
    ++generation_;
  }

 private:
  struct Conn {
    int client = -1;
    int backend = -1;      // Mode::proxy and Mode::before_redis7 only
    bool rewrite = false;  // Mode::before_redis7
    std::string carry;     // the client's bytes held back: maybe the start of a GET argument
  };

  // The client's bytes with every argument "GET" made "GEX"; the end that may be the start of
  // one stays in `carry` until more bytes come (a whole command never ends that way).
  static std::string rewritten(Conn& c, const char* p, std::size_t n) {
    static const std::string kGet = "$3\r\nGET\r\n";
    std::string data = c.carry + std::string(p, n);
    for (auto pos = data.find(kGet); pos != std::string::npos;
         pos = data.find(kGet, pos + kGet.size()))
      data[pos + 6] = 'X';
    std::size_t keep = 0;
    for (std::size_t k = std::min(kGet.size() - 1, data.size()); k > 0 && keep == 0; --k)
      if (data.compare(data.size() - k, k, kGet, 0, k) == 0) keep = k;
    c.carry = data.substr(data.size() - keep);
    data.resize(data.size() - keep);
    return data;
  }

  static void close_pair(const Conn& c) {
    ::close(c.client);
    if (c.backend >= 0) ::close(c.backend);
  }

  static int connect_to(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }

  static bool write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
      auto w = ::write(fd, p, n);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }

  void serve() {
    int seen = generation_.load();
    while (!stop_) {
      if (generation_.load() != seen) {
        seen = generation_.load();
        for (const auto& c : conns_) close_pair(c);
        conns_.clear();
      }
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (const auto& c : conns_) {
        fds.push_back({c.client, POLLIN, 0});
        fds.push_back({c.backend, POLLIN, 0});  // a negative fd is ignored by poll
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      // Connections first (their indices in fds), then the listening socket, which may add one.
      std::vector<Conn> kept;
      for (std::size_t i = 0; i < conns_.size(); ++i) {
        Conn& c = conns_[i];
        bool open = true;
        char buf[16384];
        for (int side = 0; side < 2 && open; ++side) {
          const pollfd& p = fds[1 + 2 * i + static_cast<std::size_t>(side)];
          if (p.fd < 0 || p.revents == 0) continue;
          auto n = ::read(p.fd, buf, sizeof buf);
          if (n <= 0) {
            open = false;
          } else if (c.backend >= 0 && side == 0 && c.rewrite) {
            auto data = rewritten(c, buf, static_cast<std::size_t>(n));
            open = write_all(c.backend, data.data(), data.size());
          } else if (c.backend >= 0) {  // forward; anything else is read and dropped
            open = write_all(side == 0 ? c.backend : c.client, buf, static_cast<std::size_t>(n));
          }
        }
        if (open) {
          kept.push_back(c);
        } else {
          close_pair(c);
        }
      }
      conns_.swap(kept);
      if (fds[0].revents & POLLIN) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        ++accepted_;
        switch (mode_.load()) {
          case Mode::close_at_once:
            ::close(c);  // an orderly close, before reading anything
            break;
          case Mode::garbage: {
            static const char kGarbage[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
            (void)!::write(c, kGarbage, sizeof kGarbage - 1);
            conns_.push_back({c, -1, false, {}});  // kept until its client closes it
            break;
          }
          case Mode::silent:
            conns_.push_back({c, -1, false, {}});
            break;
          case Mode::proxy:
          case Mode::before_redis7: {
            int b = connect_to(backend_.load());
            if (b < 0) {
              ::close(c);
            } else {
              conns_.push_back({c, b, mode_.load() == Mode::before_redis7, {}});
            }
            break;
          }
        }
      }
    }
  }

  std::atomic<Mode> mode_;
  std::atomic<std::uint16_t> backend_;
  std::atomic<int> generation_{0};
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<Conn> conns_;  // server thread only
  std::atomic<int> accepted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace redlock::test
