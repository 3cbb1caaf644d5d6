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

}  // namespace
}  // namespace redlock::chaos
