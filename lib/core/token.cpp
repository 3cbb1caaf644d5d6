#include "token.hpp"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace redlock::detail {
namespace {

std::error_code fill_random(void* buf, std::size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {errno, std::system_category()};
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return {};
}

// A thread's store of bytes from getrandom(2), so that a token costs one system call in 255
// rather than one each (a call is about 0.4 µs, a tenth of an uncontended acquire's client CPU
// at N = 1). The store is a page of its own marked MADV_WIPEONFORK: a forked child finds it
// zeroed, `left` 0, and draws afresh, so parent and child never hand out the same bytes (two
// holders with one token would release each other's locks). Where the kernel cannot wipe a page
// on fork (before Linux 4.14), or no page could be mapped, every token calls getrandom(2) as
// before. Bytes are taken from the end and wiped as they are handed out.
class RandomStore {
 public:
  RandomStore() {
    void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    if (madvise(p, kPage, MADV_WIPEONFORK) != 0) {
      munmap(p, kPage);
      return;
    }
    page_ = static_cast<Page*>(p);
  }
  ~RandomStore() {
    if (page_ != nullptr) munmap(page_, kPage);
  }
  RandomStore(const RandomStore&) = delete;
  RandomStore& operator=(const RandomStore&) = delete;

  std::error_code take(unsigned char* out, std::size_t len) {
    if (page_ == nullptr || len > sizeof page_->bytes) return fill_random(out, len);
    if (page_->left < len) {
      if (auto ec = fill_random(page_->bytes, sizeof page_->bytes)) return ec;
      page_->left = sizeof page_->bytes;
    }
    page_->left -= len;
    unsigned char* from = page_->bytes + page_->left;
    std::memcpy(out, from, len);
    std::memset(from, 0, len);
    return {};
  }

 private:
  static constexpr std::size_t kPage = 4096;
  struct Page {
    std::size_t left;  // zero in a forked child's copy: MADV_WIPEONFORK
    unsigned char bytes[kPage - sizeof(std::size_t)];
  };
  static_assert(sizeof(Page) <= kPage, "the store is one page");
  Page* page_ = nullptr;
};

std::error_code take_random(unsigned char* out, std::size_t len) {
  thread_local RandomStore store;
  return store.take(out, len);
}

}  // namespace

std::error_code new_token(std::string& out) {
  unsigned char bytes[16];
  if (auto ec = take_random(bytes, sizeof bytes)) return ec;
  static const char digits[] = "0123456789abcdef";
  out.resize(33);
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  out[32] = kNobodyWaits;
  return {};
}

std::uint64_t random_seed() noexcept {
  std::uint64_t seed = 0;
  if (fill_random(&seed, sizeof seed))
    seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return seed;
}

}  // namespace redlock::detail
