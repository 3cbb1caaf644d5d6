// NetFault: nftables rules in a private network namespace, nft run as a bounded child process.
#include "netfault.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace redlock::chaos {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kNftTimeout = 5s;

struct NftResult {
  int exit_code = -1;  // -1: could not run, killed or timed out
  std::string output;  // stdout and stderr
};

// nft's absolute path, or "" when it is not installed. sbin directories first: they are often
// missing from a non-root PATH.
std::string find_nft() {
  std::vector<std::string> dirs = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t start = 0; start <= p.size();) {
      std::size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      if (end > start) dirs.push_back(p.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const auto& dir : dirs) {
    std::string candidate = dir + "/nft";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Runs nft with `args`, its output captured, killed after kNftTimeout.
NftResult run_nft(const std::vector<std::string>& args) {
  NftResult result;
  std::string nft = find_nft();
  if (nft.empty()) {
    result.output = "nft is not installed (Debian package nftables)";
    return result;
  }
  std::vector<std::string> argv_strings = {nft};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    result.output = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  auto deadline = Clock::now() + kNftTimeout;
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{out[0], POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timed_out = r == 0;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (result.output.size() < 64 * 1024) result.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  // The output is closed: nft is exiting (or was killed); reap it, bounded all the same.
  for (int i = 0; i < 500; ++i) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (i == 250) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(2ms);
  }
  if (timed_out) {
    result.output += "\n(nft timed out)";
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

void nft_or_throw(const std::vector<std::string>& args, const std::string& what) {
  NftResult r = run_nft(args);
  if (r.exit_code != 0)
    throw std::runtime_error("NetFault: " + what + " failed (nft exit " +
                             std::to_string(r.exit_code) + "): " + r.output);
}

std::string port_text(std::uint16_t port) { return std::to_string(port); }

}  // namespace

bool in_private_netns() {
  struct if_nameindex* names = ::if_nameindex();
  if (names == nullptr) return false;
  bool only_lo = true;
  int count = 0;
  for (struct if_nameindex* n = names; n->if_index != 0 && n->if_name != nullptr; ++n) {
    ++count;
    if (std::strcmp(n->if_name, "lo") != 0) only_lo = false;
  }
  ::if_freenameindex(names);
  return only_lo && count == 1;
}

bool nft_available() { return run_nft({"list", "tables"}).exit_code == 0; }

void bring_loopback_up() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &req) == 0;
  if (ok && !(req.ifr_flags & IFF_UP)) {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP);
    ok = ::ioctl(fd, SIOCSIFFLAGS, &req) == 0;
  }
  int err = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error(std::string("cannot set lo up: ") + std::strerror(err));
}

NetFault::NetFault() {
  if (!in_private_netns())
    throw std::runtime_error(
        "NetFault: refusing to add firewall rules outside a private network namespace (an "
        "interface besides lo exists here); run under `unshare -n`");
  static std::atomic<unsigned> counter{0};
  table_ = "redlock_chaos_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  // One transaction: the table, and a chain on the input hook (loopback packets pass output
  // then input; dropping on input looks like loss on the wire to both ends).
  nft_or_throw({"add table inet " + table_ + "\nadd chain inet " + table_ +
                " input { type filter hook input priority 0 ; policy accept ; }"},
               "creating table " + table_);
}

NetFault::~NetFault() { run_nft({"delete", "table", "inet", table_}); }

void NetFault::drop_to_port(std::uint16_t port) {
  add(port, {"tcp dport " + port_text(port) + " drop"});
}

void NetFault::drop_from_port(std::uint16_t port) {
  add(port, {"tcp sport " + port_text(port) + " drop"});
}

void NetFault::reset_port(std::uint16_t port) {
  add(port, {"tcp dport " + port_text(port) + " reject with tcp reset"});
}

void NetFault::loss(std::uint16_t port, int percent) {
  if (percent < 0 || percent > 100)
    throw std::invalid_argument("NetFault: loss percent not in 0..100");
  if (percent == 0) return;
  // numgen yields 0..99; nft rejects "< 100", and total loss needs no random number.
  std::string chance =
      percent == 100 ? "" : "numgen random mod 100 < " + std::to_string(percent) + " ";
  add(port, {"tcp dport " + port_text(port) + " " + chance + "drop",
             "tcp sport " + port_text(port) + " " + chance + "drop"});
}

void NetFault::heal(std::uint16_t port) {
  std::vector<Rule> kept;
  for (const Rule& r : rules_)
    if (r.port != port) kept.push_back(r);
  apply(kept);
}

void NetFault::heal_all() { apply({}); }

std::vector<std::string> NetFault::rules() const {
  std::vector<std::string> texts;
  for (const Rule& r : rules_) texts.push_back(r.text);
  return texts;
}

void NetFault::add(std::uint16_t port, std::vector<std::string> texts) {
  std::vector<Rule> next = rules_;
  for (auto& t : texts) next.push_back(Rule{port, std::move(t)});
  apply(next);
}

void NetFault::apply(const std::vector<Rule>& rules) {
  std::string script = "flush chain inet " + table_ + " input";
  for (const Rule& r : rules) script += "\nadd rule inet " + table_ + " input " + r.text;
  nft_or_throw({script}, "updating table " + table_);
  rules_ = rules;
}

}  // namespace redlock::chaos
