// Value <-> hiredis reply trees (hiredis_reply.hpp). Allocated with malloc/calloc, as hiredis
// allocates its own, so that either deleter frees them.
#include "hiredis_reply.hpp"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace redlock::sim {

void ReplyDeleter::operator()(redisReply* reply) const {
  if (reply == nullptr) return;
  if (reply->element != nullptr) {
    for (std::size_t i = 0; i < reply->elements; ++i) (*this)(reply->element[i]);
    std::free(reply->element);
  }
  std::free(reply->str);
  std::free(reply);
}

ReplyPtr to_hiredis(const Value& value) {
  ReplyPtr out(static_cast<redisReply*>(std::calloc(1, sizeof(redisReply))));
  if (!out) throw std::bad_alloc();
  auto text = [&](int type) {
    out->type = type;
    out->str = static_cast<char*>(std::malloc(value.str.size() + 1));
    if (out->str == nullptr) throw std::bad_alloc();
    if (!value.str.empty()) std::memcpy(out->str, value.str.data(), value.str.size());
    out->str[value.str.size()] = '\0';
    out->len = value.str.size();
  };
  switch (value.kind) {
    case Value::Kind::nil:
      out->type = REDIS_REPLY_NIL;
      break;
    case Value::Kind::integer:
      out->type = REDIS_REPLY_INTEGER;
      out->integer = value.number;
      break;
    case Value::Kind::bulk:
      text(REDIS_REPLY_STRING);
      break;
    case Value::Kind::status:
      text(REDIS_REPLY_STATUS);
      break;
    case Value::Kind::error:
      text(REDIS_REPLY_ERROR);
      break;
    case Value::Kind::array:
      out->type = REDIS_REPLY_ARRAY;
      if (!value.items.empty()) {
        out->element =
            static_cast<redisReply**>(std::calloc(value.items.size(), sizeof(redisReply*)));
        if (out->element == nullptr) throw std::bad_alloc();
        // Counted as they are made: a failure midway frees what was made.
        for (const auto& item : value.items) {
          out->element[out->elements] = to_hiredis(item).release();
          ++out->elements;
        }
      }
      break;
  }
  return out;
}

Value from_hiredis(const redisReply* reply) {
  if (reply == nullptr) return Value::nil();
  switch (reply->type) {
    case REDIS_REPLY_INTEGER:
      return Value::integer(reply->integer);
    case REDIS_REPLY_STRING:
      return Value::bulk(std::string(reply->str, reply->len));
    case REDIS_REPLY_STATUS:
      return Value::status(std::string(reply->str, reply->len));
    case REDIS_REPLY_ERROR:
      return Value::error(std::string(reply->str, reply->len));
    case REDIS_REPLY_ARRAY: {
      std::vector<Value> items;
      items.reserve(reply->elements);
      for (std::size_t i = 0; i < reply->elements; ++i)
        items.push_back(from_hiredis(reply->element[i]));
      return Value::array(std::move(items));
    }
    default:
      return Value::nil();
  }
}

}  // namespace redlock::sim
