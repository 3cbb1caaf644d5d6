// The checker must catch every overlap, and nothing else: synthetic intervals with known answers,
// their edge cases, and random sets against a quadratic reference.
#include "checker.hpp"

#include <gtest/gtest.h>

#include <random>
#include <tuple>

namespace redlock::chaos {
namespace {

Section sec(std::int64_t start, std::int64_t end, std::int64_t deadline = 0,
            std::string worker = "w", std::string resource = "r") {
  Section s;
  s.resource = std::move(resource);
  s.worker = std::move(worker);
  s.start = start;
  s.end = end;
  s.deadline = deadline;
  return s;
}

std::size_t claimed(const std::vector<Section>& v) { return find_overlaps(v, Mode::claimed).count; }
std::size_t actual(const std::vector<Section>& v) { return find_overlaps(v, Mode::actual).count; }

TEST(Checker, NothingToCheck) {
  EXPECT_EQ(claimed({}), 0u);
  EXPECT_EQ(actual({sec(0, 10)}), 0u);
}

TEST(Checker, DisjointAndTouchingSectionsDoNotOverlap) {
  // Half-open: [0, 10) then [10, 20) touch but do not overlap; input order does not matter.
  std::vector<Section> v = {sec(20, 30), sec(0, 10), sec(10, 20), sec(31, 40)};
  EXPECT_EQ(claimed(v), 0u);
  EXPECT_EQ(actual(v), 0u);
}

TEST(Checker, OneNanosecondIsAnOverlap) {
  auto r = find_overlaps({sec(0, 11, 0, "a"), sec(10, 20, 0, "b")}, Mode::actual);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(r.worst_ns, 1);
  ASSERT_EQ(r.examples.size(), 1u);
  EXPECT_EQ(r.examples[0].earlier, 0u);
  EXPECT_EQ(r.examples[0].later, 1u);
}

TEST(Checker, SameStartOverlaps) { EXPECT_EQ(actual({sec(5, 6), sec(5, 9)}), 1u); }

TEST(Checker, LongSectionOverlapsEveryLaterOneItContains) {
  // [0, 100) contains both; the second does not overlap the first short one, only the long one.
  std::vector<Section> v = {sec(0, 100, 0, "long"), sec(10, 20, 0, "b"), sec(30, 40, 0, "c")};
  auto r = find_overlaps(v, Mode::actual);
  EXPECT_EQ(r.count, 2u);
  ASSERT_EQ(r.examples.size(), 2u);
  EXPECT_EQ(r.examples[0].earlier, 0u);
  EXPECT_EQ(r.examples[1].earlier, 0u);
  EXPECT_EQ(r.worst_ns, 10);
}

TEST(Checker, ClaimedEndsAtTheDeadline) {
  // The first holder ran past its deadline (50): the library did not promise that part.
  std::vector<Section> v = {sec(0, 100, 50), sec(60, 80)};
  EXPECT_EQ(claimed(v), 0u);
  EXPECT_EQ(actual(v), 1u);
  // A deadline of 0 means none was reported: claimed = actual.
  EXPECT_EQ(claimed({sec(0, 100, 0), sec(60, 80)}), 1u);
  // A deadline after the release changes nothing.
  EXPECT_EQ(claimed({sec(0, 59, 500), sec(60, 80)}), 0u);
  EXPECT_EQ(claimed({sec(0, 61, 500), sec(60, 80)}), 1u);
}

TEST(Checker, ResourcesAreIndependent) {
  std::vector<Section> v = {sec(0, 100, 0, "a", "x"), sec(10, 20, 0, "b", "y"),
                            sec(50, 60, 0, "c", "x")};
  EXPECT_EQ(actual(v), 1u);
}

TEST(Checker, SectionsOfOneGrantAreOneHolder) {
  // Two processes of one command share the token: no conflict between them, but the grant spans
  // both, so a third holder inside the later one's time overlaps it.
  auto child = sec(0, 50, 0, "child");
  auto grandchild = sec(10, 200, 0, "grandchild");
  child.token = grandchild.token = "t1";
  EXPECT_EQ(actual({child, grandchild}), 0u);
  auto other = sec(100, 120, 0, "other");
  other.token = "t2";
  auto r = find_overlaps({child, grandchild, other}, Mode::actual);
  EXPECT_EQ(r.count, 1u);
  EXPECT_EQ(r.worst_ns, 20);
  ASSERT_EQ(r.examples.size(), 1u);
  EXPECT_EQ(r.examples[0].earlier_start, 0);  // the grant's whole span
  EXPECT_EQ(r.examples[0].earlier_end, 200);
  // The same token on another resource is another lock.
  auto elsewhere = sec(20, 30, 0, "x", "other-resource");
  elsewhere.token = "t1";
  EXPECT_EQ(actual({child, elsewhere}), 0u);
}

TEST(Checker, EmptyAndNegativeValiditySections) {
  // A grant whose deadline had passed when it was known occupies no claimed time, but is counted.
  std::vector<Section> v = {sec(0, 100, 0), sec(10, 30, 5), sec(40, 40)};
  EXPECT_EQ(negative_validity(v), 1u);
  EXPECT_EQ(claimed(v), 0u);
  EXPECT_EQ(actual(v), 1u);  // the empty [40, 40) never counts
}

TEST(Checker, LostUpdates) {
  auto a = sec(0, 10);
  a.wrote = true;
  auto b = sec(5, 15);
  b.wrote = true;
  auto c = sec(20, 30);
  EXPECT_EQ(lost_updates({a, b, c}, 1), 1);
  EXPECT_EQ(lost_updates({a, b, c}, 2), 0);
}

TEST(Checker, FencingTokensMustGrowFromGrantToGrant) {
  auto fenced = [](std::int64_t start, std::int64_t fence, std::string token,
                   std::string resource = "r") {
    auto s = sec(start, start + 5, 0, "w", std::move(resource));
    s.fence = fence;
    s.token = std::move(token);
    return s;
  };
  EXPECT_EQ(fencing_violations({}), 0u);
  EXPECT_EQ(fencing_violations({fenced(0, 1, "a"), fenced(10, 2, "b"), fenced(20, 7, "c")}), 0u);
  // Equal is a violation; unfenced grants (0) do not take part; input order does not matter.
  EXPECT_EQ(fencing_violations({fenced(10, 2, "b"), fenced(0, 2, "a"), fenced(5, 0, "x")}), 1u);
  // Each grant is compared with the highest token before it, not only with its predecessor.
  EXPECT_EQ(fencing_violations({fenced(0, 5, "a"), fenced(10, 3, "b"), fenced(20, 4, "c")}), 2u);
  // Two sections of one grant carry one token; other resources have counters of their own.
  EXPECT_EQ(fencing_violations({fenced(0, 3, "a"), fenced(1, 3, "a"), fenced(10, 4, "b"),
                                fenced(11, 1, "z", "other")}),
            0u);
}

TEST(Checker, RecordsRoundTrip) {
  Record r("section");
  r.add("worker", "w\t1").add("start", 12).add("end", 20).add("deadline", 15).add("wrote", 1);
  r.add("fence", 42).add("rejected", 0);
  Record back;
  ASSERT_TRUE(parse_record(r.to_line(), back));
  EXPECT_EQ(back.kind, "section");
  EXPECT_EQ(back.get("worker"), "w 1");
  EXPECT_EQ(back.get_int("start"), 12);
  EXPECT_EQ(back.get("missing"), "");
  EXPECT_EQ(back.get_int("missing", -1), -1);
  auto s = section_from_record(back);
  EXPECT_EQ(s.end, 20);
  EXPECT_EQ(s.deadline, 15);
  EXPECT_EQ(s.fence, 42);
  EXPECT_TRUE(s.wrote);
  EXPECT_FALSE(s.rejected);
  EXPECT_FALSE(parse_record("section\tstart=1\tend", back));  // torn mid-write
  EXPECT_FALSE(parse_record("", back));
}

// Quadratic reference: sections of one grant (same resource and token) merged into one
// interval; an interval counts when some interval before it in (start, end, index) order is
// still open at its start.
std::size_t reference(const std::vector<Section>& v, Mode mode) {
  auto end_of = [mode](const Section& s) { return mode == Mode::claimed ? claimed_end(s) : s.end; };
  struct Iv {
    std::string resource, token;
    std::int64_t start, end;
  };
  std::vector<Iv> ivs;
  for (const auto& s : v) {
    if (end_of(s) <= s.start) continue;
    bool merged = false;
    for (auto& iv : ivs) {
      if (!s.token.empty() && iv.token == s.token && iv.resource == s.resource) {
        iv.start = std::min(iv.start, s.start);
        iv.end = std::max(iv.end, end_of(s));
        merged = true;
      }
    }
    if (!merged) ivs.push_back({s.resource, s.token, s.start, end_of(s)});
  }
  std::size_t n = 0;
  for (std::size_t i = 0; i < ivs.size(); ++i) {
    for (std::size_t j = 0; j < ivs.size(); ++j) {
      if (j == i || ivs[j].resource != ivs[i].resource) continue;
      if (std::make_tuple(ivs[j].start, ivs[j].end, j) <
              std::make_tuple(ivs[i].start, ivs[i].end, i) &&
          ivs[j].end > ivs[i].start) {
        ++n;
        break;
      }
    }
  }
  return n;
}

TEST(Checker, MatchesQuadraticReferenceOnRandomSets) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 500; ++round) {
    std::vector<Section> v;
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      std::int64_t start = static_cast<std::int64_t>(rng() % 1000);
      std::int64_t end = start + static_cast<std::int64_t>(rng() % 60);
      std::int64_t deadline =
          rng() % 3 == 0 ? 0 : start - 5 + static_cast<std::int64_t>(rng() % 70);
      v.push_back(sec(start, end, deadline, "w" + std::to_string(i), rng() % 4 ? "a" : "b"));
      if (rng() % 3 == 0) v.back().token = "t" + std::to_string(rng() % 4);
    }
    for (auto mode : {Mode::claimed, Mode::actual})
      ASSERT_EQ(find_overlaps(v, mode).count, reference(v, mode)) << "round " << round;
  }
}

