// Printing of simulated replies for traces (value.hpp).
#include "value.hpp"

namespace redlock::sim {

std::string escape_bytes(const std::string& bytes) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() + 2);
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string Value::to_string() const {
  switch (kind) {
    case Kind::nil:
      return "(nil)";
    case Kind::integer:
      return "(integer) " + std::to_string(number);
    case Kind::bulk:
      return "\"" + escape_bytes(str) + "\"";
    case Kind::status:
      return "+" + escape_bytes(str);
    case Kind::error:
      return "-" + escape_bytes(str);
    case Kind::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += items[i].to_string();
      }
      return out + "]";
    }
  }
  return "?";
}

}  // namespace redlock::sim
