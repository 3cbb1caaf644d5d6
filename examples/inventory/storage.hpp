// The shop's own database: a Redis server of its own (never one of the lock nodes), spoken to
// with plain blocking hiredis. One Storage per thread: a hiredis context is not thread-safe.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "redlock/config.hpp"

namespace inventory {

// The keys of the scene in the storage Redis.
inline const std::string kStock = "shop:stock";        // items left (a number)
inline const std::string kSales = "shop:sales";        // the sales log: one entry per sale
inline const std::string kRequests = "shop:requests";  // purchase requests not yet served

class Storage {
 public:
  using Reply = std::unique_ptr<redisReply, void (*)(void*)>;

  // Connects (2 s timeout), then AUTH and SELECT as the address asks.
  explicit Storage(const redlock::NodeAddress& at) {
    timeval limit{2, 0};
    context_ = redisConnectWithTimeout(at.host.c_str(), at.port, limit);
    if (context_ == nullptr || context_->err != 0)
      throw std::runtime_error("storage " + at.to_string() + ": " +
                               (context_ ? context_->errstr : "out of memory"));
    redisSetTimeout(context_, limit);
    if (!at.password.empty()) {
      if (at.user.empty())
        command({"AUTH", at.password});
      else
        command({"AUTH", at.user, at.password});
    }
    if (at.db != 0) command({"SELECT", std::to_string(at.db)});
  }
  ~Storage() { redisFree(context_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Runs one command; throws std::runtime_error on a connection error or an error reply.
  Reply command(const std::vector<std::string>& argv) {
    std::vector<const char*> args;
    std::vector<std::size_t> lengths;
    for (const auto& a : argv) {
      args.push_back(a.data());
      lengths.push_back(a.size());
    }
    Reply reply(static_cast<redisReply*>(redisCommandArgv(context_, static_cast<int>(args.size()),
                                                          args.data(), lengths.data())),
                freeReplyObject);
    if (!reply) throw std::runtime_error("storage: " + std::string(context_->errstr));
    if (reply->type == REDIS_REPLY_ERROR)
      throw std::runtime_error("storage: " + argv.front() + ": " + reply->str);
    return reply;
  }

  // A command whose reply is a number, as an integer reply or as a string (GET).
  long long number(const std::vector<std::string>& argv) {
    Reply reply = command(argv);
    if (reply->type == REDIS_REPLY_INTEGER) return reply->integer;
    if (reply->type == REDIS_REPLY_STRING) return std::stoll(std::string(reply->str, reply->len));
    throw std::runtime_error("storage: " + argv.front() + ": no number in the reply");
  }

 private:
  redisContext* context_ = nullptr;
};

}  // namespace inventory
