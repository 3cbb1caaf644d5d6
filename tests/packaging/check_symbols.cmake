# The shared library exports its public API and nothing else: no symbol of redlock::detail or of
# Client::Impl, and no hiredis, libuv or OpenSSL function of its own (which would interpose on,
# or clash with, the consumer's copies). Built with hidden visibility, REDLOCK_API marking the
# public declarations (include/redlock/export.hpp).
# -DLIBRARY=<libredlock.so> -DNM=<nm>
execute_process(COMMAND ${NM} -D --defined-only -C ${LIBRARY}
                OUTPUT_VARIABLE table RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}: ${err}")
endif()
string(REPLACE ";" "\\;" table "${table}")
string(REPLACE "\n" ";" lines "${table}")

set(internal "")
set(exported "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; names of template instances that merely mention an internal
  # type (std::vector<redlock::detail::Verdict>::...) are the standard library's, not ours.
  if(NOT line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.*)$")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  string(REGEX REPLACE "^(typeinfo name|typeinfo|vtable|VTT|construction vtable|guard variable) for "
                       "" owner "${name}")
  if(owner MATCHES "^redlock::(detail::|Client::Impl)" OR
     owner MATCHES "^(redis|__redis|sds|hi_|uv_|uv__|SSL_|TLS_|OPENSSL_|CRYPTO_|ERR_)")
    string(APPEND internal "  ${name}\n")
  endif()
  if(owner MATCHES "^redlock::")
    list(APPEND exported "${owner}")
  endif()
endforeach()

if(internal)
  message(FATAL_ERROR "${LIBRARY} exports internal symbols:\n${internal}")
endif()
# And the public API is there: the check would pass on an empty library otherwise.
foreach(needed "redlock::Client::Client(" "redlock::Mutex::lock()" "redlock::HeldLock::release()"
               "redlock::error_category()" "redlock::Config::from_node_list(" "redlock::Error"
               "redlock::version()")
  string(FIND "${exported}" "${needed}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${LIBRARY} does not export ${needed}")
  endif()
endforeach()
list(LENGTH exported count)
message(STATUS "${LIBRARY}: ${count} redlock symbols exported, none internal")
