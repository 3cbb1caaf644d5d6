#include "checker.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace redlock::chaos {
namespace {

std::int64_t end_in(const Section& s, Mode mode) {
  return mode == Mode::claimed ? claimed_end(s) : s.end;
}

// One interval per grant of the sections `keep` accepts: sections that share a token (the
// processes of one `redlock run` command, say) are one holder, spanning from the first start to
// the last end. Empty ones occupy no time and are left out. By resource, then start, then end.
struct Grant {
  std::size_t index;  // a section of the grant (its first), for the examples
  std::int64_t start;
  std::int64_t end;
};
template <typename Keep>
std::vector<Grant> grants_of(const std::vector<Section>& sections, Mode mode, Keep&& keep) {
  std::vector<Grant> grants;
  grants.reserve(sections.size());
  std::map<std::pair<std::string, std::string>, std::size_t> by_token;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto& s = sections[i];
    if (!keep(s)) continue;
    auto end = end_in(s, mode);
    if (end <= s.start) continue;  // empty: occupies no time
    if (!s.token.empty()) {
      auto [it, fresh] = by_token.emplace(std::make_pair(s.resource, s.token), grants.size());
      if (!fresh) {
        auto& merged = grants[it->second];
        merged.start = std::min(merged.start, s.start);
        merged.end = std::max(merged.end, end);
        continue;
      }
    }
    grants.push_back({i, s.start, end});
  }
  std::sort(grants.begin(), grants.end(), [&](const Grant& x, const Grant& y) {
    const auto& rx = sections[x.index].resource;
    const auto& ry = sections[y.index].resource;
    if (rx != ry) return rx < ry;
    if (x.start != y.start) return x.start < y.start;
    return x.end < y.end;
  });
  return grants;
}

}  // namespace

std::int64_t claimed_end(const Section& s) {
  return s.deadline > 0 ? std::min(s.end, s.deadline) : s.end;
}

OverlapResult find_overlaps(const std::vector<Section>& sections, Mode mode,
                            std::size_t max_examples) {
  using Interval = Grant;
  auto intervals = grants_of(sections, mode, [](const Section&) { return true; });

  OverlapResult result;
  const std::string* resource = nullptr;
  const Interval* latest = nullptr;  // the interval that ends last so far
  for (const auto& iv : intervals) {
    const auto& r = sections[iv.index].resource;
    if (resource == nullptr || *resource != r) {
      resource = &r;
      latest = &iv;
      continue;
    }
    if (iv.start < latest->end) {
      ++result.count;
      auto ns = std::min(iv.end, latest->end) - iv.start;
      result.worst_ns = std::max(result.worst_ns, ns);
      if (result.examples.size() < max_examples)
        result.examples.push_back(
            {latest->index, iv.index, ns, latest->start, latest->end, iv.start, iv.end});
    }
    if (iv.end > latest->end) latest = &iv;
  }
  return result;
}

std::size_t negative_validity(const std::vector<Section>& sections) {
  return static_cast<std::size_t>(
      std::count_if(sections.begin(), sections.end(),
                    [](const auto& s) { return s.deadline > 0 && s.deadline <= s.start; }));
}

std::size_t fencing_violations(const std::vector<Section>& sections) {
  struct Grant {
    const std::string* resource;
    std::int64_t start;
    std::int64_t fence;
  };
  std::vector<Grant> grants;
  std::map<std::pair<std::string, std::string>, std::size_t> by_token;
  for (const auto& s : sections) {
    if (s.fence <= 0) continue;
    auto [it, fresh] = by_token.emplace(std::make_pair(s.resource, s.token), grants.size());
    if (!fresh && !s.token.empty()) {
      auto& g = grants[it->second];
      g.start = std::min(g.start, s.start);
      continue;
    }
    grants.push_back({&s.resource, s.start, s.fence});
  }
  std::sort(grants.begin(), grants.end(), [](const Grant& a, const Grant& b) {
    if (*a.resource != *b.resource) return *a.resource < *b.resource;
    return a.start < b.start;
  });
  std::size_t violations = 0;
  for (std::size_t i = 0; i < grants.size(); ++i) {
    if (i == 0 || *grants[i].resource != *grants[i - 1].resource) continue;
    // The highest token so far is carried in place: grants[i - 1].fence holds it.
    if (grants[i].fence <= grants[i - 1].fence) {
      ++violations;
      grants[i].fence = grants[i - 1].fence;
    }
  }
  return violations;
}

std::int64_t lost_updates(const std::vector<Section>& sections, std::int64_t final_counter) {
  auto writes =
      std::count_if(sections.begin(), sections.end(), [](const auto& s) { return s.wrote; });
  return static_cast<std::int64_t>(writes) - final_counter;
}

