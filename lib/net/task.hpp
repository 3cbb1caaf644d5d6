// A task for the loop thread: a move-only `void()` callable that keeps a small callable in place.
// std::function allocates for any callable larger than two pointers, and every asynchronous call
// posts one (its request, or its lock, and its callback: about 112 bytes): two allocations per
// lock in a throughput profile. A callable of up to kInline bytes that moves without throwing
// lives inside the task; a larger one on the heap, as std::function would keep it.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace redlock::detail {

class Task {
 public:
  static constexpr std::size_t kInline = 128;

  Task() noexcept = default;
  Task(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): as std::function

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, Task> && std::is_invocable_v<D&>>>
  Task(F&& f) {  // NOLINT(google-explicit-constructor): as std::function
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D>) {
      if (f == nullptr) return;
    } else if constexpr (std::is_constructible_v<bool, const D&>) {
      if (!static_cast<bool>(f)) return;  // an empty std::function stays empty here too
    }
    if constexpr (fits<D>()) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(buf_)) D*(new D(std::forward<F>(f)));
      ops_ = &kHeapOps<D>;
    }
  }

  Task(Task&& other) noexcept { take(other); }
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Task& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  void operator()() {
    if (ops_ == nullptr) throw std::bad_function_call();
    ops_->call(buf_);
  }

 private:
  struct Ops {
    void (*call)(void* self);
    void (*move)(void* to, void* from) noexcept;  // constructs `to` from `from`, destroys `from`
    void (*destroy)(void* self) noexcept;
  };

  template <typename D>
  static constexpr bool fits() {
    return sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<D>;
  }

  template <typename D>
  static constexpr Ops kInlineOps{[](void* self) { (*static_cast<D*>(self))(); },
                                  [](void* to, void* from) noexcept {
                                    ::new (to) D(std::move(*static_cast<D*>(from)));
                                    static_cast<D*>(from)->~D();
                                  },
                                  [](void* self) noexcept { static_cast<D*>(self)->~D(); }};

  template <typename D>
  static constexpr Ops kHeapOps{
      [](void* self) { (**static_cast<D**>(self))(); },
      [](void* to, void* from) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* self) noexcept { delete *static_cast<D**>(self); }};

  void take(Task& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->move(buf_, other.buf_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void reset() noexcept {
    if (ops_ == nullptr) return;
    const Ops* ops = ops_;
    ops_ = nullptr;
    ops->destroy(buf_);
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace redlock::detail
