# Run tenlane-fanout-mpi under mpirun and check what it did.
#   cmake -DMPIRUN=... -DMPIRUN_FLAGS=a|b -DRUN=args|... [-DREFERENCE=args|...]
#         -DEXPECT_STATUS=n -DEXPECT_REGEX=re -P run_mpi.cmake
# RUN (and REFERENCE) are everything after `mpirun <MPIRUN_FLAGS>`, '|'-separated (an MPMD
# line with ':' works too). With REFERENCE, that run goes first and must succeed; the
# digest of all results it prints (mpi-check ... digest=...) must then appear in RUN's
# output too: the two runs agree bit for bit on every item.
string(REPLACE "|" ";" flags "${MPIRUN_FLAGS}")

function(run_one what argv out_var status_var)
  string(REPLACE "|" ";" args "${argv}")
  execute_process(COMMAND ${MPIRUN} ${flags} ${args}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 110)
  message("---- ${what}: mpirun ${flags} ${args}\n${out}${err}")
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${status_var} "${status}" PARENT_SCOPE)
endfunction()

set(digest "")
if(REFERENCE)
  run_one("reference" "${REFERENCE}" ref_out ref_status)
  if(NOT "${ref_status}" STREQUAL "0")
    message(FATAL_ERROR "the reference run exited with '${ref_status}'")
  endif()
  if(NOT ref_out MATCHES "mpi-check equal=1 [^\n]* digest=([0-9a-f]+)")
    message(FATAL_ERROR "the reference run printed no digest")
  endif()
  set(digest "${CMAKE_MATCH_1}")
endif()
run_one("run" "${RUN}" out status)
if(NOT "${status}" STREQUAL "${EXPECT_STATUS}")
  message(FATAL_ERROR "exit status was '${status}', expected ${EXPECT_STATUS}")
endif()
if(NOT out MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match: ${EXPECT_REGEX}")
endif()
if(digest AND NOT out MATCHES "digest=${digest}")
  message(FATAL_ERROR "the results differ from the reference run's (digest ${digest})")
endif()
message("ok: exit status ${status} and the expected output${digest}")
