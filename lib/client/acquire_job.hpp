// One acquire (Client::acquire, hold, a Mutex's lock): drives one proto::AcquireMachine, which
// takes every decision. This only gives it its timer and its cancel hook, and tells the
// observer. The coordinator carries out its actions and brings it replies. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <optional>

#include "../core/recycled.hpp"
#include "../proto/acquire.hpp"
#include "lease.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

// What a job needs of its driver (the coordinator).
class JobHost {
 public:
  // An empty action list for a job's event, to hand to run_job (which takes its storage back).
  virtual proto::Actions job_actions() = 0;
  // Carries out the actions a job's machine wrote.
  virtual void run_job(proto::Actions& actions) = 0;
  // Loop thread: ends the wait of job `id` (its cancel token fired), if it still waits.
  virtual void cancel_job(std::uint64_t id) = 0;
  // Any thread: runs a task on the loop thread while the client lives (else drops it). A cancel
  // token may fire on any thread at any time, even while the client is being destroyed.
  using Poster = std::function<void(std::function<void()>)>;
  virtual const Poster& poster() const = 0;

 protected:
  ~JobHost() = default;
};

// Made and freed once per acquire (its block recycled: Recycled).
class AcquireJob : public Recycled<AcquireJob> {
 public:
  // `request`: its resources move into the machine.
  AcquireJob(JobHost& host, proto::Context& context, uv_loop_t* loop, AcquireRequest&& request,
             Milliseconds ttl, Client::AcquireCallback done);
  AcquireJob(const AcquireJob&) = delete;
  AcquireJob& operator=(const AcquireJob&) = delete;

  // Starts its machine (or ends at once when its cancel token has fired already).
  void begin();
  proto::AcquireMachine& machine() noexcept { return machine_; }
  std::uint64_t id() const noexcept { return machine_.id(); }

  // The machine's actions about this job.
  void arm(proto::TimerId id, Clock::time_point at);
  void disarm();
  void wait_began();
  void deliver(AcquireResult r);

  // Frees it (once its timer is closed, if it opened one): its machine needs nothing more.
  void close();

 private:
  ~AcquireJob() = default;
  void on_timer();

  JobHost& host_;
  const Config& config_;
  // When it was made: the machine's clock for its start too (begin() follows at once; a round
  // counted from a little earlier only shortens its validity).
  Clock::time_point created_;
  proto::AcquireMachine machine_;
  Client::AcquireCallback done_;
  std::optional<CancelToken> cancel_;
  std::uint64_t cancel_hook_ = 0;
  uv_loop_t* loop_;
  // Opened at the first arm() only: a job that never waits for a timer (a grant or a refusal at
  // its first attempt) opens and closes no handle, and is freed at once by close().
  uv_timer_t timer_{};
  bool timer_open_ = false;
  proto::TimerId timer_id_ = 0;
  Clock::time_point began_{};       // with an observer only: when the job began
  Clock::time_point wait_began_{};  // with an observer only: when it began to wait
  bool waited_ = false;             // with an observer only: on_wait(started) went out
};

}  // namespace redlock::detail
