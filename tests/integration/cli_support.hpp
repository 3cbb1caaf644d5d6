// What the CLI tests share: the `redlock` tool run as a process, and a fixture base.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "redis_server.hpp"

namespace redlock::test {

// The tool with `args` (and `env` entries "NAME=value" added to its environment).
inline ProcessResult cli(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), REDLOCK_CLI_PATH);
  return run_process(args, env);
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CliTest : public ::testing::Test {
 protected:
  // `run` passes these signals on; a test runner that ignores one would hand that on too.
  void SetUp() override {
    for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM}) ::signal(sig, SIG_DFL);
  }
  // The name acquire.lua gives the holder of `token`, worked out by a node itself.
  static std::string holder_name_on(const RedisServer& node, const std::string& token) {
    return node.command({"EVAL", "return string.sub(redis.sha1hex(ARGV[1]), 1, 16)", "0", token});
  }
};

}  // namespace redlock::test
