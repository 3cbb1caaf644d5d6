// A storage that fences: it accepts a write only when the writer's fencing token is greater than
// (or equal to, for the same holder's further writes) the highest token it has seen for that
// record, in one atomic step. Copy this next to the store you protect; any store with a
// compare-and-set works the same way (SQL: UPDATE ... WHERE fence <= :token).
//
// Here the store is a Redis server of its own (never one of the lock nodes), spoken to with
// plain blocking hiredis. One FencedStorage per thread: a hiredis context is not thread-safe.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fenced {

class FencedStorage {
 public:
  FencedStorage(const std::string& host, int port) {
    timeval limit{2, 0};
    context_ = redisConnectWithTimeout(host.c_str(), port, limit);
    if (context_ == nullptr || context_->err != 0)
      throw std::runtime_error("storage " + host + ":" + std::to_string(port) + ": " +
                               (context_ ? context_->errstr : "out of memory"));
    redisSetTimeout(context_, limit);
  }
  ~FencedStorage() { redisFree(context_); }
  FencedStorage(const FencedStorage&) = delete;
  FencedStorage& operator=(const FencedStorage&) = delete;

  // Writes `value` to `record` if `fencing_token` is not below the highest token seen for it;
  // true when written, false when refused (a newer holder has written since).
  bool write(const std::string& record, const std::string& value, std::uint64_t fencing_token) {
    // KEYS[1]: the record; KEYS[2]: the highest fencing token seen for it.
    // Tokens are compared as decimal strings, by length first: exact for every 64-bit value.
    static const char* script =
        "local seen = redis.call('GET', KEYS[2]) or '0' "
        "local t = ARGV[1] "
        "if #t < #seen or (#t == #seen and t < seen) then return 0 end "
        "redis.call('SET', KEYS[2], t) "
        "redis.call('SET', KEYS[1], ARGV[2]) "
        "return 1";
    std::string fence_key = record + ":fence-seen";
    std::string token = std::to_string(fencing_token);
    const char* argv[] = {"EVAL",        script,       "2", record.c_str(), fence_key.c_str(),
                          token.c_str(), value.c_str()};
    std::size_t lens[] = {4,
                          std::char_traits<char>::length(script),
                          1,
                          record.size(),
                          fence_key.size(),
                          token.size(),
                          value.size()};
    auto* reply = static_cast<redisReply*>(redisCommandArgv(context_, 7, argv, lens));
    if (reply == nullptr) throw std::runtime_error(std::string("storage: ") + context_->errstr);
    bool written = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
    bool error = reply->type == REDIS_REPLY_ERROR;
    std::string text = error ? std::string(reply->str, reply->len) : "";
    freeReplyObject(reply);
    if (error) throw std::runtime_error("storage: " + text);
    return written;
  }

 private:
  redisContext* context_ = nullptr;
};

}  // namespace fenced
