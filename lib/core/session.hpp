// The rules of one node's session, as pure functions of their inputs.
//
// A connection to a node begins with a handshake (AUTH, SELECT, INFO); only once every part of it
// succeeded and INFO passed the restart safeguards (safeguards.hpp) may a caller's command run
// there. These rules decide what happens to a command: whether it goes on the wire, waits or
// fails; what happens to the commands that waited when the session begins; what the restart
// guard refuses; and what follows a NOSCRIPT reply. lib/net/node.cpp keeps the sockets, hiredis
// and the timers and asks these rules; the simulator (sim/world) asks the same ones, so that it
// checks the decisions the library really makes. Nothing here reads a clock or does I/O: times
// are passed in, in whatever unit the caller counts (lib/net: loop milliseconds).
#pragma once

namespace redlock::detail {

// Where one connection to a node stands, as far as a caller's command is concerned.
enum class SessionPhase {
  down,        // backing off after failed connects, not started, or shut down: nobody connects
  connecting,  // resolving the name or connecting: no connection to write to yet
  handshake,   // a connection exists; AUTH, SELECT or INFO has not been answered and judged
  session,     // the handshake succeeded: commands run as the configured user, in its database
};

// What becomes of a caller's command sent now.
enum class Gate {
  wire,  // written on the session's connection at once
  hold,  // waits (not on any wire) until the session begins, within its own deadline
  fail,  // fails at once, with the cause of the last failure
};

// The gate. Only a session's connection takes callers' commands: pipelined behind a handshake
// that has not succeeded yet, a command would run as the default user, in database 0, or on a node
// that INFO is about to find restarted too recently to vote (the restart guard).
constexpr Gate gate(SessionPhase phase) noexcept {
  if (phase == SessionPhase::session) return Gate::wire;
  return phase == SessionPhase::down ? Gate::fail : Gate::hold;
}

// The restart guard: whether a node that voted nothing since it restarted may be asked `now`. A
// node is eligible from `eligible_at` on (0 when INFO found it old enough).
template <class Tick>
constexpr bool eligible(Tick now, Tick eligible_at) noexcept {
  return !(now < eligible_at);
}

// Whether the restart guard refuses a command: one that may grant (an acquire, or a plain command,
// which the session cannot judge) while the node is not eligible. An order-free script (it only
// deletes or prolongs keys holding the caller's own token: release, renewal, fencing write-back)
// goes through, so that a holder can still let go of or keep what it has.
constexpr bool guard_refuses(bool order_free, bool node_eligible) noexcept {
  return !order_free && !node_eligible;
}

// What becomes of a command that waited for the session, when the session begins.
enum class HeldFate {
  send,        // written on the new connection, in the order the commands were sent
  late,        // its deadline passed while it waited: fails alone, never sent (issued, it would
               // close the new connection as timed out at once)
  restarting,  // the node is not eligible yet (restart guard): every waiting command fails unsent
};

// The fate of a waiting command whose deadline is `deadline`, when a session begins at `now` on a
// node that is (or is not) eligible. An ineligible node fails all of them, order-free or not: the
// caller that waited hears at once that this node will not vote, and its clean-ups are kept to be
// sent again (lib/net: orphans).
template <class Tick>
constexpr HeldFate at_start(bool node_eligible, Tick now, Tick deadline) noexcept {
  if (!node_eligible) return HeldFate::restarting;
  return now < deadline ? HeldFate::send : HeldFate::late;
}

// What follows a NOSCRIPT reply to an EVALSHA (the script cache was flushed: the command did not
// run).
enum class NoscriptStep {
  resend_eval,   // send the script's body (EVAL) now, behind what is already on the connection
  fail_and_load  // fail the command, and load the script (SCRIPT LOAD) for the next attempt
};

// `issued_behind`: some command sent after this one on the same connection still waits for its
// reply. Re-sent now, the command would run after those: harmless for an order-free script, but an
// acquire with its own clean-up (a release with its token) behind it would run after that
// clean-up, and its keys would outlive the attempt that gave up on them.
constexpr NoscriptStep after_noscript(bool order_free, bool issued_behind) noexcept {
  if (order_free || !issued_behind) return NoscriptStep::resend_eval;
  return NoscriptStep::fail_and_load;
}

}  // namespace redlock::detail
