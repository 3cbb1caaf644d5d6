/// \file
/// \brief The version of redlock-cpp: macros for the headers, redlock::version() for the library.
///
/// The one place the version is written: the top-level CMakeLists.txt reads these three
/// numbers for project(VERSION), so the CMake package, redlock.pc and the shared library's
/// SONAME (major.minor) always carry the version the headers state. What each kind of release
/// may change is in README.md, "Versions and compatibility".
#pragma once

#include "redlock/export.hpp"

/// Major version: 0 while the API is still settling (a minor release may then change it).
#define REDLOCK_VERSION_MAJOR 0
/// Minor version: part of the SONAME (libredlock.so.MAJOR.MINOR), as the ABI may change with it.
#define REDLOCK_VERSION_MINOR 1
/// Patch version: bug fixes that keep the API, the ABI and the data on the nodes.
#define REDLOCK_VERSION_PATCH 0

/// \cond REDLOCK_INTERNAL
#define REDLOCK_VERSION_STR_(x) #x
#define REDLOCK_VERSION_STR(x) REDLOCK_VERSION_STR_(x)
/// \endcond

/// The version as "MAJOR.MINOR.PATCH", e.g. "0.1.0".
#define REDLOCK_VERSION_STRING               \
  REDLOCK_VERSION_STR(REDLOCK_VERSION_MAJOR) \
  "." REDLOCK_VERSION_STR(REDLOCK_VERSION_MINOR) "." REDLOCK_VERSION_STR(REDLOCK_VERSION_PATCH)

/// One comparable number, MAJOR * 10000 + MINOR * 100 + PATCH: `#if REDLOCK_VERSION >= 200`
/// for 0.2.0 or later.
#define REDLOCK_VERSION \
  (REDLOCK_VERSION_MAJOR * 10000 + REDLOCK_VERSION_MINOR * 100 + REDLOCK_VERSION_PATCH)

namespace redlock {

/// \brief The version of the library the program runs with, which may differ from the headers
/// it was compiled with (REDLOCK_VERSION_STRING) by its patch number: the SONAME pins the
/// major and minor versions.
/// \return "MAJOR.MINOR.PATCH", a static string.
REDLOCK_API const char* version() noexcept;

}  // namespace redlock
