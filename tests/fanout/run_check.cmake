# Run PROGRAM with ARGS (separated by '|'), then require its exit status to be
# EXPECT_STATUS and its output (stdout followed by stderr) to match EXPECT_REGEX.
# cmake -DPROGRAM=... -DARGS=a|b -DEXPECT_STATUS=0 -DEXPECT_REGEX=... -P run_check.cmake
string(REPLACE "|" ";" args "${ARGS}")
if(CHECK_FILE)
  file(REMOVE "${CHECK_FILE}")
endif()
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
# Optionally the same for a file the program wrote: CHECK_FILE must match FILE_REGEX.
if(CHECK_FILE)
  if(NOT EXISTS "${CHECK_FILE}")
    message(FATAL_ERROR "${CHECK_FILE} was not written")
  endif()
  file(READ "${CHECK_FILE}" written)
  message("${CHECK_FILE}:\n${written}")
  if(NOT written MATCHES "${FILE_REGEX}")
    message(FATAL_ERROR "${CHECK_FILE} does not match: ${FILE_REGEX}")
  endif()
endif()
message("ok: exit status ${status} and the expected output")
