# Configures, builds and runs one consumer project from a fresh build directory.
#   cmake -DSOURCE=<consumer dir> -DBINARY=<build dir> -DGENERATOR=<generator>
#         [-DPREFIX_PATH=<dir>|<dir>...] [-DCXX=<compiler>] [-DFLAGS=<compile and link flags>]
#         [-DRUN=<exe>|<exe>...] [-DEXPECT_CONFIGURE_ERROR=<regex>] [-DARGS=<-Dx=y>|...]
#         [-DFAKE_HIREDIS=<x.y.z> [-DFAKE_HIREDIS_AS_TARGET=ON]] -P run_consumer.cmake
# FAKE_HIREDIS makes a stand-in hiredis of that version (headers and a library file, nothing
# that links) and puts it first on the prefix path, or, with FAKE_HIREDIS_AS_TARGET, hands its
# include directory to the consumer to define hiredis::hiredis itself (as hiredis 1.x's own
# CMake package does) before find_package(redlock).
# Lists are separated by '|' so that add_test() passes them as one argument.
foreach(var SOURCE BINARY GENERATOR)
  if(NOT ${var})
    message(FATAL_ERROR "run_consumer.cmake: ${var} is required")
  endif()
endforeach()
string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
string(REPLACE "|" ";" run "${RUN}")
string(REPLACE "|" ";" args "${ARGS}")

file(REMOVE_RECURSE "${BINARY}")

if(FAKE_HIREDIS)
  set(fake "${BINARY}/fake-hiredis")
  string(REPLACE "." ";" v "${FAKE_HIREDIS}")
  list(GET v 0 major)
  list(GET v 1 minor)
  list(GET v 2 patch)
  file(WRITE "${fake}/include/hiredis/hiredis.h"
       "#define HIREDIS_MAJOR ${major}\n#define HIREDIS_MINOR ${minor}\n"
       "#define HIREDIS_PATCH ${patch}\n#define HIREDIS_SONAME ${major}.${minor}\n")
  file(WRITE "${fake}/include/hiredis/async.h" "")
  file(WRITE "${fake}/include/hiredis/adapters/libuv.h" "")
  file(WRITE "${fake}/lib/libhiredis.so.${FAKE_HIREDIS}" "")
  file(CREATE_LINK "libhiredis.so.${FAKE_HIREDIS}" "${fake}/lib/libhiredis.so" SYMBOLIC)
  if(FAKE_HIREDIS_AS_TARGET)
    list(APPEND args "-DCONSUMER_HIREDIS_INCLUDE_DIR=${fake}/include")
  else()
    list(PREPEND prefix_path "${fake}")
  endif()
endif()
string(REPLACE ";" "\\;" prefix_path "${prefix_path}")  # one argument
set(configure ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix_path}" ${args})
if(CXX)
  list(APPEND configure "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
if(FLAGS)
  list(APPEND configure "-DCMAKE_CXX_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}"
       "-DCMAKE_SHARED_LINKER_FLAGS=${FLAGS}")
endif()

if(DEFINED EXPECT_CONFIGURE_ERROR)
  execute_process(COMMAND ${configure} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "configure succeeded; expected it to fail with: ${EXPECT_CONFIGURE_ERROR}")
  endif()
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps its messages
  if(NOT flat MATCHES "${EXPECT_CONFIGURE_ERROR}")
    message(FATAL_ERROR "configure failed, but without the expected message: "
                        "${EXPECT_CONFIGURE_ERROR}")
  endif()
  message("configure refused, as expected")
  return()
endif()

execute_process(COMMAND ${configure} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure of ${SOURCE} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${BINARY}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "build of ${SOURCE} failed")
endif()
foreach(exe IN LISTS run)
  execute_process(COMMAND "${BINARY}/${exe}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${exe} exited with ${rc}")
  endif()
endforeach()
