// A reply of a simulated Redis node (RESP2 shapes): nil, integer, bulk string, status, error, or
// an array of replies. A plain value: compared with ==, printed with to_string() for traces.
// Pure; any thread.
//
//   Value v = node.execute({"GET", "k"}, now_ms, conn);
//   if (v.is_nil()) ...; if (v.kind == Value::Kind::bulk) use(v.str);
//   Value::array({Value::integer(1), Value::integer(0)}) == node.execute(...)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::sim {

struct Value {
  // RESP2 knows a nil bulk and a nil array; both reach hiredis as REDIS_REPLY_NIL and Lua as
  // false, so one nil stands for both.
  enum class Kind { nil, integer, bulk, status, error, array };

  Kind kind = Kind::nil;
  std::int64_t number = 0;   // integer
  std::string str;           // bulk, status, error (an error's text has no leading '-')
  std::vector<Value> items;  // array

  static Value nil() { return {}; }
  static Value integer(std::int64_t n) {
    Value v;
    v.kind = Kind::integer;
    v.number = n;
    return v;
  }
  static Value bulk(std::string s) { return text(Kind::bulk, std::move(s)); }
  static Value status(std::string s) { return text(Kind::status, std::move(s)); }
  static Value error(std::string s) { return text(Kind::error, std::move(s)); }
  static Value array(std::vector<Value> items) {
    Value v;
    v.kind = Kind::array;
    v.items = std::move(items);
    return v;
  }

  bool is_nil() const { return kind == Kind::nil; }
  bool is_error() const { return kind == Kind::error; }
  // The first word of an error ("WRONGTYPE", "OOM", "NOSCRIPT", "ERR"); empty for non-errors.
  std::string error_code() const {
    return is_error() ? str.substr(0, str.find(' ')) : std::string();
  }

  friend bool operator==(const Value& a, const Value& b) {
    return a.kind == b.kind && a.number == b.number && a.str == b.str && a.items == b.items;
  }
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

  // Readable and deterministic, bytes outside printable ASCII escaped (\x00):
  // (nil), (integer) 3, "bulk", +status, -ERR text, [a, b].
  std::string to_string() const;

 private:
  static Value text(Kind k, std::string s) {
    Value v;
    v.kind = k;
    v.str = std::move(s);
    return v;
  }
};

// `bytes` quoted for a trace: printable ASCII as it is, '"' and '\\' escaped, anything else
// as \xHH.
std::string escape_bytes(const std::string& bytes);

}  // namespace redlock::sim
