#include "record.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <ctime>
#include <fstream>

namespace redlock::chaos {
namespace {

std::string clean(std::string s) {
  for (auto& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

std::int64_t raw_now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Record& Record::add(std::string name, std::string value) {
  fields.emplace_back(clean(std::move(name)), clean(std::move(value)));
  return *this;
}

Record& Record::add(std::string name, std::int64_t value) {
  return add(std::move(name), std::to_string(value));
}

const std::string& Record::get(std::string_view name) const {
  static const std::string empty;
  for (const auto& [n, v] : fields)
    if (n == name) return v;
  return empty;
}

std::int64_t Record::get_int(std::string_view name, std::int64_t fallback) const {
  const auto& v = get(name);
  std::int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return fallback;
  return out;
}

std::string Record::to_line() const {
  std::string line = clean(kind);
  for (const auto& [n, v] : fields) {
    line += '\t';
    line += n;
    line += '=';
    line += v;
  }
  line += '\n';
  return line;
}

bool parse_record(std::string_view line, Record& out) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  out = Record();
  std::size_t pos = 0;
  bool first = true;
  while (pos <= line.size()) {
    auto tab = line.find('\t', pos);
    auto part =
        line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos);
    if (first) {
      out.kind.assign(part);
      first = false;
    } else if (!part.empty()) {
      auto eq = part.find('=');
      if (eq == std::string_view::npos) return false;  // a torn line
      out.fields.emplace_back(std::string(part.substr(0, eq)), std::string(part.substr(eq + 1)));
    }
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
  }
  return !out.kind.empty();
}

std::vector<Record> read_records(const std::string& path) {
  std::vector<Record> records;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    Record r;
    if (parse_record(line, r)) records.push_back(std::move(r));
  }
  return records;
}

bool append_record(int fd, const Record& record) { return write_all(fd, record.to_line()); }

bool write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace redlock::chaos
