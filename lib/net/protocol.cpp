#include "protocol.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <charconv>
#include <cstring>
#include <new>

#include "redlock/errors.hpp"

namespace redlock::detail {
namespace {

std::size_t digits(std::size_t n) {
  std::size_t d = 1;
  for (; n >= 10; n /= 10) ++d;
  return d;
}

// "<tag><n>\r\n" at `p`; room for it was counted with digits().
char* put_header(char* p, char tag, std::size_t n) {
  *p++ = tag;
  p = std::to_chars(p, p + 20, n).ptr;
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

void Argv::push(const char* p, std::size_t n) {
  if (size_ < kInline) {
    ptrs_[size_] = p;
    lens_[size_] = n;
  } else {
    if (more_ptrs_.empty()) {
      more_ptrs_.assign(ptrs_.begin(), ptrs_.end());
      more_lens_.assign(lens_.begin(), lens_.end());
    }
    more_ptrs_.push_back(p);
    more_lens_.push_back(n);
  }
  ++size_;
}

bool append_command(std::string& out, Argv& argv) {
  // RESP: "*<argc>\r\n", then "$<len>\r\n<bytes>\r\n" per argument, sized first and then
  // written in place: no allocation once the buffer is warm. (hiredis' redisFormatCommandArgv
  // allocates per command and sprintf()s every length: about a sixth of the client's CPU in a
  // throughput profile.)
  const int argc = argv.argc();
  const char** ptrs = argv.argv();
  const std::size_t* lens = argv.lens();
  std::size_t size = 1 + digits(static_cast<std::size_t>(argc)) + 2;
  for (int i = 0; i < argc; ++i) size += 1 + digits(lens[i]) + 2 + lens[i] + 2;
  const std::size_t at = out.size();
  try {
    out.resize(at + size);
  } catch (const std::bad_alloc&) {
    return false;
  }
  char* p = out.data() + at;
  p = put_header(p, '*', static_cast<std::size_t>(argc));
  for (int i = 0; i < argc; ++i) {
    p = put_header(p, '$', lens[i]);
    std::memcpy(p, ptrs[i], lens[i]);
    p += lens[i];
    *p++ = '\r';
    *p++ = '\n';
  }
  return true;
}

void ReplyFree::operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }

namespace {

// hiredis' own reply builders (its defaultFunctions, reached through a reader it made).
const redisReplyObjectFunctions& hiredis_functions() {
  static const redisReplyObjectFunctions fns = [] {
    redisReader* r = redisReaderCreate();
    if (r == nullptr) throw std::bad_alloc();
    redisReplyObjectFunctions copy = *r->fn;
    redisReaderFree(r);
    return copy;
  }();
  return fns;
}

// An array header announces its length before any element arrives, and hiredis reserves room for
// all of them at once: a server that sends "*2147483647" would have 16 GB reserved per reply. No
// reply of ours has more elements than this; a longer one is a reader error, which closes the
// connection like any garbage.
void* create_bounded_array(const redisReadTask* task, int elements) {
  if (elements < 0 || static_cast<std::size_t>(elements) > ReplyReader::kLongestArray)
    return nullptr;  // hiredis: "out of memory", the reader stops
  return hiredis_functions().createArray(task, elements);
}

redisReplyObjectFunctions* bounded_functions() {
  static redisReplyObjectFunctions fns = [] {
    redisReplyObjectFunctions copy = hiredis_functions();
    copy.createArray = &create_bounded_array;
    return copy;
  }();
  return &fns;
}

}  // namespace

ReplyReader::ReplyReader() : reader_(redisReaderCreateWithFunctions(bounded_functions())) {
  if (reader_ == nullptr) throw std::bad_alloc();
}

ReplyReader::~ReplyReader() { redisReaderFree(reader_); }

bool ReplyReader::feed(const char* data, std::size_t len) {
  return redisReaderFeed(reader_, data, len) == REDIS_OK;
}

ReplyReader::Status ReplyReader::next(ReplyPtr& out) {
  void* reply = nullptr;
  if (redisReaderGetReply(reader_, &reply) != REDIS_OK) return Status::error;
  if (reply == nullptr) return Status::more;
  out.reset(static_cast<redisReply*>(reply));
  return Status::reply;
}

const char* ReplyReader::error_text() const noexcept { return reader_->errstr; }

std::error_code error_from_reply_text(std::string_view text) noexcept {
  struct Prefix {
    std::string_view prefix;
    Errc code;
  };
  static constexpr Prefix table[] = {
      {"WRONGTYPE", Errc::redis_wrongtype},
      {"OOM", Errc::redis_oom},
      {"READONLY", Errc::redis_readonly},
      {"NOPERM", Errc::redis_noperm},
      {"NOAUTH", Errc::redis_noauth},
      {"WRONGPASS", Errc::redis_auth_failed},
      {"LOADING", Errc::redis_loading},
      {"BUSY", Errc::redis_busy},
      {"NOSCRIPT", Errc::redis_noscript},
      {"MASTERDOWN", Errc::redis_masterdown},
      {"ERR invalid password", Errc::redis_auth_failed},
      {"ERR AUTH <password> called without", Errc::redis_auth_failed},
  };
  for (const auto& p : table)
    if (starts_with(text, p.prefix)) return make_error_code(p.code);
  // Redis 7 words an ACL denial inside a script this way, not as NOPERM.
  if (starts_with(text, "ERR The user executing the script can't"))
    return make_error_code(Errc::redis_noperm);
  return make_error_code(Errc::redis_error);
}

}  // namespace redlock::detail
