#include "protocol.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <charconv>
#include <cstring>
#include <new>

#include "../core/recycled.hpp"
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

namespace {

// Replies are built by functions of our own rather than hiredis' (which callocs every reply and
// mallocs its string apart: two or three calls to malloc and as many to free per reply, about a
// twelfth of the client's instructions for an uncontended lock). A reply and its string share
// one block: [redisReply][the bytes, NUL]. A block of up to kPooled bytes (every reply of an
// acquire or a release) comes from the thread's kept blocks (core/recycled.hpp), bigger ones from
// the heap. Only free_reply() frees them, never freeReplyObject(): the reader calls it through
// its function table, and ReplyFree calls it.
// Two sizes are kept: a reply with no string or a short one (an integer, a nil, "OK", a renewal's
// vote), and one with a string of up to 79 bytes (a token, a digest).
constexpr std::size_t kSmall = 64, kPooled = 128;

void* take_block(std::size_t size) noexcept {
  try {
    if (size <= kSmall) return BlockPool<kSmall>::take();
    return size <= kPooled ? BlockPool<kPooled>::take() : ::operator new(size);
  } catch (...) {
    return nullptr;  // hiredis: "out of memory", the reader stops
  }
}

void give_block(void* p, std::size_t size) noexcept {
  if (size <= kSmall)
    BlockPool<kSmall>::give(p);
  else if (size <= kPooled)
    BlockPool<kPooled>::give(p);
  else
    ::operator delete(p);
}

bool has_string(int type) noexcept {
  return type == REDIS_REPLY_STRING || type == REDIS_REPLY_STATUS || type == REDIS_REPLY_ERROR;
}

std::size_t block_size(const redisReply* r) noexcept {
  return sizeof(redisReply) + (has_string(r->type) ? r->len + 1 : 0);
}

void free_reply(void* p) noexcept {
  auto* r = static_cast<redisReply*>(p);
  if (r == nullptr) return;
  if (r->type == REDIS_REPLY_ARRAY && r->element != nullptr) {
    // Elements the reader had not made yet are null (the list is zeroed when made).
    for (std::size_t i = 0; i < r->elements; ++i) free_reply(r->element[i]);
    give_block(r->element, r->elements * sizeof(redisReply*));
  }
  give_block(r, block_size(r));
}

// A zeroed reply of `type` in a block with room for `extra` bytes after it, hung in its parent
// array (the reader leaves that to the functions).
redisReply* make_reply(const redisReadTask* task, int type, std::size_t extra) noexcept {
  void* block = take_block(sizeof(redisReply) + extra);
  if (block == nullptr) return nullptr;
  auto* r = static_cast<redisReply*>(block);
  std::memset(r, 0, sizeof *r);
  r->type = type;
  if (task->parent != nullptr) {
    auto* parent = static_cast<redisReply*>(task->parent->obj);
    parent->element[task->idx] = r;
  }
  return r;
}

void* create_string(const redisReadTask* task, char* str, std::size_t len) {
  if (!has_string(task->type)) return nullptr;  // the reader never asks this
  auto* r = make_reply(task, task->type, len + 1);
  if (r == nullptr) return nullptr;
  r->str = reinterpret_cast<char*>(r + 1);
  std::memcpy(r->str, str, len);
  r->str[len] = '\0';
  r->len = len;
  return r;
}

// An array header announces its length before any element arrives, and the list of elements is
// made at once: a server that sends "*2147483647" would have 16 GB reserved per reply. No reply
// of ours has more elements than kLongestArray; a longer one is a reader error, which closes the
// connection like any garbage.
void* create_array(const redisReadTask* task, int elements) {
  if (elements < 0 || static_cast<std::size_t>(elements) > ReplyReader::kLongestArray)
    return nullptr;
  void* list = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(elements) * sizeof(redisReply*);
  if (elements > 0) {
    list = take_block(bytes);
    if (list == nullptr) return nullptr;
    std::memset(list, 0, bytes);
  }
  auto* r = make_reply(task, REDIS_REPLY_ARRAY, 0);
  if (r == nullptr) {
    if (list != nullptr) give_block(list, bytes);
    return nullptr;
  }
  r->element = static_cast<redisReply**>(list);
  r->elements = static_cast<std::size_t>(elements);
  return r;
}

void* create_integer(const redisReadTask* task, long long value) {
  auto* r = make_reply(task, REDIS_REPLY_INTEGER, 0);
  if (r != nullptr) r->integer = value;
  return r;
}

void* create_nil(const redisReadTask* task) { return make_reply(task, REDIS_REPLY_NIL, 0); }

redisReplyObjectFunctions* reply_functions() {
  static redisReplyObjectFunctions fns{&create_string, &create_array, &create_integer, &create_nil,
                                       &free_reply};
  return &fns;
}

}  // namespace

void ReplyFree::operator()(redisReply* reply) const noexcept { free_reply(reply); }

ReplyReader::ReplyReader() : reader_(redisReaderCreateWithFunctions(reply_functions())) {
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