// --- semaphores --------------------------------------------------------------------------------

Section permit(std::int64_t start, std::int64_t end, int k, int slot, std::string worker = "w",
               std::int64_t deadline = 0, std::string resource = "r") {
  auto s = sec(start, end, deadline, std::move(worker), std::move(resource));
  s.permits = k;
  s.slot = slot;
  s.token = s.worker + "@" + std::to_string(start);
  return s;
}

PermitResult permits_claimed(const std::vector<Section>& v) {
  return find_permit_excess(v, Mode::claimed);
}

TEST(PermitChecker, ExactlyKOpenIsFine) {
  // k = 2: two grants open at once, in different slots, again and again.
  std::vector<Section> v = {permit(0, 10, 2, 0, "a"), permit(5, 20, 2, 1, "b"),
                            permit(10, 30, 2, 0, "c"), permit(20, 25, 2, 1, "d")};
  auto r = permits_claimed(v);
  EXPECT_EQ(r.violations(), 0u);
  EXPECT_EQ(r.max_open, 2u);
  // The mutex's check would call them overlaps: permits are not for it.
  EXPECT_GT(claimed(v), 0u);
}

TEST(PermitChecker, KPlusOneOpenIsCaught) {
  std::vector<Section> v = {permit(0, 10, 2, 0, "a"), permit(2, 10, 2, 1, "b"),
                            permit(4, 6, 2, 0, "c")};
  auto r = permits_claimed(v);
  EXPECT_EQ(r.excess, 1u);
  EXPECT_EQ(r.max_open, 3u);
  ASSERT_EQ(r.examples.size(), 1u);
  EXPECT_EQ(r.examples[0].at, 4);
  EXPECT_EQ(r.examples[0].k, 2);
  ASSERT_EQ(r.examples[0].holders.size(), 3u);
  EXPECT_EQ(r.examples[0].holders.back(), 2u);  // the one that made too many, last
  EXPECT_EQ(r.slot, 1u);                        // c shares slot 0 with a
  auto text = describe(v, r.examples[0], 0);
  EXPECT_NE(text.find("3 holders of k=2"), std::string::npos) << text;
  // k = 3 admits the same three.
  for (auto& s : v) s.permits = 3;
  v[2].slot = 2;
  EXPECT_EQ(permits_claimed(v).violations(), 0u);
}

