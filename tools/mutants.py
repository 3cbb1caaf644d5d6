#!/usr/bin/env python3
"""Mutation check: every deliberate fault in the safety rules must make some test fail.

Copies the working tree's tracked files into a scratch directory, builds the unit, integration
and CLI tests once, then applies each mutant below in turn (an exact text replacement in one
file), rebuilds incrementally, and runs ctest until the first failure. Prints a Markdown table of
mutants and the test that killed each; exits 1 when a mutant survives or no longer applies (its
text is gone from the source: update the mutant with the code).

    python3 tools/mutants.py [--jobs N] [--keep] [NAME ...]
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
     "  if holder then",
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
    ("mark_drops_ttl", "lib/scripts/acquire.lua",
     "if try('SET', key, string.sub(value, 1, -2) .. '!', 'XX', 'KEEPTTL') == nil then",
     "if try('SET', key, string.sub(value, 1, -2) .. '!', 'XX') == nil then",
     "a waiter's mark takes the holder's key's ttl (a crashed holder's lock never expires)"),
    ("grant_leaves_holder_unmarked", "lib/scripts/acquire.lua",
     "if try('EXISTS', key .. ':queue', key .. ':others') ~= 0 then mark(key, ARGV[1]) end",
     "if false then mark(key, ARGV[1]) end",
     "a waiter granted ahead of others leaves its key unmarked: its release wakes nobody"),
    ("quick_set_without_nx", "lib/proto/scripts.cpp",
     '{"SET", key, token, "NX", "PX", ms_arg(ttl), "GET"}',
     '{"SET", key, token, "PX", ms_arg(ttl), "GET"}',
     "the quick acquire overwrites another holder's key"),
    ("quick_yes_on_a_holder", "lib/core/replies.cpp",
     "if (r->type != REDIS_REPLY_STRING) return;\n  vote.vote = Vote::no;",
     "if (r->type != REDIS_REPLY_STRING) return;\n  vote.vote = Vote::yes;",
     "a quick acquire that found another holder counts as a grant"),
    ("extend_accepts_minority", "lib/net/coordinator.cpp",
     "r.valid_until = previous;\n                  if (f.verdict() == Verdict::won) {",
     "r.valid_until = previous;\n                  if (f.tally().yes >= 1) {",
     "an extend confirmed by one node counts"),
    ("one_token_for_all_attempts", "lib/proto/acquire.cpp",
     "if (auto ec = ctx_.new_token(token_)) {",
     "if (auto ec = token_.empty() ? ctx_.new_token(token_) : std::error_code()) {",
     "every attempt of an acquire reuses the first token"),
    ("renewal_never_reports_lost", "lib/net/watchdog.cpp",
     "if (lease->lost()) return;",
     "if (lease->lost() || code == Errc::lock_lost) return;",
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
    ("no_handshake_gate", "lib/net/node.cpp",
     "if (current_ == nullptr || !current_->in_session) {",
     "if (current_ == nullptr) {",
     "commands are pipelined behind AUTH/SELECT before they succeeded"),
    ("noscript_resend_reorders", "lib/net/node.cpp",
     "if (script->order_free || conn.pending.empty()) {",
     "if (true) {",
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
    ("split_validity_from_last_round", "lib/proto/acquire.cpp",
     "if (!kept_) round_start_ = f.started();",
     "round_start_ = f.started();",
     "a split winner counts its validity from its last round, not from its first keys"),
]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
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
        configure = ["cmake", "-S", scratch, "-B", build, "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DREDLOCK_BUILD_EXAMPLES=OFF"]
        targets = ["redlock_unit_tests", "redlock_integration_tests", "redlock_cli_tests",
                   "redlock_cli", "redlock_faulty_host"]
        build_cmd = ["cmake", "--build", build, "-j", str(args.jobs), "--target"] + targets
        ctest = ["ctest", "--test-dir", build, "-j", str(args.jobs), "--stop-on-failure",
                 "--timeout", "120", "-L", "unit|integration|cli"]
        print(f"== baseline build in {scratch}", flush=True)
        if run(configure, scratch, log, 600) or run(build_cmd, scratch, log, 1800):
            print(open(log).read()[-4000:])
            sys.exit("baseline build failed")
        if run(ctest, scratch, log, 1800):
            print(open(log).read()[-4000:])
            sys.exit("the suite fails without any mutant: fix that first")

        rows, survived = [], []
        for name, path, old, new, meaning in chosen:
            target = os.path.join(scratch, path)
            with open(target) as f:
                original = f.read()
            start = time.time()
            with open(target, "w") as f:
                f.write(original.replace(old, new, 1))
            try:
                if run(configure, scratch, log, 600) or run(build_cmd, scratch, log, 1800):
                    killer = "does not build"
                elif run(ctest, scratch, log, 1800):
                    killer = first_failure(log)
                else:
                    killer = None
            except subprocess.TimeoutExpired:
                killer = "timed out"
            finally:
                with open(target, "w") as f:
                    f.write(original)
            took = time.time() - start
            status = "killed" if killer else "SURVIVED"
            if not killer:
                survived.append(name)
            rows.append((name, meaning, status, killer or "-", took))
            print(f"   {name}: {status} by {killer or '-'} ({took:.0f} s)", flush=True)

        print()
        print("| mutant | fault | result | killed by | time |")
        print("| --- | --- | --- | --- | ---: |")
        for name, meaning, status, killer, took in rows:
            print(f"| `{name}` | {meaning} | {status} | `{killer}` | {took:.0f} s |")
        print()
        print(f"{len(rows) - len(survived)} of {len(rows)} mutants killed")
        # Restore the build to the unmutated source for --keep users.
        run(configure, scratch, log, 600)
        return 1 if survived else 0
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
