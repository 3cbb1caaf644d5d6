#include "acquire_job.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "../core/observe.hpp"

namespace redlock::detail {

using std::chrono::microseconds;

namespace {

// A waiter's place in line (AcquireMachine): microseconds since the epoch on the wall clock. Read
// only for a request that waits, the only one whose machine uses it.
std::int64_t place_of(const AcquireRequest& request) {
  if (!request.wait || request.wait->count() == 0) return 0;
  return std::chrono::duration_cast<microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

AcquireJob::AcquireJob(JobHost& host, proto::Context& context, uv_loop_t* loop,
                       AcquireRequest&& request, Milliseconds ttl, Client::AcquireCallback done)
    : host_(host),
      config_(context.config()),
      created_(Clock::now()),
      // Only the resources move: the wait and the cancel token are read here and below.
      machine_(context, std::move(request), ttl, created_, place_of(request)),
      done_(std::move(done)),
      cancel_(request.cancel),
      loop_(loop) {
  observe(config_, [&](Observer&) { began_ = created_; });
}

void AcquireJob::begin() {
  auto out = host_.job_actions();
  if (cancel_) {
    auto* host = &host_;
    auto id = machine_.id();
    cancel_hook_ = cancel_state_of(*cancel_)->add([host, id, post = host_.poster()] {
      if (post) post([host, id] { host->cancel_job(id); });
    });
    if (cancel_hook_ == 0) {  // cancelled before it began
      machine_.cancel(Errc::cancelled, Clock::now(), out);
      host_.run_job(out);
      return;
    }
  }
  machine_.start(created_, out);
  host_.run_job(out);
}

void AcquireJob::on_timer() {
  auto out = host_.job_actions();
  machine_.on_timer(timer_id_, Clock::now(), out);
  host_.run_job(out);
}

void AcquireJob::arm(proto::TimerId id, Clock::time_point at) {
  timer_id_ = id;
  if (!timer_open_) {
    uv_timer_init(loop_, &timer_);
    timer_.data = this;
    timer_open_ = true;
  }
  auto wait = std::chrono::ceil<Milliseconds>(at - Clock::now());
  uv_timer_start(
      &timer_, [](uv_timer_t* t) { static_cast<AcquireJob*>(t->data)->on_timer(); },
      static_cast<std::uint64_t>(std::max<Milliseconds::rep>(wait.count(), 0)), 0);
}

void AcquireJob::disarm() {
  if (timer_open_) uv_timer_stop(&timer_);
}

void AcquireJob::wait_began() {
  observe(config_, [&](Observer& o) {
    wait_began_ = Clock::now();
    waited_ = true;
    WaitEvent e;
    e.phase = WaitPhase::started;
    e.resources = &machine_.resources();
    o.on_wait(e);
  });
}

void AcquireJob::deliver(AcquireResult r) {
  if (cancel_hook_ != 0) cancel_state_of(*cancel_)->remove(cancel_hook_);
  cancel_hook_ = 0;
  observe(config_, [&](Observer& o) {
    auto now = Clock::now();
    if (waited_) {
      WaitEvent w;
      w.phase = WaitPhase::ended;
      w.resources = &machine_.resources();
      w.error = r.error;
      w.waited = std::chrono::duration_cast<microseconds>(now - wait_began_);
      o.on_wait(w);
    }
    OperationEvent e;
    e.operation = Operation::acquire;
    e.error = r.error;
    e.resources = &machine_.resources();
    e.votes = &r.votes;
    e.latency = std::chrono::duration_cast<microseconds>(now - began_);
    e.attempts = r.attempts;
    e.permits = machine_.permits();
    e.shared = machine_.shared();
    e.permit = r ? r.lock.permit : -1;
    o.on_operation(e);
  });
  auto done = std::move(done_);
  if (done) deliver_guarded("acquire", [&] { done(std::move(r)); });
}

void AcquireJob::close() {
  if (!timer_open_) {
    delete this;
    return;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_),
           [](uv_handle_t* h) { delete static_cast<AcquireJob*>(h->data); });
}

}  // namespace redlock::detail