TEST(PermitChecker, HalfOpenEndsDoNotCount) {
  // k = 1 in effect per slot, k = 2 overall: c starts exactly when a ends.
  std::vector<Section> v = {permit(0, 10, 2, 0, "a"), permit(5, 20, 2, 1, "b"),
                            permit(10, 15, 2, 0, "c")};
  auto r = permits_claimed(v);
  EXPECT_EQ(r.violations(), 0u);
  // One nanosecond more of a: three open, and two in slot 0.
  v[0].end = 11;
  r = permits_claimed(v);
  EXPECT_EQ(r.excess, 1u);
  EXPECT_EQ(r.slot, 1u);
}

TEST(PermitChecker, ClaimedEndsAtTheDeadlineActualAtTheRelease) {
  // a's validity ends at 6, its release comes at 10: claimed, c (from 8) makes two of k = 2.
  std::vector<Section> v = {permit(0, 10, 2, 0, "a", 6), permit(2, 20, 2, 1, "b"),
                            permit(8, 12, 2, 0, "c")};
  EXPECT_EQ(find_permit_excess(v, Mode::claimed).violations(), 0u);
  auto actual = find_permit_excess(v, Mode::actual);
  EXPECT_EQ(actual.excess, 1u);
  EXPECT_EQ(actual.slot, 1u);
}

