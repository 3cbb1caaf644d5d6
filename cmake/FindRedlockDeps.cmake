# Imported targets for Debian's hiredis 0.14 and libuv 1.44, which ship no CMake targets of
# their own: hiredis::hiredis and libuv::libuv. Used by our build and by installed consumers.
include_guard(GLOBAL)

if(NOT TARGET hiredis::hiredis)
  find_path(REDLOCK_HIREDIS_INCLUDE_DIR hiredis/async.h)
  find_path(REDLOCK_HIREDIS_LIBUV_ADAPTER hiredis/adapters/libuv.h)
  find_library(REDLOCK_HIREDIS_LIBRARY NAMES hiredis)
  if(NOT REDLOCK_HIREDIS_INCLUDE_DIR OR NOT REDLOCK_HIREDIS_LIBRARY OR NOT REDLOCK_HIREDIS_LIBUV_ADAPTER)
    message(FATAL_ERROR "hiredis not found: install libhiredis-dev")
  endif()
  add_library(hiredis::hiredis UNKNOWN IMPORTED)
  set_target_properties(hiredis::hiredis PROPERTIES
    IMPORTED_LOCATION "${REDLOCK_HIREDIS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${REDLOCK_HIREDIS_INCLUDE_DIR}")
endif()

if(NOT TARGET libuv::libuv)
  find_path(REDLOCK_LIBUV_INCLUDE_DIR uv.h)
  find_library(REDLOCK_LIBUV_LIBRARY NAMES uv)
  if(NOT REDLOCK_LIBUV_INCLUDE_DIR OR NOT REDLOCK_LIBUV_LIBRARY)
    message(FATAL_ERROR "libuv not found: install libuv1-dev")
  endif()
  add_library(libuv::libuv UNKNOWN IMPORTED)
  set_target_properties(libuv::libuv PROPERTIES
    IMPORTED_LOCATION "${REDLOCK_LIBUV_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${REDLOCK_LIBUV_INCLUDE_DIR}")
endif()
