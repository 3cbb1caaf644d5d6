# Installs this build into a fresh prefix with `cmake --install --prefix`, then checks what a
# package needs: headers, the shared library with its SONAME and version links, the static
# variant, the CMake config with its version file, redlock.pc, and a CLI that starts from there.
#   cmake -DBUILD=<build dir> -DPREFIX=<prefix> -DLIBDIR=<lib dir, relative> -DVERSION=<x.y.z>
#         -DOBJDUMP=<objdump> -P install_and_check.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed")
endif()

string(REGEX MATCH "^[0-9]+\\.[0-9]+" soversion "${VERSION}")
set(lib "${PREFIX}/${LIBDIR}")
set(errors "")
foreach(file include/redlock/redlock.hpp include/redlock/client.hpp
        ${LIBDIR}/libredlock.so.${VERSION} ${LIBDIR}/libredlock.so.${soversion}
        ${LIBDIR}/libredlock.so ${LIBDIR}/libredlock.a
        ${LIBDIR}/cmake/redlock/redlockConfig.cmake
        ${LIBDIR}/cmake/redlock/redlockConfigVersion.cmake
        ${LIBDIR}/cmake/redlock/redlockTargets.cmake
        ${LIBDIR}/pkgconfig/redlock.pc)
  if(NOT EXISTS "${PREFIX}/${file}")
    string(APPEND errors "  missing: ${file}\n")
  endif()
endforeach()

if(EXISTS "${lib}/libredlock.so.${VERSION}")
  execute_process(COMMAND ${OBJDUMP} -p "${lib}/libredlock.so.${VERSION}" OUTPUT_VARIABLE dump)
  if(NOT dump MATCHES "SONAME +libredlock\\.so\\.${soversion}\n")
    string(REGEX MATCH "SONAME[^\n]*" found "${dump}")
    string(APPEND errors "  libredlock.so: expected SONAME libredlock.so.${soversion}, "
                         "found '${found}'\n")
  endif()
endif()

# The installed CLI must find the installed shared library wherever the prefix is.
if(EXISTS "${PREFIX}/bin/redlock")
  execute_process(COMMAND "${PREFIX}/bin/redlock" --help RESULT_VARIABLE rc
                  OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(APPEND errors "  bin/redlock --help from the prefix failed (${rc}): ${err}\n")
  endif()
endif()

if(errors)
  message(FATAL_ERROR "the installed tree in ${PREFIX} is incomplete:\n${errors}")
endif()
message("installed into ${PREFIX}")
