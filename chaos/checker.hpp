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
  int permits = 0;            // a permit of a semaphore of this many (k); 0: a mutex
  int slot = -1;              // the permit's slot, 0 to k - 1; -1: a mutex
  bool shared = false;        // a reader of the resource's read-write lock; false: a writer
  std::int64_t read = -1;     // the counter as it read it at its start (-1: not read)
  std::int64_t reread = -1;   // a reader: the counter read again before its end (-1: not read)
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

// --- semaphores ----------------------------------------------------------------------------
// Sections with permits > 0 are permits of a semaphore of k = permits: up to k holders of the
// resource at once, each in a slot of its own. find_overlaps (a mutex's check) does not apply to
// them; find_permit_excess does, in either mode:
//   excess:   a grant starts while k or more grants of the same resource are open, so that more
//             than k are open at once (counted once per such start, in an O(n log n) sweep);
//   slot:     two grants of one slot overlap (each slot is a mutex: find_overlaps per slot);
//   mismatch: a grant starts while a grant of the resource with another k (or a mutex section of
//             it) is open: every holder of one semaphore at one time has one k;
//   bad_slot: a permit whose slot is not in 0..k-1.
// Sections that share a token are one grant, as for the mutex. Intervals are half-open.

struct PermitExcess {
  std::int64_t at = 0;               // the start that made too many open
  int k = 0;                         // its k
  std::vector<std::size_t> holders;  // a section of each open grant, that one last
  std::vector<std::int64_t> starts;  // their intervals as checked
  std::vector<std::int64_t> ends;
};

struct PermitResult {
  std::size_t excess = 0;              // starts with more than k grants open
  std::size_t slot = 0;                // overlaps of two grants of one slot
  std::size_t mismatch = 0;            // starts while a grant with another k is open
  std::size_t bad_slot = 0;            // permits whose slot is outside 0..k-1
  std::size_t max_open = 0;            // the most grants of one resource open at once
  std::vector<PermitExcess> examples;  // the first few excesses, in start order
  OverlapResult slot_overlaps;         // of the per-slot view (by_slot)
  std::size_t violations() const { return excess + slot + mismatch + bad_slot; }
};

// True for a permit of a semaphore (permits > 0).
inline bool is_permit(const Section& s) { return s.permits > 0; }

PermitResult find_permit_excess(const std::vector<Section>& sections, Mode mode,
                                std::size_t max_examples = 3);

// The sections with each permit's resource renamed to "resource#slot<S>": each slot is a mutex,
// so find_overlaps, fencing_violations of that view judge slots one by one. Same indices.
std::vector<Section> by_slot(const std::vector<Section>& sections);

// "3 holders of k=2 at 1.234: w1 (slot 0) [1.000, 1.500), ..." (times in s, relative to t0).
std::string describe(const std::vector<Section>& sections, const PermitExcess& e, std::int64_t t0);

// --- read-write locks ------------------------------------------------------------------------
// Sections with shared = true are readers of their resource's read-write lock; the resource's
// other sections that are not permits are its writers (a writer is a mutex holder of the same
// key, docs/guide-rwlock.md). Readers may overlap each other. find_overlaps on the sections that
// are not readers judges writer against writer; find_reader_writer_overlaps judges reader against
// writer: it counts each grant that starts while a grant of the other kind of the same resource
// is open (zero exactly when no reader overlaps a writer), in an O(n log n) sweep. Sections that
// share a token are one grant, as for the mutex. Intervals are half-open.
inline bool is_reader(const Section& s) { return s.shared; }

OverlapResult find_reader_writer_overlaps(const std::vector<Section>& sections, Mode mode,
                                          std::size_t max_examples = 3);

// The most readers of one resource open at once (the sweep's view, in `mode`).
std::size_t max_readers(const std::vector<Section>& sections, Mode mode);

// Readers that read the counter again before their end and found another value than at their
// start: a writer wrote inside a reader's section (what the holders did, as the storage saw it).
std::size_t torn_reads(const std::vector<Section>& sections);

// Fenced grants whose fencing token is not greater than every fenced grant of the same resource
// that started before them and that they exclude: a writer's against every earlier grant (reader
// or writer), a reader's against earlier writers only (readers that run together may learn
// their tokens in another order than they were drawn). Permits are judged per slot, as
// fencing_violations(by_slot(...)) does. With no reader among `sections` it equals that.
std::size_t rw_fencing_violations(const std::vector<Section>& sections);

// A `section` record as a Section.
Section section_from_record(const Record& r);

// "w3 [12.345, 12.901) and w1 [12.800, 13.200) overlap 101.0 ms" (times in s, relative to t0).
std::string describe(const std::vector<Section>& sections, const Overlap& o, std::int64_t t0);

}  // namespace redlock::chaos