TEST(PermitChecker, SameSlotOverlapIsCaughtEvenWithinK) {
  // Two holders of k = 3, but both in slot 1: each slot is a mutex.
  std::vector<Section> v = {permit(0, 10, 3, 1, "a"), permit(5, 15, 3, 1, "b")};
  auto r = permits_claimed(v);
  EXPECT_EQ(r.excess, 0u);
  EXPECT_EQ(r.slot, 1u);
  ASSERT_EQ(r.slot_overlaps.examples.size(), 1u);
  EXPECT_EQ(r.slot_overlaps.examples[0].earlier, 0u);  // indices into the sections given
  EXPECT_EQ(r.slot_overlaps.examples[0].later, 1u);
  EXPECT_EQ(r.violations(), 1u);
}

TEST(PermitChecker, OverlappingHoldersShareOneK) {
  // A holder of k = 2 and one of k = 3 at once, or a mutex section of the semaphore's resource.
  std::vector<Section> v = {permit(0, 10, 2, 0, "a"), permit(5, 15, 3, 1, "b")};
  EXPECT_EQ(permits_claimed(v).mismatch, 1u);
  std::vector<Section> w = {permit(0, 10, 2, 0, "a"), sec(5, 15, 0, "m")};
  EXPECT_EQ(permits_claimed(w).mismatch, 1u);
  // One after the other: k may change once the old holders are gone.
  std::vector<Section> x = {permit(0, 10, 2, 0, "a"), permit(10, 15, 3, 1, "b")};
  EXPECT_EQ(permits_claimed(x).violations(), 0u);
}

TEST(PermitChecker, SectionsOfOneGrantAreOneHolderAndResourcesAreIndependent) {
  // Two processes of one `redlock run --permits 2` share a token: one holder.
  auto a1 = permit(0, 10, 2, 0, "a");
  auto a2 = permit(3, 12, 2, 0, "a.child");
  a2.token = a1.token;
  std::vector<Section> v = {a1, a2, permit(5, 20, 2, 1, "b"), permit(1, 30, 2, 0, "x", 0, "other"),
                            permit(2, 30, 2, 1, "y", 0, "other")};
  EXPECT_EQ(permits_claimed(v).violations(), 0u);
  // Mutex sections of a resource no permit names are not looked at.
  v.push_back(sec(0, 100, 0, "m", "mutex"));
  v.push_back(sec(0, 100, 0, "n", "mutex"));
  EXPECT_EQ(permits_claimed(v).violations(), 0u);
}

TEST(PermitChecker, FencingIsJudgedPerSlot) {
  // Tokens come from one counter per semaphore, but grants of different slots may become known
  // in another order than their tokens were drawn: only a slot's grants must see them grow.
  auto a = permit(0, 10, 2, 0, "a");
  a.fence = 5;
  auto b = permit(1, 10, 2, 1, "b");
  b.fence = 4;
  auto c = permit(20, 30, 2, 0, "c");
  c.fence = 3;  // below a's, in a's slot
  EXPECT_EQ(fencing_violations(by_slot({a, b})), 0u);
  EXPECT_EQ(fencing_violations(by_slot({a, b, c})), 1u);
  EXPECT_EQ(fencing_violations({a, b}), 1u);  // the mutex's view
}

TEST(PermitChecker, SlotOutsideKIsCaught) {
  EXPECT_EQ(permits_claimed({permit(0, 10, 2, 2, "a")}).bad_slot, 1u);
  EXPECT_EQ(permits_claimed({permit(0, 10, 2, -1, "a")}).bad_slot, 1u);
}

TEST(PermitChecker, RecordsCarryPermitsAndSlot) {
  Record r("section");
  r.add("worker", "w").add("start", 1).add("end", 2).add("permits", 3).add("slot", 2);
  auto s = section_from_record(r);
  EXPECT_EQ(s.permits, 3);
  EXPECT_EQ(s.slot, 2);
  Record m("section");
  m.add("worker", "w").add("start", 1).add("end", 2);
  auto t = section_from_record(m);
  EXPECT_EQ(t.permits, 0);
  EXPECT_EQ(t.slot, -1);
  EXPECT_FALSE(is_permit(t));
}

