// REDLOCK_API marks what the shared library exports: the public API and nothing else. The
// library is built with hidden visibility (-fvisibility=hidden, -fvisibility-inlines-hidden),
// so that its internals, and hiredis and libuv, never reach a consumer's symbol table.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define REDLOCK_API __attribute__((visibility("default")))
#else
#define REDLOCK_API
#endif