Section section_from_record(const Record& r) {
  Section s;
  s.resource = r.get("resource");
  s.worker = r.get("worker");
  s.token = r.get("token");
  s.start = r.get_int("start");
  s.end = r.get_int("end");
  s.deadline = r.get_int("deadline");
  s.fence = r.get_int("fence");
  s.wrote = r.get_int("wrote") == 1;
  s.rejected = r.get_int("rejected") == 1;
  s.permits = static_cast<int>(r.get_int("permits", 0));
  s.slot = static_cast<int>(r.get_int("slot", -1));
  s.shared = r.get_int("shared", 0) == 1;
  s.read = r.get_int("read", -1);
  s.reread = r.get_int("reread", -1);
  return s;
}

std::vector<Section> by_slot(const std::vector<Section>& sections) {
  auto v = sections;
  for (auto& s : v)
    if (is_permit(s)) s.resource += "#slot" + std::to_string(s.slot);
  return v;
}

PermitResult find_permit_excess(const std::vector<Section>& sections, Mode mode,
                                std::size_t max_examples) {
  PermitResult result;
  // Only resources that some permit names: a mutex section of such a resource is a holder with
  // another k (0), which the semaphore's nodes refuse.
  std::set<std::string> semaphores;
  for (const auto& s : sections)
    if (is_permit(s)) semaphores.insert(s.resource);
  if (semaphores.empty()) return result;

  struct Interval {
    std::size_t index;
    std::int64_t start;
    std::int64_t end;
    int k;
  };
  for (const auto& s : sections)
    if (semaphores.count(s.resource) != 0 && is_permit(s) && (s.slot < 0 || s.slot >= s.permits))
      ++result.bad_slot;
  std::vector<Interval> intervals;
  for (const auto& g : grants_of(
           sections, mode, [&](const Section& s) { return semaphores.count(s.resource) != 0; }))
    intervals.push_back({g.index, g.start, g.end, sections[g.index].permits});

  // The sweep: the open grants by end, and how many of them have each k.
  std::set<std::pair<std::int64_t, std::size_t>> open;  // (end, position in intervals)
  std::map<int, std::size_t> ks;
  const std::string* resource = nullptr;
  for (std::size_t n = 0; n < intervals.size(); ++n) {
    const auto& iv = intervals[n];
    const auto& r = sections[iv.index].resource;
    if (resource == nullptr || *resource != r) {
      resource = &r;
      open.clear();
      ks.clear();
    }
    // Half-open: a grant that ends where this one starts is closed.
    while (!open.empty() && open.begin()->first <= iv.start) {
      auto k = intervals[open.begin()->second].k;
      if (--ks[k] == 0) ks.erase(k);
      open.erase(open.begin());
    }
    if (!ks.empty() && (ks.size() > 1 || ks.begin()->first != iv.k)) ++result.mismatch;
    open.insert({iv.end, n});
    ++ks[iv.k];
    result.max_open = std::max(result.max_open, open.size());
    if (static_cast<int>(open.size()) > std::max(iv.k, 1)) {
      ++result.excess;
      if (result.examples.size() < max_examples) {
        PermitExcess e;
        e.at = iv.start;
        e.k = iv.k;
        for (const auto& [end, m] : open) {
          if (m == n) continue;
          e.holders.push_back(intervals[m].index);
          e.starts.push_back(intervals[m].start);
          e.ends.push_back(intervals[m].end);
        }
        e.holders.push_back(iv.index);
        e.starts.push_back(iv.start);
        e.ends.push_back(iv.end);
        result.examples.push_back(std::move(e));
      }
    }
  }

  // Each slot is a mutex: two grants of one slot must never overlap.
  auto slots = by_slot(sections);
  std::vector<Section> permits;
  std::vector<std::size_t> original;  // index in `sections` of each of `permits`
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!is_permit(slots[i])) continue;
    permits.push_back(std::move(slots[i]));
    original.push_back(i);
  }
  result.slot_overlaps = find_overlaps(permits, mode, max_examples);
  for (auto& ex : result.slot_overlaps.examples) {
    ex.earlier = original[ex.earlier];
    ex.later = original[ex.later];
  }
  result.slot = result.slot_overlaps.count;
  return result;
}

