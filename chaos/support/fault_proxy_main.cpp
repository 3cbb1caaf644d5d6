// redlock-fault-proxy: the FaultProxy as a program, for shell users and the benchmark script.
//
//   redlock-fault-proxy --target PORT [--listen PORT] [--mode MODE] [--delay-ms N]
//
// Prints its listen port on stdout (one line), then runs until SIGTERM or SIGINT. While it runs,
// lines on stdin change the mode: "pass", "delay 50", "blackhole", "drop_replies", "reset",
// "target PORT"; each is answered with "ok" or "error: ..." on stdout.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "fault_proxy.hpp"

namespace {

using redlock::chaos::FaultProxy;
using redlock::chaos::ProxyMode;

int usage(const char* why) {
  std::fprintf(stderr,
               "redlock-fault-proxy: %s\n"
               "usage: redlock-fault-proxy --target PORT [--listen PORT] "
               "[--mode pass|delay|blackhole|drop_replies|reset] [--delay-ms N]\n",
               why);
  return 2;
}

bool parse_number(const std::string& text, long max, long& out) {
  if (text.empty() || text.size() > 9) return false;
  for (char ch : text)
    if (ch < '0' || ch > '9') return false;
  out = std::stol(text);
  return out <= max;
}

// One control line from stdin; the answer to print.
std::string control(FaultProxy& proxy, const std::string& line) {
  std::istringstream in(line);
  std::string word, arg;
  in >> word >> arg;
  long n = 0;
  if (word == "target") {
    if (!parse_number(arg, 65535, n) || n == 0) return "error: target needs a port";
    proxy.set_target(static_cast<std::uint16_t>(n));
    return "ok";
  }
  ProxyMode mode;
  if (!redlock::chaos::parse_proxy_mode(word, mode)) return "error: unknown command '" + word + "'";
  if (!arg.empty() && !parse_number(arg, 3'600'000, n)) return "error: bad delay '" + arg + "'";
  proxy.set_mode(mode, std::chrono::milliseconds(n));
  return "ok";
}

}  // namespace

int main(int argc, char** argv) {
  long target = 0, listen = 0, delay_ms = 0;
  ProxyMode mode = ProxyMode::pass;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    std::string v = argv[++i];
    if (a == "--target") {
      if (!parse_number(v, 65535, target) || target == 0) return usage("bad --target");
    } else if (a == "--listen") {
      if (!parse_number(v, 65535, listen)) return usage("bad --listen");
    } else if (a == "--mode") {
      if (!redlock::chaos::parse_proxy_mode(v, mode)) return usage("bad --mode");
    } else if (a == "--delay-ms") {
      if (!parse_number(v, 3'600'000, delay_ms)) return usage("bad --delay-ms");
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  if (target == 0) return usage("--target is required");

  // Block the stop signals in every thread (the proxy's inherits this mask); read them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  int sig_fd = ::signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (sig_fd < 0) {
    std::perror("redlock-fault-proxy: signalfd");
    return 1;
  }

  try {
    FaultProxy proxy(static_cast<std::uint16_t>(target), static_cast<std::uint16_t>(listen), mode,
                     std::chrono::milliseconds(delay_ms));
    std::printf("%u\n", static_cast<unsigned>(proxy.port()));
    std::fflush(stdout);

    pollfd fds[2] = {{sig_fd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    std::string pending;
    for (;;) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        std::perror("redlock-fault-proxy: poll");
        return 1;
      }
      if (fds[0].revents & POLLIN) break;  // SIGTERM or SIGINT
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
        char buf[512];
        ssize_t n = (fds[1].revents & POLLNVAL) ? 0 : ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
          fds[1].fd = -1;  // stdin closed (or /dev/null): signals only from now on
          continue;
        }
        pending.append(buf, static_cast<std::size_t>(n));
        if (pending.size() > 4096) pending.clear();  // not a control line: ignore
        for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
          std::string line = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
          std::printf("%s\n", control(proxy, line).c_str());
          std::fflush(stdout);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redlock-fault-proxy: %s\n", e.what());
    return 1;
  }
  return 0;
}
