#include "context.hpp"

#include <algorithm>
#include <cstdio>

#include "../core/keys.hpp"
#include "notices.hpp"

namespace redlock::detail::proto {

Context::Context(const Config& config, std::size_t nodes, std::string turn_channel,
                 TokenSource tokens, Random random,
                 std::shared_ptr<const std::vector<std::string>> addresses)
    : config_(config),
      nodes_(nodes),
      turn_channel_(std::move(turn_channel)),
      tokens_(std::move(tokens)),
      random_(std::move(random)),
      addresses_(std::move(addresses)),
      notices_(std::make_unique<Notices>(*this)) {}

Context::~Context() = default;

Milliseconds Context::turn_length() const noexcept {
  return std::max(Milliseconds(100), config_.request_timeout);
}

std::string Context::new_ticket(std::uint64_t job, bool reader) const {
  return turn_channel_ + (reader ? "#r" : "#") + std::to_string(job) + "@" +
         std::to_string(turn_length().count());
}

std::vector<std::string> Context::keys_of(const std::vector<std::string>& resources) const {
  std::vector<std::string> keys;
  keys_into(resources, keys);
  return keys;
}

void Context::keys_into(const std::vector<std::string>& resources,
                        std::vector<std::string>& keys) const {
  keys.resize(resources.size());
  for (std::size_t i = 0; i < resources.size(); ++i)
    assign_lock_key(keys[i], config_.key_prefix, resources[i]);
}

std::vector<std::string> Context::held_keys(const Lock& lock) const {
  if (lock.permit < 0 || lock.resources.size() != 1) return keys_of(lock.resources);
  return {slot_key(lock_key(config_.key_prefix, lock.resources[0]),
                   static_cast<unsigned>(lock.permit))};
}

std::shared_ptr<Request> Context::request(Reused kind) {
  if (!reuse_requests_) return std::make_shared<Request>();
  // A kept request is free once the list holds its only reference (every node answered, the
  // Send is gone). A few looks at most: requests come back in about the order they went out.
  constexpr std::size_t kLooks = 4, kMostKept = 256;
  auto& [kept, next] = kept_[static_cast<std::size_t>(kind)];
  const std::size_t oldest = next;
  for (std::size_t i = 0; i < kLooks && i < kept.size(); ++i) {
    const auto& r = kept[next];
    next = (next + 1) % kept.size();
    if (r.use_count() == 1) return r;
  }
  auto fresh = std::make_shared<Request>();
  if (kept.size() < kMostKept) {
    // After the newest, before the oldest (still out), which the next look begins with.
    kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(oldest), fresh);
    next = (oldest + 1) % kept.size();
  }
  return fresh;
}

Waiter* Context::job(std::uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

std::string turn_channel_name(const std::string& key_prefix, std::uint64_t random) {
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(random));
  return key_prefix + "turn:" + digits;
}

}  // namespace redlock::detail::proto
