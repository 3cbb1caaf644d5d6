# Runs one seed twice with its trace and fails unless both traces hash the same (sim.replay).
foreach(run 1 2)
  execute_process(COMMAND ${SIM} --seed ${SEED} --trace-hash OUTPUT_VARIABLE out${run}
                  RESULT_VARIABLE rc${run})
  string(REGEX MATCH "trace hash [0-9a-f]+" hash${run} "${out${run}}")
  if(hash${run} STREQUAL "")
    message(FATAL_ERROR "no trace hash in run ${run}: ${out${run}}")
  endif()
endforeach()
if(NOT hash1 STREQUAL hash2)
  message(FATAL_ERROR "seed ${SEED} replayed differently: ${hash1} vs ${hash2}")
endif()
message(STATUS "seed ${SEED}: ${hash1} twice")
