// Blocks of memory kept for reuse, per thread, for what the loop thread makes and drops once per
// lock. With 64 locks in flight, malloc's per-thread cache (a few blocks per size) is always
// empty or full for them, and every such new and delete took malloc's slow paths.
// - Recycled<T>: a base that gives T an operator new and delete of its own (an InFlight, an
//   AcquireJob, a release's ReleaseOp).
// - RecyclingAllocator<T>: an allocator for the nodes of a map or a shared_ptr's block (a job's
//   entry in the maps that find it, a callback's shared block).
// Only the memory is reused: each object is constructed afresh in it. A block freed on another
// thread than the one that took it is kept by the thread that frees it. Under AddressSanitizer
// nothing is kept, so that a use after free is still caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

// Under AddressSanitizer nothing is kept (a use after free must still be caught).
#if defined(__SANITIZE_ADDRESS__)
#define REDLOCK_RECYCLE_NOTHING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's way of saying it
#define REDLOCK_RECYCLE_NOTHING 1
#endif
#endif

namespace redlock::detail {

// Up to kKeep freed blocks of `Size` bytes, per thread, in a list threaded through the blocks
// themselves (each holds the next one's address). The thread's state is one plain thread_local:
// one lookup per take or give, no guard (in a shared library each thread_local lookup is a call).
template <std::size_t Size>
class BlockPool {
 public:
#if defined(REDLOCK_RECYCLE_NOTHING)
  static constexpr std::size_t kKeep = 0;
#else
  static constexpr std::size_t kKeep = 256;
#endif
  static_assert(Size >= sizeof(void*), "a kept block holds the next one's address");

  static void* take() {
    auto& l = local();
    if (l.head == nullptr) return ::operator new(Size);
    void* p = l.head;
    l.head = *static_cast<void**>(p);
    --l.count;
    return p;
  }
  static void give(void* p) noexcept {
    auto& l = local();
    if (l.gone || l.count >= kKeep || !armed(l)) {
      ::operator delete(p);
      return;
    }
    *static_cast<void**>(p) = l.head;
    l.head = p;
    ++l.count;
  }

 private:
  // Trivially destructible: readable to the thread's very end.
  struct Local {
    void* head = nullptr;  // the kept blocks
    std::size_t count = 0;
    bool armed = false;  // the Cleaner of this thread exists
    bool gone = false;   // the thread is ending: blocks go back to the heap
  };
  // Frees the thread's kept blocks when the thread ends.
  struct Cleaner {
    Cleaner() = default;
    Cleaner(const Cleaner&) = delete;
    Cleaner& operator=(const Cleaner&) = delete;
    ~Cleaner() {
      auto& l = local();
      l.gone = true;
      while (l.head != nullptr) {
        void* p = l.head;
        l.head = *static_cast<void**>(p);
        ::operator delete(p);
      }
      l.count = 0;
    }
  };
  static Local& local() noexcept {
    thread_local Local l;
    return l;
  }
  // Makes the thread's Cleaner at its first kept block; false if that failed (nothing is kept).
  static bool armed(Local& l) noexcept {
    if (l.armed) return true;
    try {
      thread_local Cleaner cleaner;
      (void)cleaner;
      l.armed = true;
    } catch (...) {
    }
    return l.armed;
  }
};

template <typename T>
class Recycled {
 public:
  static void* operator new(std::size_t size) {
    // A class derived from T has another size: its blocks come from the heap.
    return size == sizeof(T) ? BlockPool<sizeof(T)>::take() : ::operator new(size);
  }
  static void operator delete(void* p, std::size_t size) noexcept {
    if (size == sizeof(T))
      BlockPool<sizeof(T)>::give(p);
    else
      ::operator delete(p);
  }

 protected:
  Recycled() = default;
  ~Recycled() = default;
};

// One object at a time from the pool of its size (a map's node, a shared_ptr's block); arrays
// (a hash map's buckets) from the heap.
template <typename T>
struct RecyclingAllocator {
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  RecyclingAllocator() noexcept = default;
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std's

  T* allocate(std::size_t n) {
    if (n == 1) return static_cast<T*>(BlockPool<sizeof(T)>::take());
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n == 1)
      BlockPool<sizeof(T)>::give(p);
    else
      std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const RecyclingAllocator<U>&) const noexcept {
    return false;
  }
};

// A map by id (of a job, an operation) whose entries come and go once per lock.
template <typename V>
using RecyclingIdMap =
    std::unordered_map<std::uint64_t, V, std::hash<std::uint64_t>, std::equal_to<std::uint64_t>,
                       RecyclingAllocator<std::pair<const std::uint64_t, V>>>;

}  // namespace redlock::detail
