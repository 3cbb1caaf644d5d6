// Helpers of our own scenarios (lock_scenarios.cpp, semaphore.cpp): a Client for the nodes the
// way the README makes one, and the head and error fields of their JSON lines.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common.hpp"
#include "redlock/redlock.hpp"
#include "scenarios.hpp"

namespace bench {

// A Client of `ports` (Config::from_node_list), over TLS when use_tls() was called; `tune` may
// change the Config before the Client is made.
std::unique_ptr<redlock::Client> new_client(const std::vector<std::uint16_t>& ports,
                                            const std::function<void(redlock::Config&)>& tune = {});
// impl, label, scenario, nodes, quorum: the first fields of every line.
JsonLine head(const Options& o, const std::string& scenario, std::size_t nodes);
// {"name": count, ...}
std::string errors_json(const std::map<std::string, long long>& errors);
// redlock's errc name ("not_acquired"), or the message of another category.
std::string error_name(std::error_code ec);

}  // namespace bench