OverlapResult find_reader_writer_overlaps(const std::vector<Section>& sections, Mode mode,
                                          std::size_t max_examples) {
  // Only resources that some reader names; their grants that are not permits, by start.
  std::set<std::string> rwlocks;
  for (const auto& s : sections)
    if (is_reader(s)) rwlocks.insert(s.resource);
  OverlapResult result;
  if (rwlocks.empty()) return result;
  auto grants = grants_of(sections, mode, [&](const Section& s) {
    return !is_permit(s) && rwlocks.count(s.resource) != 0;
  });
  const std::string* resource = nullptr;
  const Grant* latest[2] = {nullptr, nullptr};  // [reader?]: the grant of that kind ending last
  for (const auto& g : grants) {
    const auto& r = sections[g.index].resource;
    if (resource == nullptr || *resource != r) {
      resource = &r;
      latest[0] = latest[1] = nullptr;
    }
    const bool reader = is_reader(sections[g.index]);
    // A reader meets the writer that ends last among those that started before it, a writer the
    // reader that does: every earlier grant of the other kind that is still open ends no later.
    const Grant* other = latest[reader ? 0 : 1];
    if (other != nullptr && g.start < other->end) {
      ++result.count;
      auto ns = std::min(g.end, other->end) - g.start;
      result.worst_ns = std::max(result.worst_ns, ns);
      if (result.examples.size() < max_examples)
        result.examples.push_back(
            {other->index, g.index, ns, other->start, other->end, g.start, g.end});
    }
    auto& mine = latest[reader ? 1 : 0];
    if (mine == nullptr || g.end > mine->end) mine = &g;
  }
  return result;
}

std::size_t max_readers(const std::vector<Section>& sections, Mode mode) {
  auto grants = grants_of(sections, mode, is_reader);
  std::set<std::pair<std::int64_t, std::size_t>> open;  // (end, position)
  const std::string* resource = nullptr;
  std::size_t most = 0;
  for (std::size_t n = 0; n < grants.size(); ++n) {
    const auto& r = sections[grants[n].index].resource;
    if (resource == nullptr || *resource != r) {
      resource = &r;
      open.clear();
    }
    while (!open.empty() && open.begin()->first <= grants[n].start) open.erase(open.begin());
    open.insert({grants[n].end, n});
    most = std::max(most, open.size());
  }
  return most;
}

std::size_t torn_reads(const std::vector<Section>& sections) {
  return static_cast<std::size_t>(
      std::count_if(sections.begin(), sections.end(), [](const auto& s) {
        return is_reader(s) && s.read >= 0 && s.reread >= 0 && s.reread != s.read;
      }));
}

std::size_t rw_fencing_violations(const std::vector<Section>& sections) {
  struct Fenced {
    const std::string* resource;
    std::int64_t start;
    std::int64_t fence;
    bool reader;
  };
  auto slots = by_slot(sections);
  std::vector<Fenced> grants;
  std::map<std::pair<std::string, std::string>, std::size_t> by_token;
  for (const auto& s : slots) {
    if (s.fence <= 0) continue;
    auto [it, fresh] = by_token.emplace(std::make_pair(s.resource, s.token), grants.size());
    if (!fresh && !s.token.empty()) {
      auto& g = grants[it->second];
      g.start = std::min(g.start, s.start);
      continue;
    }
    grants.push_back({&s.resource, s.start, s.fence, is_reader(s)});
  }
  std::sort(grants.begin(), grants.end(), [](const Fenced& a, const Fenced& b) {
    if (*a.resource != *b.resource) return *a.resource < *b.resource;
    return a.start < b.start;
  });
  std::size_t violations = 0;
  std::int64_t highest = 0, highest_writer = 0;  // of the earlier grants of this resource
  for (std::size_t i = 0; i < grants.size(); ++i) {
    if (i == 0 || *grants[i].resource != *grants[i - 1].resource) highest = highest_writer = 0;
    const auto& g = grants[i];
    if (g.fence <= (g.reader ? highest_writer : highest)) ++violations;
    highest = std::max(highest, g.fence);
    if (!g.reader) highest_writer = std::max(highest_writer, g.fence);
  }
  return violations;
}

std::string describe(const std::vector<Section>& sections, const PermitExcess& e, std::int64_t t0) {
  auto sec = [t0](std::int64_t ns) { return static_cast<double>(ns - t0) / 1e9; };
  char buf[160];
  std::snprintf(buf, sizeof buf, "%zu holders of k=%d at %.3f:", e.holders.size(), e.k, sec(e.at));
  std::string text = buf;
  for (std::size_t i = 0; i < e.holders.size(); ++i) {
    const auto& s = sections[e.holders[i]];
    std::snprintf(buf, sizeof buf, "%s %s (slot %d) [%.3f, %.3f)", i ? "," : "", s.worker.c_str(),
                  s.slot, sec(e.starts[i]), sec(e.ends[i]));
    text += buf;
  }
  return text;
}

std::string describe(const std::vector<Section>& sections, const Overlap& o, std::int64_t t0) {
  auto sec = [t0](std::int64_t ns) { return static_cast<double>(ns - t0) / 1e9; };
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s [%.3f, %.3f) and %s [%.3f, %.3f) overlap %.1f ms",
                sections[o.earlier].worker.c_str(), sec(o.earlier_start), sec(o.earlier_end),
                sections[o.later].worker.c_str(), sec(o.later_start), sec(o.later_end),
                static_cast<double>(o.ns) / 1e6);
  return buf;
}

}  // namespace redlock::chaos