// Quadratic reference: at the start of each grant, the grants of its resource open then.
std::size_t permit_reference(const std::vector<Section>& v) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::size_t open = 0;
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (v[j].resource != v[i].resource) continue;
      bool before =
          std::make_tuple(v[j].start, v[j].end, j) <= std::make_tuple(v[i].start, v[i].end, i);
      open += before && v[j].start <= v[i].start && v[j].end > v[i].start;
    }
    n += static_cast<int>(open) > v[i].permits;
  }
  return n;
}

TEST(PermitChecker, MatchesQuadraticReferenceOnRandomSets) {
  std::mt19937_64 rng(777);
  for (int round = 0; round < 500; ++round) {
    std::vector<Section> v;
    int n = static_cast<int>(rng() % 30);
    int k = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      std::int64_t start = static_cast<std::int64_t>(rng() % 500);
      std::int64_t end = start + 1 + static_cast<std::int64_t>(rng() % 80);
      v.push_back(permit(start, end, k, static_cast<int>(rng() % k), "w" + std::to_string(i), 0,
                         rng() % 3 ? "a" : "b"));
    }
    ASSERT_EQ(permits_claimed(v).excess, permit_reference(v)) << "round " << round;
  }
}

// --- read-write locks ------------------------------------------------------------------------

Section reader(std::int64_t start, std::int64_t end, std::string worker,
               std::string resource = "r") {
  auto s = sec(start, end, 0, std::move(worker), std::move(resource));
  s.shared = true;
  s.token = "t-" + s.worker;
  return s;
}

std::size_t rw_claimed(const std::vector<Section>& v) {
  return find_reader_writer_overlaps(v, Mode::claimed).count;
}

TEST(RwChecker, ReadersShareAndAWriterBesideAnyOfThemIsCaught) {
  // Three readers together, a writer after them (touching: half-open), another before.
  std::vector<Section> v = {reader(10, 30, "r1"), reader(12, 20, "r2"), reader(15, 40, "r3"),
                            sec(40, 50, 0, "w1"), sec(0, 10, 0, "w0")};
  EXPECT_EQ(rw_claimed(v), 0u);
  EXPECT_EQ(max_readers(v, Mode::claimed), 3u);
  // A writer inside r3's section (but after r1's and r2's): caught, against r3.
  v.push_back(sec(35, 36, 0, "w2"));
  auto r = find_reader_writer_overlaps(v, Mode::claimed);
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(v[r.examples[0].earlier].worker, "r3");
  EXPECT_EQ(v[r.examples[0].later].worker, "w2");
  // A reader that starts inside a writer's section: caught, against the writer.
  std::vector<Section> x = {sec(0, 10, 0, "w"), reader(9, 12, "late")};
  EXPECT_EQ(rw_claimed(x), 1u);
  // Writer against writer is find_overlaps' on the non-readers, not this check's.
  std::vector<Section> y = {reader(0, 1, "r"), sec(5, 10, 0, "a"), sec(6, 12, 0, "b")};
  EXPECT_EQ(rw_claimed(y), 0u);
}

TEST(RwChecker, ClaimedEndsAtTheDeadlineAndResourcesAreIndependent) {
  auto r1 = reader(0, 20, "r1");
  r1.deadline = 10;  // the holder ran past its validity
  std::vector<Section> v = {r1, sec(15, 25, 0, "w")};
  EXPECT_EQ(rw_claimed(v), 0u);
  EXPECT_EQ(find_reader_writer_overlaps(v, Mode::actual).count, 1u);
  // A writer of another resource, and a resource without readers, are not looked at.
  std::vector<Section> w = {reader(0, 20, "r1", "a"), sec(5, 10, 0, "w", "b"),
                            sec(0, 100, 0, "m", "c"), sec(0, 100, 0, "n", "c")};
  EXPECT_EQ(rw_claimed(w), 0u);
}

TEST(RwChecker, SectionsOfOneGrantAreOneReader) {
  // The processes of one `redlock run --shared` share a token: one reader from first start to
  // last end; a writer after its first process's end but inside the second's is caught.
  auto a1 = reader(0, 10, "a");
  auto a2 = reader(2, 30, "a.child");
  a2.token = a1.token;
  EXPECT_EQ(rw_claimed({a1, a2, sec(20, 25, 0, "w")}), 1u);
}

