# The first configure of a fresh build directory must already produce a complete install
# export: each exported library carries its include directory (a second configure used to hide
# a missing one, as GNUInstallDirs' variables were then read from the cache).
#   cmake -DSOURCE=<redlock-cpp> -DBINARY=<fresh dir> -DGENERATOR=<g> [-DCXX=<compiler>]
#         -P check_first_configure.cmake
file(REMOVE_RECURSE "${BINARY}")
set(configure ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}"
    -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_TOOLS=OFF -DREDLOCK_BUILD_EXAMPLES=OFF)
if(CXX)
  list(APPEND configure "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
execute_process(COMMAND ${configure} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed")
endif()
file(GLOB_RECURSE exports "${BINARY}/CMakeFiles/Export/*/redlockTargets.cmake")
if(NOT exports)
  message(FATAL_ERROR "no redlockTargets.cmake was generated for install")
endif()
list(GET exports 0 export)
file(READ "${export}" text)
set(errors "")
foreach(target redlock::redlock redlock::redlock_static)
  string(REGEX MATCH "set_target_properties\\(${target} PROPERTIES\n[^)]*\\)" props "${text}")
  if(NOT props)
    string(APPEND errors "  ${target} is not exported\n")
  elseif(NOT props MATCHES "INTERFACE_INCLUDE_DIRECTORIES \"\\\${_IMPORT_PREFIX}/include\"")
    string(APPEND errors "  ${target} has no include directory after the first configure:\n"
                         "${props}\n")
  endif()
endforeach()
if(errors)
  message(FATAL_ERROR "${errors}")
endif()
message("first configure exports the include directories")
