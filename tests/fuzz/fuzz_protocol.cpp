// Fuzzes our RESP layer (lib/net/protocol.hpp) both ways:
//   - the reader: bytes fed at once and the same bytes fed in pieces (as a socket cuts them) give
//     the same replies, deep-equal, in the same order, and the same end (more bytes wanted, or a
//     protocol error);
//   - the formatter: any argument list formatted by append_command reads back as one array of
//     exactly those bulk strings, with nothing left over (also past the 16 inline arguments).
// Input: byte 0 picks the mode and a separator, byte 1 the piece sizes; the rest is the data.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "net/protocol.hpp"

namespace redlock::detail {
namespace {

bool same_tree(const redisReply* a, const redisReply* b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case REDIS_REPLY_INTEGER:
      return a->integer == b->integer;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      return std::string_view(a->str, a->len) == std::string_view(b->str, b->len);
    case REDIS_REPLY_ARRAY:
      if (a->elements != b->elements) return false;
      for (std::size_t i = 0; i < a->elements; ++i)
        if (!same_tree(a->element[i], b->element[i])) return false;
      return true;
    default:
      return true;
  }
}

enum class End { more, error };

// Feeds `bytes` in pieces of 1 + (sizes' next 3 bits) bytes (all at once when `piece` is 0),
// collecting every reply; at most 256.
End read_all(std::string_view bytes, unsigned piece, std::vector<ReplyPtr>& out) {
  ReplyReader reader;
  std::size_t at = 0;
  unsigned bits = piece;
  for (;;) {
    std::size_t n = bytes.size() - at;
    if (piece != 0) {
      n = std::min<std::size_t>(n, 1 + (bits & 7));
      bits = (bits >> 3) | ((bits & 7) << 5);  // rotate through the byte
    }
    FUZZ_CHECK(reader.feed(bytes.data() + at, n), "the reader takes any bytes");
    at += n;
    for (;;) {
      ReplyPtr reply;
      auto status = reader.next(reply);
      if (status == ReplyReader::Status::error) return End::error;
      if (status == ReplyReader::Status::more) break;
      out.push_back(std::move(reply));
      if (out.size() >= 256) return End::more;
    }
    if (at == bytes.size()) return End::more;
  }
}

void check_reader(std::string_view bytes, unsigned piece) {
  if (redlock::fuzz::announces_huge_array(bytes)) return;
  std::vector<ReplyPtr> whole, pieces;
  End a = read_all(bytes, 0, whole);
  End b = read_all(bytes, piece == 0 ? 1 : piece, pieces);
  FUZZ_CHECK(a == b || whole.size() >= 256 || pieces.size() >= 256,
             "bytes in pieces end like bytes at once");
  std::size_t n = std::min(whole.size(), pieces.size());
  if (a == b && whole.size() < 256 && pieces.size() < 256)
    FUZZ_CHECK(whole.size() == pieces.size(), "bytes in pieces give as many replies");
  for (std::size_t i = 0; i < n; ++i)
    FUZZ_CHECK(same_tree(whole[i].get(), pieces[i].get()), "bytes in pieces give the same replies");
}

void check_formatter(std::string_view bytes, char separator) {
  std::vector<std::string_view> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= bytes.size() && args.size() < 40; ++i) {
    if (i == bytes.size() || bytes[i] == separator) {
      args.push_back(bytes.substr(start, i - start));
      start = i + 1;
    }
  }
  Argv argv;
  for (auto a : args) argv.push(a);
  FUZZ_CHECK(argv.argc() == static_cast<int>(args.size()), "Argv counts its arguments");
  std::string out = "+OK\r\n";  // appended after what is already in the buffer
  FUZZ_CHECK(append_command(out, argv), "append_command formats any arguments");
  ReplyReader reader;
  FUZZ_CHECK(reader.feed(out.data(), out.size()), "the reader takes the command");
  ReplyPtr first, command, rest;
  FUZZ_CHECK(reader.next(first) == ReplyReader::Status::reply && first->type == REDIS_REPLY_STATUS,
             "what was in the buffer is left alone");
  FUZZ_CHECK(reader.next(command) == ReplyReader::Status::reply, "the command reads back");
  FUZZ_CHECK(command->type == REDIS_REPLY_ARRAY && command->elements == args.size(),
             "one array of all arguments");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const redisReply* e = command->element[i];
    FUZZ_CHECK(e->type == REDIS_REPLY_STRING && std::string_view(e->str, e->len) == args[i],
               "each argument reads back as itself");
  }
  FUZZ_CHECK(reader.next(rest) == ReplyReader::Status::more, "nothing is left over");
}

}  // namespace
}  // namespace redlock::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace redlock::detail;
  if (size < 2) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  if (data[0] & 1)
    check_formatter(bytes, static_cast<char>(data[0] >> 1));
  else
    check_reader(bytes, data[1]);
  return 0;
}
