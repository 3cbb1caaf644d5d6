#!/usr/bin/env python3
"""Mutation check: every deliberate fault in the safety rules must make some test fail.

Copies the working tree's tracked files into a scratch directory, builds the unit, integration,
CLI and simulator tests once, then applies each mutant below in turn (an exact text replacement
in one file) and rebuilds incrementally. Each mutant meets, in this order:
  1. the simulator (sim): `redlock_sim` with the seeds and options recorded for it (with
     --sim-only, seeds 0..19999 when none are recorded), stopping at the first failing seed, at
     most 60 s. Mutants in lib/net (the I/O layer, which the simulator does not run) skip it;
  2. the ctest test that killed it last time (test): only that test's executable is rebuilt and
     only that test runs (60 s at most, twice);
  3. the whole suite (suite), run until the first failure (after one unmutated run of the whole
     suite, so a failure means the mutant).
The killers of steps 1 and 2 are kept in tools/mutants_killers.tsv (mutant, test, simulator
arguments; a simulator range is recorded as the 100 seeds from the one that failed). Prints a Markdown table of mutants, what killed each, by which step and how long it
took; exits 1 when a mutant survives or no longer applies (its text is gone from the source:
update the mutant with the code). `--record` writes the killers found back to the tsv; `--full`
ignores the record; `--sim-only` runs only step 1 (what the simulator kills alone).

    python3 tools/mutants.py [--jobs N] [--keep] [--full] [--record] [--sim-only] [NAME ...]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# name, file, text in the source, text of the fault, what the fault means
MUTANTS = [
    ("grant_below_quorum", "lib/core/quorum.hpp",
     "if (yes >= quorum()) return Verdict::won;",
     "if (yes + 1 >= quorum()) return Verdict::won;",
     "a lock is granted one vote short of a quorum"),
    ("no_validity_check", "lib/core/quorum.hpp",
     "if (!still_valid(now, deadline)) return std::nullopt;",
     "(void)now;",
     "a quorum counts after the validity window closed (acquire, extend, renewal)"),
    ("set_without_nx", "lib/scripts/acquire.lua",
     "  if holder and not (keeps_line and turn_of(key, holder)) then",
     "  if false then",
     "the acquire script overwrites another holder's key"),
    ("release_without_compare", "lib/scripts/release.lua",
     "if value and (value == ARGV[1] or value == marked) then",
     "if value then",
     "release deletes the key whoever holds it"),
    ("fast_release_without_compare", "lib/scripts/release.lua",
     "  local value = redis.call('GET', KEYS[1])\n  if value == ARGV[1] then",
     "  local value = redis.call('GET', KEYS[1])\n  if value then",
     "the common release (one key) deletes the key whoever holds it"),
    ("release_takes_any_mark", "lib/scripts/release.lua",
     "      and value == string.sub(ARGV[1], 1, -2) .. '!' then",
     "      and string.byte(value, -1) == 33 then",
     "the common release deletes any key a waiter marked, whoever holds it"),
    ("renew_takes_any_mark", "lib/scripts/renew.lua",
     "value == string.sub(token, 1, -2) .. '!'",
     "string.byte(value, -1) == 33",
     "an extend or renewal keeps alive any key a waiter marked, whoever holds it"),
    ("fence_takes_any_mark", "lib/scripts/fence.lua",
     "local marked = string.byte(ARGV[1], -1) == 46 and string.sub(ARGV[1], 1, -2) .. '!'",
     "local marked = redis.call('GET', KEYS[1])",
     "the fencing write-back raises the counters of a key a waiter marked, whoever holds it"),
    ("fast_acquire_over_holder", "lib/scripts/acquire.lua",
     "and ARGV[8] == nil and not redis.call('GET', KEYS[1]) then",
     "and ARGV[8] == nil and redis.call('TYPE', KEYS[1]) then",
     "the common acquire (one key, nobody in line) overwrites another holder's key"),
    ("fast_acquire_past_the_line", "lib/scripts/acquire.lua",
     "if ARGV[7] == nil or redis.pcall('EXISTS',",
     "if true or redis.pcall('EXISTS',",
     "the common acquire takes a free key whatever its line: a newcomer takes a waiter's turn"),
    ("turn_of_any_value", "lib/scripts/acquire.lua",
     "  if try('HGET', aux(key, 'turns'), head) then return head end",
     "  if true then return head end",
     "any value that looks like a turn is free to a waiter: another program's key is overwritten"),
    ("turn_holds_nothing", "lib/scripts/release.lua",
     "try('SET', key, 'turn\\0' .. head, 'PX', length, 'NX')",
     "try('GET', key)",
     "a release begins a turn but leaves the key free: the quick command takes the waiter's turn"),
    ("turn_outlives_its_waiter", "lib/scripts/release.lua",
     "if try('GET', KEYS[1]) == 'turn\\0' .. ticket then try('DEL', KEYS[1]) end",
     "if false then try('DEL', KEYS[1]) end",
     "a waiter that leaves keeps the key its turn holds: a free lock nobody takes for a turn"),
    ("waiter_quick_every_attempt", "lib/proto/acquire.cpp",
     "bool first = attempts_ == 1 && notice_.empty();",
     "bool first = true;",
     "a waiter asks with the quick command every time: it never stands in line"),
    ("mark_drops_ttl", "lib/scripts/acquire.lua",
     "if try('SET', key, string.sub(value, 1, -2) .. '!', 'XX', 'KEEPTTL') == nil then",
     "if try('SET', key, string.sub(value, 1, -2) .. '!', 'XX') == nil then",
     "a waiter's mark takes the holder's key's ttl (a crashed holder's lock never expires)"),
    ("grant_leaves_holder_unmarked", "lib/scripts/acquire.lua",
     "    if waiting(key) then mark(key, ARGV[1]) end",
     "    if false then mark(key, ARGV[1]) end",
     "a waiter granted ahead of others leaves its key unmarked: its release wakes nobody"),
    ("quick_set_without_nx", "lib/proto/scripts.cpp",
     '    r.args.resize(7);\n    r.args[0] = "SET";\n    r.args[3] = "NX";\n    r.args[4] = "PX";\n'
     '    r.args[6] = "GET";\n  }\n  r.args[1] = key;\n  r.args[2] = token;\n'
     '  ms_arg_into(r.args[5], ttl);\n',
     '    r.args.resize(6);\n    r.args[0] = "SET";\n    r.args[3] = "PX";\n'
     '    r.args[5] = "GET";\n  }\n  r.args[1] = key;\n  r.args[2] = token;\n'
     '  ms_arg_into(r.args[4], ttl);\n',
     "the quick acquire overwrites another holder's key"),
    ("quick_yes_on_a_holder", "lib/core/replies.cpp",
     "if (r->type != REDIS_REPLY_STRING) return;\n  vote.vote = Vote::no;",
     "if (r->type != REDIS_REPLY_STRING) return;\n  vote.vote = Vote::yes;",
     "a quick acquire that found another holder counts as a grant"),
    ("extend_accepts_minority", "lib/proto/single.cpp",
     "r.valid_until = previous;\n  if (f.verdict() == Verdict::won) {",
     "r.valid_until = previous;\n  if (f.tally().yes >= 1) {",
     "an extend confirmed by one node counts"),
    ("one_token_for_all_attempts", "lib/proto/acquire.cpp",
     "if (auto ec = ctx_.new_token(token_)) {",
     "if (auto ec = token_.empty() ? ctx_.new_token(token_) : std::error_code()) {",
     "every attempt of an acquire reuses the first token"),
    ("renewal_never_reports_lost", "lib/proto/watchdog.cpp",
     "  out.push_back(Lost{lease, code, true, reason});",
     "  if (code != Errc::lock_lost) out.push_back(Lost{lease, code, true, reason});",
     "a lock whose renewal failed is never reported lost"),
    ("no_cleanup_after_failed_attempt", "lib/proto/acquire.cpp",
     "clean_up(keys_, token_, keep_place ? &line : nullptr, spare.empty() ? nullptr : &spare, out);",
     "(void)line;\n  (void)keep_place;\n  (void)spare;",
     "a failed attempt leaves its partial grants behind"),
    ("extend_shortens_keys", "lib/scripts/renew.lua",
     "if redis.call('PTTL', KEYS[j]) < ttl then",
     "if true then",
     "an extend may shorten a key's ttl on the nodes"),
    ("cleanup_announces_release", "lib/proto/acquire.cpp",
     "release_request(keys, token, /*announce=*/false, line)",
     "release_request(keys, token, /*announce=*/true, line)",
     "a failed attempt's clean-up wakes waiters"),
    ("cleanup_spares_unanswered", "lib/proto/rules.hpp",
     "spare[i] = votes[i].vote == Vote::no && votes[i].holder != own;",
     "spare[i] = votes[i].vote != Vote::yes || own.empty();",
     "a failed attempt's clean-up skips a node that had not answered (and grants it later)"),
    ("turn_copy_wakes_nobody", "lib/proto/notices.cpp",
     "    if (named != nullptr) named->wake(&channel, now, out);\n    return;",
     "    return;",
     "a turn from a node whose release came late is taken for a repeat, and the line stalls"),
    ("awake_without_prepare", "lib/net/loop.cpp",
     "  uv_check_start(&check_, &EventLoop::on_check);\n  uv_prepare_start(&prepare_, &EventLoop::on_prepare);",
     "  uv_check_start(&check_, &EventLoop::on_check);",
     "a call posted while the loop is awake by promise waits until something else wakes it"),
    ("batch_couples_fates", "lib/scripts/renew.lua",
     "local value = redis.pcall('GET', KEYS[j])",
     "local value = redis.call('GET', KEYS[j])",
     "one lock's bad key fails the whole renewal batch"),
    ("no_handshake_gate", "lib/core/session.hpp",
     "if (phase == SessionPhase::session) return Gate::wire;",
     "if (phase == SessionPhase::session || phase == SessionPhase::handshake) return Gate::wire;",
     "commands are pipelined behind AUTH/SELECT before they succeeded"),
    ("noscript_resend_reorders", "lib/core/session.hpp",
     "if (order_free || !issued_behind) return NoscriptStep::resend_eval;",
     "if (order_free || !issued_behind || true) return NoscriptStep::resend_eval;",
     "an acquire is re-sent after NOSCRIPT behind its own clean-up"),
    ("fencing_without_write_back", "lib/proto/acquire.cpp",
     "        write_back(std::move(r), now, out);\n        return;",
     "        r.lock.fencing_token = fencing_token_of(r.votes.nodes);\n"
     "        in_attempt_ = false;\n        finish(std::move(r), now, out);\n        return;",
     "a fencing token is handed out before a quorum raised its counters"),
    ("restart_guard_ignored", "lib/core/safeguards.hpp",
     "if (uptime < threshold) v.ineligible_for = threshold - uptime;",
     "(void)uptime;",
     "a node that restarted empty votes at once although the restart guard is on"),
    ("replica_accepted", "lib/core/safeguards.hpp",
     "if (config.check_role && !f.role.empty() && f.role != \"master\") {",
     "if (false) {",
     "a replica is taken as an independent master"),
    ("acquire_yes_on_any_shape", "lib/core/replies.cpp",
     "if (r->elements != 2 || !is_int(e[1]) || e[1]->integer < 0) return;",
     "if (r->elements < 2 || !is_int(e[1])) { vote.vote = Vote::yes; return; }",
     "an acquire reply of another shape than {1, fence} counts as a grant"),
    ("sigpipe_unmasked", "lib/net/loop.cpp",
     "sigfillset(&all);",
     "sigemptyset(&all);",
     "the loop thread can receive SIGPIPE"),
    ("turn_uncapped", "lib/scripts/acquire.lua",
     "  return math.min(tonumber(string.match(ticket, '@(%d+)$')) or 100, MAX_TURN)",
     "  return tonumber(string.match(ticket, '@(%d+)$')) or 100",
     "a waiter's ticket sets its own turn's length: a free key is held hostage as long as it asks"),
    ("turn_outlives_listener", "lib/scripts/acquire.lua",
     "if not channel or (subs and tonumber(subs[2]) == 0) then due = now end",
     "if not channel then due = now end",
     "a turn whose listener left runs to its end: a free key waits for nobody"),
    ("turns_kept_unguarded", "lib/scripts/release.lua",
     "if try('HSET', turns, head, now + length) then",
     "if try('HSET', turns, head, now + length) or true then",
     "a release sets the turns key's ttl although its HSET failed (another resource's lock there)"),
    ("sign_up_stays", "lib/scripts/release.lua",
     "if try('ZREM', others, ticket) == 1 then table.insert(left_in, others) end",
     "if false then table.insert(left_in, others) end",
     "a waiter for several keys leaves its sign-ups behind when it stops waiting"),
    ("resource_nul_accepted", "lib/core/keys.hpp",
     'if (!usable_name(name)) return "resource name contains a NUL byte";',
     "(void)name;",
     "a resource name may reach another resource's auxiliary keys"),
    ("split_validity_from_last_round", "lib/proto/acquire.cpp",
     "if (!kept_) round_start_ = f.started();",
     "round_start_ = f.started();",
     "a split winner counts its validity from its last round, not from its first keys"),
    ("grant_without_least_validity", "lib/proto/acquire.cpp",
     "granted_deadline(round_start_, now, ttl_, ctx_.config().drift_factor, least_validity());",
     "granted_deadline(round_start_, now, ttl_, ctx_.config().drift_factor);",
     "a grant is kept with too little validity left to be of use (Config::min_validity_ratio)"),
    ("write_back_without_least_validity", "lib/proto/acquire.cpp",
     "bool valid = enough_left(now, r.lock.valid_until, least_validity());",
     "bool valid = still_valid(now, r.lock.valid_until);",
     "a fenced grant is kept with too little validity left after its write-back"),
    ("permit_over_holder", "lib/scripts/acquire.lua",
     "  if holder then\n    local free = -1",
     "  if false then\n    local free = -1",
     "a permit's slot is granted although another token holds it"),
    ("permit_any_free_slot", "lib/scripts/acquire.lua",
     "  local key = KEYS[asked + 1]\n",
     "  local key = KEYS[asked + 1]\n"
     "  for i = 1, k do if not redis.call('GET', KEYS[i]) then key = KEYS[i] break end end\n",
     "a permit is granted on the first free slot while the reply says the one asked for"),
    ("permits_mismatch_ignored", "lib/scripts/acquire.lua",
     "if kept and kept ~= ARGV[8] then return {-2, kept} end",
     "if false then return {-2, kept} end",
     "a semaphore's permits are granted to an acquire with another number of permits"),
    ("permit_other_slot", "lib/proto/acquire.cpp",
     "if (permits_ > 0) r.lock.permit = static_cast<int>(slot_);",
     "if (permits_ > 0) r.lock.permit = static_cast<int>((slot_ + 1) % permits_);",
     "a permit's grant names another slot than the one the nodes granted"),
    ("permit_turn_outlives_listener", "lib/scripts/acquire.lua",
     "if try('HGET', turns, other) and (not channel or (subs and tonumber(subs[2]) == 0)) then",
     "if false then",
     "a slot held by the turn of a waiter whose client no longer listens refuses every waiter "
     "until the turn runs out"),
    ("permit_release_drops_k", "lib/scripts/release.lua",
     "if try('EXISTS', unpack(keys)) == 0 then try('DEL', permits) end",
     "try('DEL', permits)",
     "the release of a permit lets k go while other slots are held"),
    ("permit_renewal_keeps_k_short", "lib/scripts/renew.lua",
     "if type(left) == 'number' and left ~= -2 and left < ttl then",
     "if false then",
     "a permit's renewal prolongs its slot but not its semaphore's k"),
    ("permit_line_forgets_k", "lib/scripts/acquire.lua",
     "if left and left < tonumber(ARGV[6]) then try('SET', permits, ARGV[8], 'PX', ARGV[6]) end",
     "if false then try('SET', permits, ARGV[8], 'PX', ARGV[6]) end",
     "a waiter of a semaphore stands in line without keeping its k: an acquire with another k "
     "begins its turn on a slot beyond its k, which refuses everyone to the turn's end (liveness)"),
    ("permit_k_forgotten_before_line", "lib/scripts/release.lua",
     "  local keys = {line, aux(line, 'queue')}\n",
     "  local keys = {line}\n",
     "the release of a semaphore's last held permit here lets k go while waiters of it stand in "
     "line: another k then gives them turns on slots beyond theirs (liveness)"),
    ("leader_read_stale", "lib/scripts/leader.lua",
     "if not holds(lock, token) then\n  redis.call('DEL', leader)",
     "if false then\n  redis.call('DEL', leader)",
     "the leader's read reports a record whose token no longer holds the office's lock key"),
    ("rw_reader_beside_writer", "lib/scripts/acquire.lua",
     "  if holder then\n    if lined and stand_in_line() then mark(L, holder) end",
     "  if false then\n    if lined and stand_in_line() then mark(L, holder) end",
     "a reader is granted although a writer's token holds the lock key"),
    ("rw_reader_grant_without_marker", "lib/scripts/acquire.lua",
     "    redis.call('SET', L, READERS, 'PX', cover)",
     "    redis.call('PTTL', L)",
     "a reader's grant on a free lock key leaves it free (no readers' marker): a writer is granted "
     "beside the reader"),
    ("rw_renewal_keeps_marker_short", "lib/scripts/renew.lua",
     "  for _, key in ipairs({L, readers}) do",
     "  for _, key in ipairs({readers}) do",
     "a reader's renewal prolongs its lease but not the readers' marker: a writer is granted "
     "beside the renewed reader"),
    ("rw_reader_past_waiting_writer", "lib/scripts/acquire.lua",
     "    if reader_ticket(head) then\n",
     "    if true then\n",
     "a reader is granted past a live writer waiting ahead of it in line"),
    ("rw_release_drops_marker", "lib/scripts/release.lua",
     "    elseif top and marker then\n      redis.call('DEL', L)",
     "    end\n    if marker then\n      redis.call('DEL', L)",
     "a reader's release deletes the readers' marker while other readers still hold"),
    ("rw_last_reader_keeps_marker", "lib/scripts/release.lua",
     "    elseif top and marker then\n      redis.call('DEL', L)",
     "    elseif top and marker then\n      redis.call('PTTL', L)",
     "the last reader's release leaves the readers' marker to expire: a free write lock waits "
     "for it (liveness)"),
    ("rw_readers_never_granted", "lib/scripts/acquire.lua",
     "  if holder then\n    if lined and stand_in_line() then mark(L, holder) end\n"
     "    return {0, redis.call('PTTL', L), holder_name(holder)}",
     "  if true then\n    if lined then stand_in_line() end\n"
     "    return {0, 100, 'readersoff'}",
     "a reader is never granted, whatever the lock key holds (liveness)"),
    ("rw_reader_turn_not_free_to_writer", "lib/scripts/acquire.lua",
     "      holder, free = false, true\n    elseif due and not alive(other, due) then",
     "      holder = false\n    elseif due and not alive(other, due) then",
     "a reader's turn on the lock key keeps a writer ahead of it in line from beginning its turn: "
     "the reader, refused for that writer, leaves a turn nobody owns (liveness)"),
    ("rw_reader_refusal_keeps_own_turn", "lib/scripts/acquire.lua",
     "        if instead and due > now and value == TURN .. ticket",
     "        if false and due > now and value == TURN .. ticket",
     "a reader refused at its own turn for a turn that runs ahead leaves its turn on the lock "
     "key, which then refuses everyone (liveness)"),
    ("rw_writer_turn_beside_reader_turn", "lib/scripts/acquire.lua",
     "      if live and not due and reader_due then",
     "      if false then",
     "a reader begins a writer's turn while a reader before that writer has a turn that runs: "
     "two turns at once, and the writer at its turn leaves it dangling (liveness)"),
    ("rw_reader_waits_for_writer_behind", "lib/scripts/acquire.lua",
     "    if place and tonumber(first[2]) and tonumber(first[2]) > place then break end",
     "    if false then break end",
     "a reader that is not yet in a node's line is held back there by a writer whose place is "
     "behind its own (fairness)"),
    ("turn_kept_by_refused_waiter", "lib/scripts/acquire.lua",
     "      if ticket ~= '' and held == TURN .. ticket then",
     "      if false then",
     "a waiter refused at its own turn for an earlier turn that runs leaves its turn on the key "
     "(liveness)"),
    ("rw_dropped_turn_kept", "lib/scripts/acquire.lua",
     "      if held == TURN .. m then\n        if instead and due and due > now then",
     "      if false then\n        if instead and due and due > now then",
     "a reader's refusal drops a waiter whose turn was missed and leaves the lock key holding that "
     "turn: a value that refuses everyone until its ttl (liveness: a free lock held hostage)"),
    ("lane_never_checks_idle", "lib/client/lane.cpp",
     "        now - slots_[i]->heard >= kCheckIdleAfter) {",
     "        false) {",
     "the lane never looks for an idle connection the server closed: the next call fails its "
     "request there instead of opening it again (availability)"),
    ("loading_aof_off_warns", "lib/core/safeguards.hpp",
     "    } else if (f.loading) {",
     "    } else if (false) {",
     "a node replaying its AOF (INFO's aof_enabled:0 beside loading:1) is warned about as "
     "persistence off: a false alert after every restart (operators)"),
    ("status_without_write_probe", "lib/client/status.cpp",
     "    if (!node->send(q->probe_, q, &at)) ++q->outstanding_;",
     "",
     "status reports a node up that answers INFO but refuses every write (OOM, NOPERM): a health "
     "check quiet while a node cannot vote (operators)"),
    ("token_store_survives_fork", "lib/core/token.cpp",
     "    if (madvise(p, kPage, MADV_WIPEONFORK) != 0) {",
     "    if (false) {",
     "a forked child hands out the random bytes its parent's next tokens take: two holders with "
     "one token release each other's locks"),
]


KILLERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mutants_killers.tsv")
LABELS = "unit|integration|cli|sim"
# The simulator runs lib/core, lib/proto and lib/scripts; lib/net's I/O layer is not in its reach.
OUT_OF_SIM_REACH = ("lib/net/",)
SIM_DEFAULT = "--seeds 0..19999"  # with --sim-only, for a mutant without a recorded sim killer
SIM_TIMEOUT = 60  # seconds: a simulator killer must kill in seconds


def run(cmd, cwd, log, timeout):
    with open(log, "w") as out:
        return subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout).returncode


def first_failure(log):
    with open(log) as f:
        text = f.read()
    m = re.search(r"\*\*\*(?:Failed|Timeout|Exception)[^\n]*", text)
    names = re.findall(r"Test +#\d+: (\S+) \.+\*\*\*", text)
    if names:
        return names[0]
    if m:
        return m.group(0)
    return "build failed" if "FAILED:" in text else "?"


def read_killers():
    """What killed each mutant last time (tools/mutants_killers.tsv): test, simulator arguments."""
    tests, sims = {}, {}
    if os.path.exists(KILLERS):
        with open(KILLERS) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2 and parts[1] != "-":
                    tests[parts[0]] = parts[1]
                if len(parts) >= 3 and parts[2] != "-":
                    sims[parts[0]] = parts[2]
    return tests, sims


def write_killers(tests, sims):
    with open(KILLERS, "w") as f:
        f.write("# mutant\tthe test that killed it last\tthe redlock_sim arguments that killed it "
                "last (tools/mutants.py runs the simulator first, then the test; - for none)\n")
        for name, _, _, _, _ in MUTANTS:
            if name in tests or name in sims:
                f.write(f"{name}\t{tests.get(name, '-')}\t{sims.get(name, '-')}\n")


def test_executables(build, log):
    """Each ctest test's executable (its target's name), from ctest's own listing."""
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {}
    import json
    found = {}
    for t in json.loads(out.stdout).get("tests", []):
        name = t["name"]
        cmd = t.get("command") or []
        # The simulator's tests run redlock_sim (sim.replay through cmake), and ctest names no
        # command for an executable not built yet: map them to their targets by name.
        if name.startswith("sim.redis."):
            found[name] = "redlock_sim_redis_tests"
        elif name.startswith("sim."):
            found[name] = "redlock_sim"
        elif cmd:
            found[name] = os.path.basename(cmd[0])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--full", action="store_true",
                    help="ignore the recorded killers: run the whole suite for every mutant")
    ap.add_argument("--record", action="store_true",
                    help="write the killers found to tools/mutants_killers.tsv")
    ap.add_argument("--sim-only", action="store_true",
                    help="run only the simulator step (what the simulator kills alone)")
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    args = ap.parse_args()

    top = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    chosen = [m for m in MUTANTS if not args.names or m[0] in args.names]
    unknown = set(args.names) - {m[0] for m in MUTANTS}
    if unknown:
        sys.exit("unknown mutants: " + ", ".join(sorted(unknown)))

    # Every anchor must be present exactly once, or the mutant no longer tests anything.
    stale = []
    for name, path, old, _, _ in chosen:
        with open(os.path.join(top, path)) as f:
            if f.read().count(old) != 1:
                stale.append(f"{name} ({path})")
    if stale:
        sys.exit("mutants that no longer apply (update them with the code): " + ", ".join(stale))

    killers, sim_killers = ({}, {}) if args.full else read_killers()
    scratch = tempfile.mkdtemp(prefix="redlock-mutants-")
    try:
        files = subprocess.check_output(["git", "ls-files", "-z"], cwd=top).split(b"\0")
        for f in files:
            if not f:
                continue
            rel = f.decode()
            src = os.path.join(top, rel)
            if not os.path.isfile(src):
                continue
            dst = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
        build = os.path.join(scratch, "build")
        log = os.path.join(scratch, "log.txt")
        # Release: no debug info to write, so each mutant's relink is quicker.
        configure = ["cmake", "-S", scratch, "-B", build, "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Release", "-DREDLOCK_BUILD_EXAMPLES=OFF",
                     "-DREDLOCK_BUILD_PROMETHEUS=OFF"]
        # What the tests run besides their own executables.
        helpers = ["redlock_cli", "redlock_faulty_host"]
        everything = ["redlock_unit_tests", "redlock_integration_tests", "redlock_cli_tests"]

        def build_cmd(targets):
            return ["cmake", "--build", build, "-j", str(args.jobs), "--target"] + targets

        def ctest(extra, tries=2, timeout=120):
            # A test that fails only now and then under load must not decide: unmutated, each
            # test gets `tries` runs to pass; a mutant is killed by a test that fails every try.
            # A recorded killer runs for 60 s at most, not 120: a mutant that makes it hang
            # (awake_without_prepare) is killed by the timeout sooner; a killer that needs more
            # unmutated fails the baseline check of the recorded killers.
            return ["ctest", "--test-dir", build, "-j", str(args.jobs), "--timeout", str(timeout),
                    "--repeat", f"until-pass:{tries}"] + extra

        sim_exe = os.path.join(build, "sim", "redlock_sim")

        def in_sim_reach(path):
            return not path.startswith(OUT_OF_SIM_REACH)

        def sim_args(name, path):
            # Without a record the simulator is asked only with --sim-only: in the CI's run a
            # mutant it cannot kill would cost the whole time limit.
            if args.full or not in_sim_reach(path):
                return None
            return sim_killers.get(name, SIM_DEFAULT if args.sim_only else None)

        def run_sim(sim, timeout=SIM_TIMEOUT):
            """Runs redlock_sim with `sim` until its first failing seed: True when one failed."""
            cmd = [sim_exe] + sim.split() + ["--jobs", str(args.jobs), "--first"]
            with open(log, "w") as out:
                # Its own process group: on timeout, its forked workers end with it.
                p = subprocess.Popen(cmd, cwd=scratch, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
                try:
                    rc = p.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)
                    p.wait()
                    return False
            return rc == 1 and "FAILED" in open(log).read()

        def failing_seed():
            m = re.search(r"seed (\d+) FAILED", open(log).read())
            return m.group(1) if m else "?"

        print(f"== baseline build in {scratch}", flush=True)
        if run(configure, scratch, log, 600):
            print(open(log).read()[-4000:])
            sys.exit("configure failed")
        # The simulator's tests join the whole suite, built only once a mutant needs it (a
        # recorded killer's own executable is built anyway).
        sim_targets = ["redlock_sim", "redlock_sim_redis_tests"]
        first_targets = ["redlock_sim"] if args.sim_only else everything + helpers + ["redlock_sim"]
        if run(build_cmd(first_targets), scratch, log, 1800):
            print(open(log).read()[-4000:])
            sys.exit("baseline build failed")
        executables = test_executables(build, log)  # discovered tests are known after the build
        # The recorded killers must pass without any mutant, or a failure proves nothing.
        for sim in sorted({sim_args(n, p) for n, p, _, _, _ in chosen} - {None}):
            if run_sim(sim, timeout=10 * SIM_TIMEOUT):
                print(open(log).read()[-4000:])
                sys.exit(f"redlock_sim {sim} fails without any mutant: fix that first")
        known = sorted({k for n, k in killers.items()
                        if k in executables and any(n == m[0] for m in chosen)})
        if known and not args.sim_only:
            pattern = "^(" + "|".join(re.escape(k) for k in known) + ")$"
            if run(ctest(["-R", pattern], tries=3, timeout=60), scratch, log, 1800):
                print(open(log).read()[-4000:])
                sys.exit("a recorded killer fails without any mutant: fix that first")
        full_baseline_done = False

        rows, survived = [], []
        for name, path, old, new, meaning in chosen:
            target = os.path.join(scratch, path)
            with open(target) as f:
                original = f.read()
            start = time.time()
            with open(target, "w") as f:
                f.write(original.replace(old, new, 1))
            killer, how = None, "-"
            try:
                sim = sim_args(name, path)
                if sim is not None:
                    # The simulator first: seconds, and no server to start.
                    if run(build_cmd(["redlock_sim"]), scratch, log, 1800):
                        killer, how = "does not build", "sim"
                    elif run_sim(sim):
                        seed = failing_seed()
                        killer, how = f"redlock_sim {sim} (seed {seed})", "sim"
                        # Next time the 100 seeds from the one that failed: while the simulator
                        # and the code stay as they are, the kill takes one seed, and the check
                        # that the recorded ranges pass unmutated stays short.
                        if seed != "?":
                            sim = re.sub(r"--seeds \d+\.\.\d+",
                                         f"--seeds {seed}..{int(seed) + 99}", sim, count=1)
                        sim_killers[name] = sim
                    else:
                        sim_killers.pop(name, None)  # a record that no longer kills goes
                first = killers.get(name)
                if killer is None and not args.sim_only and first in executables:
                    # Its last killer next: build only what that test runs.
                    if run(build_cmd([executables[first]] + helpers), scratch, log, 1800):
                        killer, how = "does not build", "test"
                    elif run(ctest(["-R", "^" + re.escape(first) + "$"], timeout=60), scratch,
                             log, 600):
                        killer, how = first, "test"
                if killer is None and not args.sim_only:
                    how = "suite"
                    if not full_baseline_done:
                        # The whole suite must pass unmutated before it can judge a mutant.
                        with open(target, "w") as f:
                            f.write(original)
                        everything += sim_targets
                        if (run(build_cmd(everything + helpers), scratch, log, 1800) or
                                run(ctest(["--stop-on-failure", "-L", LABELS]), scratch, log,
                                    1800)):
                            print(open(log).read()[-4000:])
                            sys.exit("the suite fails without any mutant: fix that first")
                        full_baseline_done = True
                        with open(target, "w") as f:
                            f.write(original.replace(old, new, 1))
                    if run(configure, scratch, log, 600) or run(
                            build_cmd(everything + helpers), scratch, log, 1800):
                        killer = "does not build"
                    elif run(ctest(["--stop-on-failure", "-L", LABELS]), scratch, log, 1800):
                        killer = first_failure(log)
            except subprocess.TimeoutExpired:
                killer = "timed out"
            finally:
                with open(target, "w") as f:
                    f.write(original)
            took = time.time() - start
            status = "killed" if killer else "SURVIVED"
            if not killer and args.sim_only and sim is None:
                status, killer = "out of the simulator's reach", None
            elif not killer:
                survived.append(name)
                how = "-"
            elif killer in executables:
                killers[name] = killer
            rows.append((name, meaning, status, how, killer or "-", took))
            print(f"   {name}: {status} by {killer or '-'} ({how}, {took:.0f} s)", flush=True)

        print()
        print("| mutant | fault | result | step | killed by | time |")
        print("| --- | --- | --- | --- | --- | ---: |")
        for name, meaning, status, how, killer, took in rows:
            print(f"| `{name}` | {meaning} | {status} | {how} | `{killer}` | {took:.0f} s |")
        print()
        by = {k: sum(1 for r in rows if r[3] == k) for k in ("sim", "test", "suite")}
        killed = sum(1 for r in rows if r[2] == "killed")
        print(f"{killed} of {len(rows)} mutants killed "
              f"(simulator {by['sim']}, recorded test {by['test']}, suite {by['suite']}) in "
              f"{sum(r[5] for r in rows):.0f} s")
        if args.record:
            write_killers(killers, sim_killers)
        # Restore the build to the unmutated source for --keep users.
        run(configure, scratch, log, 600)
        return 1 if survived else 0
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
