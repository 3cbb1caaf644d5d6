// Recycled<T>: a base that gives T an operator new and delete of its own, which keep the blocks of
// freed Ts (up to kKeep per thread) for the thread's next new T. For an object the loop thread
// makes and drops once per lock (an InFlight, an AcquireJob, a release's ReleaseOp): with 64 locks
// in flight, malloc's per-thread cache (a few blocks per size) is always empty or full, and every
// such new and delete took malloc's slow paths. Only the memory is reused: each new T is
// constructed afresh. Under AddressSanitizer nothing is kept, so that a use after free is still
// caught.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace redlock::detail {

template <typename T>
class Recycled {
 public:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t kKeep = 0;
#else
  static constexpr std::size_t kKeep = 256;
#endif

  static void* operator new(std::size_t size) {
    // A class derived from T has another size: its blocks come from the heap.
    if (size == sizeof(T)) {
      if (auto* spare = spares(); spare != nullptr && !spare->empty()) {
        void* p = spare->back();
        spare->pop_back();
        return p;
      }
    }
    return ::operator new(size);
  }
  static void operator delete(void* p, std::size_t size) noexcept {
    if (size == sizeof(T)) {
      if (auto* spare = spares(); spare != nullptr && spare->size() < kKeep) {
        try {
          spare->push_back(p);
          return;
        } catch (...) {  // no memory for the list: the block goes back to the heap
        }
      }
    }
    ::operator delete(p);
  }

 protected:
  Recycled() = default;
  ~Recycled() = default;

 private:
  // The thread's spare blocks; null once the thread's statics are being destroyed (a T deleted
  // then goes back to the heap).
  struct Spares {
    std::vector<void*> blocks;
    ~Spares() {
      gone() = true;
      for (void* p : blocks) ::operator delete(p);
    }
  };
  static bool& gone() noexcept {
    thread_local bool g = false;  // trivially destructible: readable to the thread's very end
    return g;
  }
  static std::vector<void*>* spares() noexcept {
    if (kKeep == 0 || gone()) return nullptr;
    thread_local Spares s;
    return &s.blocks;
  }
};

}  // namespace redlock::detail