TEST(RwChecker, TornReadsAndFencing) {
  auto r = reader(0, 10, "r");
  r.read = 4;
  r.reread = 4;
  EXPECT_EQ(torn_reads({r}), 0u);
  r.reread = 5;
  EXPECT_EQ(torn_reads({r}), 1u);
  r.reread = -1;  // not read again (lost before its end)
  EXPECT_EQ(torn_reads({r}), 0u);
  // Readers together may learn their tokens out of order; a writer's must exceed every earlier
  // grant's, a reader's every earlier writer's.
  auto r1 = reader(0, 10, "r1");
  r1.fence = 5;
  auto r2 = reader(1, 10, "r2");
  r2.fence = 4;
  auto w = sec(20, 30, 0, "w");
  w.token = "tw";
  w.fence = 6;
  EXPECT_EQ(rw_fencing_violations({r1, r2, w}), 0u);
  EXPECT_EQ(fencing_violations({r1, r2, w}), 1u);  // the mutex's view would flag r2
  w.fence = 5;
  EXPECT_EQ(rw_fencing_violations({r1, r2, w}), 1u);
  auto r3 = reader(40, 50, "r3");
  r3.fence = 5;  // not above the writer's
  w.fence = 6;
  EXPECT_EQ(rw_fencing_violations({r1, r2, w, r3}), 1u);
}

TEST(RwChecker, FencingWithoutReadersIsThePermitsAndMutexsJudgement) {
  // The harness judges every run's fencing with rw_fencing_violations: with no reader among the
  // sections it must say what fencing_violations(by_slot(...)) said before.
  std::mt19937_64 rng(99);
  for (int round = 0; round < 300; ++round) {
    std::vector<Section> v;
    int n = static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      auto start = static_cast<std::int64_t>(rng() % 200);
      Section s = rng() % 2 ? permit(start, start + 10, 2, static_cast<int>(rng() % 2),
                                     "p" + std::to_string(i))
                            : sec(start, start + 10, 0, "m" + std::to_string(i));
      s.token = rng() % 5 ? "t" + std::to_string(i) : "t0";  // some grants share a token
      s.fence = static_cast<std::int64_t>(rng() % 15);
      v.push_back(s);
    }
    ASSERT_EQ(rw_fencing_violations(v), fencing_violations(by_slot(v))) << "round " << round;
  }
}

TEST(RwChecker, RecordsCarryShared) {
  Record r("section");
  r.add("worker", "w")
      .add("start", 1)
      .add("end", 2)
      .add("shared", 1)
      .add("read", 3)
      .add("reread", 3);
  auto s = section_from_record(r);
  EXPECT_TRUE(is_reader(s));
  EXPECT_EQ(s.read, 3);
  EXPECT_EQ(s.reread, 3);
  Record m("section");
  m.add("worker", "w").add("start", 1).add("end", 2);
  EXPECT_FALSE(is_reader(section_from_record(m)));
}

// Quadratic reference: grants that start while a grant of the other kind of their resource is
// open (the earlier one by start, ties by end then index, as the sweep orders them).
std::size_t rw_reference(const std::vector<Section>& v) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool hit = false;
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (j == i || v[j].resource != v[i].resource || v[j].shared == v[i].shared) continue;
      bool before =
          std::make_tuple(v[j].start, v[j].end, j) < std::make_tuple(v[i].start, v[i].end, i);
      hit = hit || (before && v[j].end > v[i].start);
    }
    n += hit;
  }
  return n;
}

TEST(RwChecker, MatchesQuadraticReferenceOnRandomSets) {
  std::mt19937_64 rng(4242);
  for (int round = 0; round < 500; ++round) {
    std::vector<Section> v;
    int n = static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      std::int64_t start = static_cast<std::int64_t>(rng() % 500);
      std::int64_t end = start + 1 + static_cast<std::int64_t>(rng() % 80);
      std::string res = rng() % 3 ? "a" : "b";
      if (rng() % 3)
        v.push_back(reader(start, end, "r" + std::to_string(i), res));
      else
        v.push_back(sec(start, end, 0, "w" + std::to_string(i), res));
      v.back().token = "t" + std::to_string(i);
    }
    ASSERT_EQ(rw_claimed(v), rw_reference(v)) << "round " << round;
  }
}

}  // namespace
}  // namespace redlock::chaos
