// The record format of the chaos suite: one line per event, written by the workers and read by
// the runner.
//
//   <kind>\t<name>=<value>\t<name>=<value>...\n
//
// Kinds: `section` (one critical section), `fail` (an acquire that failed), `release` (a
// release that failed), `note` (anything else worth reading). Fields are named so that new ones
// (a fencing token, say) can be added without breaking readers: unknown names are ignored, a
// missing one reads as empty. Values never hold tabs or newlines. Times are CLOCK_MONOTONIC_RAW
// in nanoseconds, which every process on the machine reads alike and no clock shim touches.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::chaos {

// CLOCK_MONOTONIC_RAW now, in nanoseconds.
std::int64_t raw_now_ns();

struct Record {
  std::string kind;
  std::vector<std::pair<std::string, std::string>> fields;

  Record() = default;
  explicit Record(std::string kind_) : kind(std::move(kind_)) {}

  Record& add(std::string name, std::string value);
  Record& add(std::string name, std::int64_t value);

  // The value of `name`, or empty.
  const std::string& get(std::string_view name) const;
  // The value of `name` as an integer, or `fallback` when missing or not a number.
  std::int64_t get_int(std::string_view name, std::int64_t fallback = 0) const;

  // One line, with its newline.
  std::string to_line() const;
};

// Parses one line (with or without its newline); false when it holds no kind.
bool parse_record(std::string_view line, Record& out);

// Every record of a file; lines that do not parse are skipped (a worker killed mid-write).
std::vector<Record> read_records(const std::string& path);

// Appends one line with a single write(2) on an O_APPEND descriptor, so that several processes
// may share a file. Returns false on failure.
bool append_record(int fd, const Record& record);

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. False on failure.
bool write_all(int fd, std::string_view bytes);

}  // namespace redlock::chaos
