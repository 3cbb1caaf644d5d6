// redlock::version(): the version this library was built as, from the same header that the
// consumer compiles against (a consumer can compare both). Pure; any thread.
#include "redlock/version.hpp"

namespace redlock {

const char* version() noexcept { return REDLOCK_VERSION_STRING; }

}  // namespace redlock
