// The Redis protocol (RESP): commands are formatted here (append_command), replies are parsed by
// hiredis' reader (redisReader) into reply trees that functions of ours build (protocol.cpp) and
// ReplyFree frees. No I/O: bytes in, bytes out; the session (node.cpp) moves them through a
// Transport. One connection's reader on one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

struct redisReader;
struct redisReply;

namespace redlock::detail {

// The arguments of one command: pointers and lengths, with inline room for the common case
// (spills to the heap only beyond 16 arguments, e.g. a renewal batch of many locks).
class Argv {
 public:
  void push(const char* p, std::size_t n);
  void push(std::string_view s) { push(s.data(), s.size()); }
  int argc() const noexcept { return static_cast<int>(size_); }
  const char** argv() noexcept { return more_ptrs_.empty() ? ptrs_.data() : more_ptrs_.data(); }
  const std::size_t* lens() noexcept {
    return more_lens_.empty() ? lens_.data() : more_lens_.data();
  }

 private:
  static constexpr std::size_t kInline = 16;
  // Only the first size_ entries are ever read: left uninitialised (no 256 bytes to clear for
  // every command sent).
  std::array<const char*, kInline> ptrs_;
  std::array<std::size_t, kInline> lens_;
  std::vector<const char*> more_ptrs_;
  std::vector<std::size_t> more_lens_;
  std::size_t size_ = 0;
};

// Appends `argv` to `out` as one RESP command. False (nothing appended) when out of memory.
bool append_command(std::string& out, Argv& argv);

struct ReplyFree {
  void operator()(redisReply* reply) const noexcept;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

// Cuts a byte stream into replies, in order. One per connection: it keeps the bytes of a reply
// that has not fully arrived.
class ReplyReader {
 public:
  enum class Status { reply, more, error };
  // The most elements an array reply may announce (a renewal batch answers with 1,000 at most).
  static constexpr std::size_t kLongestArray = 1u << 20;

  ReplyReader();  // throws std::bad_alloc
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  // Takes bytes as they came from the server. False when out of memory.
  bool feed(const char* data, std::size_t len);
  // The next complete reply (`reply`), none yet (`more`: feed more bytes), or bytes that are
  // not RESP (`error`: see error_text(); the stream cannot be read any further).
  Status next(ReplyPtr& out);
  const char* error_text() const noexcept;

 private:
  redisReader* reader_;
};

// Maps a Redis error reply ("WRONGTYPE ...", "OOM ...") to our code.
std::error_code error_from_reply_text(std::string_view text) noexcept;

}  // namespace redlock::detail
