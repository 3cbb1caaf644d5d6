// Packet-level faults with nftables, only inside a private network namespace.
//
// The chaos suite runs under `unshare -n` (only `lo` exists, no route leaves the machine, and
// every rule vanishes with the namespace). NetFault refuses to run anywhere else, so its rules
// can never touch the host's network. It owns one nftables table (inet family) with one chain
// on the input hook; each change rewrites that chain's rules in one nft transaction. nft runs
// as a child process (fork/exec), bounded by a timeout. Not thread-safe: one thread changes
// one NetFault.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::chaos {

bool in_private_netns();  // only `lo` exists
bool nft_available();     // nft installed and usable here
// Sets `lo` up (a fresh namespace starts with it down); throws std::runtime_error on failure.
void bring_loopback_up();

class NetFault {  // one nftables table of our own; the destructor deletes it
 public:
  NetFault();  // throws std::runtime_error when not in a private netns or nft fails
  ~NetFault();
  NetFault(const NetFault&) = delete;
  NetFault& operator=(const NetFault&) = delete;

  // All of these throw std::runtime_error when nft fails; rules for one port add up (in the
  // order given: the first that matches a packet decides).
  void drop_to_port(std::uint16_t port);       // requests to the node never arrive
  void drop_from_port(std::uint16_t port);     // the node's replies are lost
  void reset_port(std::uint16_t port);         // reject with tcp reset
  void loss(std::uint16_t port, int percent);  // random loss both ways (numgen random mod 100)
  void heal(std::uint16_t port);               // removes every rule for that port
  void heal_all();

  const std::string& table() const { return table_; }  // "redlock_chaos_<pid>_<n>"
  std::vector<std::string> rules() const;              // the rules in force, as given to nft

 private:
  struct Rule {
    std::uint16_t port;
    std::string text;
  };
  void add(std::uint16_t port, std::vector<std::string> texts);
  void apply(const std::vector<Rule>& rules);  // replaces the chain's rules, then rules_

  std::string table_;
  std::vector<Rule> rules_;
};

}  // namespace redlock::chaos
