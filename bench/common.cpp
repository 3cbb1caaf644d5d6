#include "common.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace bench {

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    auto i = static_cast<std::size_t>(std::lround(p / 100.0 * static_cast<double>(v.size() - 1)));
    return v[std::min(i, v.size() - 1)];
  };
  double sum = 0;
  for (double x : v) sum += x;
  s.p50 = at(50);
  s.p90 = at(90);
  s.p99 = at(99);
  s.p999 = at(99.9);
  s.mean = sum / static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  return s;
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

namespace {
std::string number_text(double v) {
  if (!std::isfinite(v)) return "null";
  // 0.1 resolution, finer below 10 (fractions such as a CPU share): 3 decimals.
  int decimals = std::fabs(v) < 10 ? 3 : 1;
  double scale = decimals == 3 ? 1000.0 : 10.0;
  double r = std::round(v * scale) / scale;
  char buf[64];
  if (r == std::floor(r) && std::fabs(r) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", r);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, r);
  std::string text = buf;
  while (text.back() == '0') text.pop_back();  // "0.250" -> "0.25"
  return text;
}
}  // namespace

void JsonLine::key(const std::string& k) {
  if (!body_.empty()) body_ += ',';
  body_ += '"' + json_escape(k) + "\":";
}

JsonLine& JsonLine::str(const std::string& k, const std::string& value) {
  key(k);
  body_ += '"' + json_escape(value) + '"';
  return *this;
}

JsonLine& JsonLine::num(const std::string& k, double value) {
  key(k);
  body_ += number_text(value);
  return *this;
}

JsonLine& JsonLine::integer(const std::string& k, long long value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::boolean(const std::string& k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::null(const std::string& k) {
  key(k);
  body_ += "null";
  return *this;
}

JsonLine& JsonLine::raw(const std::string& k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

JsonLine& JsonLine::stats(const std::string& k, const Summary& s) {
  JsonLine o;
  o.integer("n", static_cast<long long>(s.n));
  if (s.n > 0) {
    o.num("p50", s.p50).num("p90", s.p90).num("p99", s.p99).num("p999", s.p999);
    o.num("mean", s.mean).num("min", s.min).num("max", s.max);
  }
  return raw(k, o.text());
}

JsonLine& JsonLine::numbers(const std::string& k, const std::vector<double>& values) {
  std::string a = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) a += ',';
    a += number_text(values[i]);
  }
  return raw(k, a + "]");
}

void JsonLine::emit() const {
  std::string line = text() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

double process_cpu_seconds(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  // Fields 3..13 precede utime (14) and stime (15).
  std::string skip;
  for (int i = 3; i <= 13; ++i) rest >> skip;
  unsigned long long ut = 0, st = 0;
  if (!(rest >> ut >> st)) return -1;
  return static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

long long self_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(f >> size >> resident)) return -1;
  return resident * static_cast<long long>(sysconf(_SC_PAGESIZE));
}

long long heap_in_use_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  return static_cast<long long>(mi.uordblks + mi.hblkhd);
#else
  return -1;
#endif
}

std::vector<std::uint16_t> parse_ports(const std::string& list) {
  std::vector<std::uint16_t> ports;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    std::size_t used = 0;
    long v = std::stol(item, &used);
    if (used != item.size() || v < 1 || v > 65535)
      throw std::invalid_argument("bad port '" + item + "'");
    ports.push_back(static_cast<std::uint16_t>(v));
  }
  if (ports.empty()) throw std::invalid_argument("no ports given");
  return ports;
}

std::string node_list(const std::vector<std::uint16_t>& ports) {
  std::string s;
  for (auto p : ports) {
    if (!s.empty()) s += ',';
    s += "redis://127.0.0.1:" + std::to_string(p);
  }
  return s;
}

std::string random_hex(std::size_t digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s(digits, '0');
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    if (i % 16 == 0) bits = rng();
    s[i] = hex[bits & 15];
    bits >>= 4;
  }
  return s;
}

}  // namespace bench
