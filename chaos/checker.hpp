// The mutual-exclusion checker: exact overlap detection over the critical sections that the
// worker processes recorded, in O(n log n).
//
// Two modes:
//   claimed: [start, min(end, deadline)) — what the library promised. Must never overlap while
//            the faults stay inside Redlock's assumptions.
//   actual:  [start, end)                — what the holders did. Overlaps when a holder ran past
//            its validity (a paused client): the limit that only fencing can close.
// Intervals are half-open, so a section that ends exactly when the next begins does not overlap
// it. Sections of different resources never conflict; sections with the same token are one grant
// (the processes of one `redlock run` command) and count as one interval, from the first start
// to the last end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "record.hpp"

namespace redlock::chaos {

struct Section {
  std::string resource;
  std::string worker;
  std::string token;
  std::int64_t start = 0;     // the grant was known (ns, CLOCK_MONOTONIC_RAW)
  std::int64_t end = 0;       // the holder stopped acting, before its release was sent
  std::int64_t deadline = 0;  // the validity deadline the library reported; 0: none reported
  std::int64_t fence = 0;     // the grant's fencing token; 0: none asked for
  bool wrote = false;         // it wrote the shared counter (read-modify-write)
  bool rejected = false;      // the storage refused its write (fencing token below one it saw)
};

// End of a section in claimed mode: min(end, deadline), or end when no deadline was reported.
std::int64_t claimed_end(const Section& s);

enum class Mode { claimed, actual };

struct Overlap {
  std::size_t earlier = 0;  // index into the checked vector: the section still open...
  std::size_t later = 0;    // ...when this one started
  std::int64_t ns = 0;      // how long they overlapped
  // The two intervals as checked (a grant's sections merged, the mode's end).
  std::int64_t earlier_start = 0, earlier_end = 0, later_start = 0, later_end = 0;
};

struct OverlapResult {
  // Sections that start before an earlier-starting section of the same resource has ended: zero
  // exactly when no two sections overlap.
  std::size_t count = 0;
  std::int64_t worst_ns = 0;      // the longest single overlap found
  std::vector<Overlap> examples;  // the first few, in start order
};

OverlapResult find_overlaps(const std::vector<Section>& sections, Mode mode,
                            std::size_t max_examples = 3);

// Sections granted with a validity deadline that had already passed when the grant was known.
std::size_t negative_validity(const std::vector<Section>& sections);

// Fenced grants (sections sharing a token are one grant) whose fencing token is not greater than
// the token of every fenced grant of the same resource that started before them. Zero while the
// nodes keep their data (fence counters have no ttl; an empty restart resets them).
std::size_t fencing_violations(const std::vector<Section>& sections);

// Lost updates of the shared counter: sections that wrote it, minus its final value.
std::int64_t lost_updates(const std::vector<Section>& sections, std::int64_t final_counter);

// A `section` record as a Section.
Section section_from_record(const Record& r);

// "w3 [12.345, 12.901) and w1 [12.800, 13.200) overlap 101.0 ms" (times in s, relative to t0).
std::string describe(const std::vector<Section>& sections, const Overlap& o, std::int64_t t0);

}  // namespace redlock::chaos
