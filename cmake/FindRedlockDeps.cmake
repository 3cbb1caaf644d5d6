# Imported targets for Debian's hiredis 0.14 and libuv 1.44, which ship no CMake targets of
# their own: hiredis::hiredis and libuv::libuv. Used by our build and by installed consumers.
#
# Sets REDLOCK_HIREDIS_VERSION (from hiredis.h: 0.14 has no version file) and
# REDLOCK_DEPS_ERROR (empty when all is well). If REDLOCK_HIREDIS_EXPECTED_VERSION (major.minor)
# is set, as the installed redlockConfig.cmake does with the version the library was built
# against, a hiredis of another major.minor is an error: one program with two hiredis ABIs
# crashes. Our own build stops on an error; the installed config reports it as not found.
#
# No include_guard: imported targets are visible in one directory only, so a find_package in a
# sibling directory must define them again (the `if(NOT TARGET ...)` make that idempotent).

set(REDLOCK_DEPS_ERROR "")

# The version in <dir>/hiredis/hiredis.h or <dir>/hiredis.h as "major.minor.patch", or "".
function(_redlock_hiredis_header_version dir out)
  set(${out} "" PARENT_SCOPE)
  foreach(header "${dir}/hiredis/hiredis.h" "${dir}/hiredis.h")
    if(EXISTS "${header}")
      file(STRINGS "${header}" defines REGEX "^#define HIREDIS_(MAJOR|MINOR|PATCH) +[0-9]+")
      set(parts "")
      foreach(part MAJOR MINOR PATCH)
        if(NOT defines MATCHES "#define HIREDIS_${part} +([0-9]+)")
          return()
        endif()
        list(APPEND parts ${CMAKE_MATCH_1})
      endforeach()
      list(JOIN parts "." version)
      set(${out} "${version}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

set(_redlock_hiredis_fix "the consumer defined hiredis::hiredis before find_package(redlock): make it hiredis")
if(NOT TARGET hiredis::hiredis)
  set(_redlock_hiredis_fix "point REDLOCK_HIREDIS_INCLUDE_DIR and REDLOCK_HIREDIS_LIBRARY at hiredis")
  find_path(REDLOCK_HIREDIS_INCLUDE_DIR hiredis/async.h)
  find_path(REDLOCK_HIREDIS_LIBUV_ADAPTER hiredis/adapters/libuv.h)
  find_library(REDLOCK_HIREDIS_LIBRARY NAMES hiredis)
  if(NOT REDLOCK_HIREDIS_INCLUDE_DIR OR NOT REDLOCK_HIREDIS_LIBRARY OR NOT REDLOCK_HIREDIS_LIBUV_ADAPTER)
    set(REDLOCK_DEPS_ERROR "hiredis not found: install libhiredis-dev")
  else()
    add_library(hiredis::hiredis UNKNOWN IMPORTED)
    set_target_properties(hiredis::hiredis PROPERTIES
      IMPORTED_LOCATION "${REDLOCK_HIREDIS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${REDLOCK_HIREDIS_INCLUDE_DIR}")
  endif()
endif()

# Which hiredis hiredis::hiredis is (ours, or one the consumer defined before us).
set(REDLOCK_HIREDIS_VERSION "")
set(_redlock_hiredis_where "")
if(TARGET hiredis::hiredis)
  get_target_property(_redlock_dirs hiredis::hiredis INTERFACE_INCLUDE_DIRECTORIES)
  foreach(_redlock_dir IN LISTS _redlock_dirs)
    _redlock_hiredis_header_version("${_redlock_dir}" REDLOCK_HIREDIS_VERSION)
    if(REDLOCK_HIREDIS_VERSION)
      set(_redlock_hiredis_where "${_redlock_dir}")
      break()
    endif()
  endforeach()
  # The library file says its version too (libhiredis.so.0.14 vs libhiredis.so.1.1.0).
  get_target_property(_redlock_location hiredis::hiredis IMPORTED_LOCATION)
  if(_redlock_location)
    file(REAL_PATH "${_redlock_location}" _redlock_real)
    get_filename_component(_redlock_name "${_redlock_real}" NAME)
    if(_redlock_name MATCHES "\\.so\\.([0-9]+\\.[0-9]+)")
      set(_redlock_library_version "${CMAKE_MATCH_1}")
      string(REPLACE "." "\\." _redlock_library_version "${_redlock_library_version}")
      if(REDLOCK_HIREDIS_VERSION AND NOT REDLOCK_HIREDIS_VERSION MATCHES "^${_redlock_library_version}(\\.|$)")
        string(APPEND REDLOCK_DEPS_ERROR
          "hiredis headers (${REDLOCK_HIREDIS_VERSION}, in ${_redlock_hiredis_where}) and library "
          "(${_redlock_real}) are of different versions; set REDLOCK_HIREDIS_INCLUDE_DIR and "
          "REDLOCK_HIREDIS_LIBRARY to one installation.")
      endif()
    endif()
  endif()
  string(REPLACE "." "\\." _redlock_expected "${REDLOCK_HIREDIS_EXPECTED_VERSION}")
  if(REDLOCK_HIREDIS_EXPECTED_VERSION AND REDLOCK_HIREDIS_VERSION
     AND NOT REDLOCK_HIREDIS_VERSION MATCHES "^${_redlock_expected}\\.")
    string(APPEND REDLOCK_DEPS_ERROR
      "redlock was built against hiredis ${REDLOCK_HIREDIS_EXPECTED_VERSION}, but found hiredis "
      "${REDLOCK_HIREDIS_VERSION} in ${_redlock_hiredis_where}: a program with both crashes. "
      "Either ${_redlock_hiredis_fix} ${REDLOCK_HIREDIS_EXPECTED_VERSION} (Debian: "
      "libhiredis-dev), or build redlock-cpp against hiredis ${REDLOCK_HIREDIS_VERSION}.")
  elseif(REDLOCK_HIREDIS_EXPECTED_VERSION AND NOT REDLOCK_HIREDIS_VERSION)
    message(WARNING "redlock: cannot tell which hiredis hiredis::hiredis is (no hiredis.h in its "
                    "include directories); redlock needs hiredis ${REDLOCK_HIREDIS_EXPECTED_VERSION}.")
  endif()
endif()

if(NOT TARGET libuv::libuv)
  find_path(REDLOCK_LIBUV_INCLUDE_DIR uv.h)
  find_library(REDLOCK_LIBUV_LIBRARY NAMES uv)
  if(NOT REDLOCK_LIBUV_INCLUDE_DIR OR NOT REDLOCK_LIBUV_LIBRARY)
    string(APPEND REDLOCK_DEPS_ERROR " libuv not found: install libuv1-dev")
  else()
    add_library(libuv::libuv UNKNOWN IMPORTED)
    set_target_properties(libuv::libuv PROPERTIES
      IMPORTED_LOCATION "${REDLOCK_LIBUV_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${REDLOCK_LIBUV_INCLUDE_DIR}")
  endif()
endif()

# Our own build (not the installed config, which reports it as "not found").
if(REDLOCK_DEPS_ERROR AND NOT REDLOCK_DEPS_FROM_CONFIG)
  message(FATAL_ERROR "${REDLOCK_DEPS_ERROR}")
endif()
