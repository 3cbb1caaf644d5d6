#include "redlock/errors.hpp"

namespace redlock {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "redlock"; }
  std::string message(int ev) const override {
    switch (static_cast<Errc>(ev)) {
      case Errc::ok_:
        return "success";
#define REDLOCK_ERRC_MSG(name, msg) \
  case Errc::name:                  \
    return msg;
        REDLOCK_ERRC_MAP(REDLOCK_ERRC_MSG)
#undef REDLOCK_ERRC_MSG
    }
    return "unknown redlock error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

const char* errc_name(Errc e) noexcept {
  switch (e) {
    case Errc::ok_:
      return "ok";
#define REDLOCK_ERRC_NAME(name, msg) \
  case Errc::name:                   \
    return #name;
      REDLOCK_ERRC_MAP(REDLOCK_ERRC_NAME)
#undef REDLOCK_ERRC_NAME
  }
  return "unknown";
}

bool is_node_refusal(std::error_code ec) noexcept {
  if (!ec || ec.category() != error_category()) return false;
  switch (static_cast<Errc>(ec.value())) {
    case Errc::not_connected:
    case Errc::connect_failed:
    case Errc::connect_timeout:
    case Errc::request_timeout:
    case Errc::connection_lost:
    case Errc::redis_loading:
    case Errc::redis_busy:
    case Errc::shutting_down:
    case Errc::cancelled:
      return false;
    default:
      return true;
  }
}

bool is_redis_reply_error(std::error_code ec) noexcept {
  if (ec.category() != error_category()) return false;
  auto v = ec.value();
  return v >= static_cast<int>(Errc::redis_wrongtype) && v <= static_cast<int>(Errc::redis_error);
}

}  // namespace redlock
