# Run PROGRAM with ARGS (separated by '|'), then require its exit status to be
# EXPECT_STATUS and its output (stdout followed by stderr) to match EXPECT_REGEX.
# cmake -DPROGRAM=... -DARGS=a|b -DEXPECT_STATUS=0 -DEXPECT_REGEX=... -P run_check.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 110)
set(all "${out}${err}")
message("${all}")
if(NOT "${status}" STREQUAL "${EXPECT_STATUS}")
  message(FATAL_ERROR "exit status was '${status}', expected ${EXPECT_STATUS}")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match: ${EXPECT_REGEX}")
endif()
message("ok: exit status ${status} and the expected output")
