#include "server_probe.hpp"

#include <hiredis/hiredis.h>

#include <stdexcept>

#include "common.hpp"

namespace bench {
namespace {

std::string field(const std::string& info, const std::string& name) {
  auto pos = info.find(name + ":");
  if (pos == std::string::npos) return {};
  pos += name.size() + 1;
  auto end = info.find_first_of("\r\n", pos);
  return info.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

}  // namespace

redisContext* connect_local(std::uint16_t port, const std::string& who) {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr || c->err) {
    std::string why = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    throw std::runtime_error(who + ": cannot connect to 127.0.0.1:" + std::to_string(port) + ": " +
                             why);
  }
  return c;
}

ServerProbe::ServerProbe(std::uint16_t port) : port_(port), ctx_(connect_local(port, "probe")) {
  timeval tv{2, 0};
  redisSetTimeout(ctx_, tv);
  auto pid = field(info("server"), "process_id");
  pid_ = pid.empty() ? -1 : static_cast<pid_t>(std::stol(pid));
}

ServerProbe::~ServerProbe() {
  if (ctx_) redisFree(ctx_);
}

std::string ServerProbe::info(const char* section) {
  auto* r = static_cast<redisReply*>(redisCommand(ctx_, "INFO %s", section));
  std::string text;
  if (r != nullptr && r->type == REDIS_REPLY_STRING) text.assign(r->str, r->len);
  if (r != nullptr) freeReplyObject(r);
  return text;
}

long long ServerProbe::commands_processed() {
  auto v = field(info("stats"), "total_commands_processed");
  return v.empty() ? -1 : std::stoll(v);
}

long long ServerProbe::command_calls(const std::string& command) {
  auto v = field(info("commandstats"), "cmdstat_" + command);  // "calls=N,usec=..."
  if (v.rfind("calls=", 0) != 0) return v.empty() ? 0 : -1;
  return std::stoll(v.substr(6));
}

double ServerProbe::cpu_seconds() const { return process_cpu_seconds(pid_); }

double servers_cpu_seconds(const std::vector<pid_t>& pids) {
  double total = 0;
  for (auto pid : pids) {
    double s = process_cpu_seconds(pid);
    if (s < 0) return -1;
    total += s;
  }
  return total;
}

std::vector<pid_t> server_pids(const std::vector<std::uint16_t>& ports) {
  std::vector<pid_t> pids;
  for (auto p : ports) {
    try {
      pids.push_back(ServerProbe(p).pid());
    } catch (const std::exception&) {
      pids.push_back(-1);
    }
  }
  return pids;
}

}  // namespace bench
