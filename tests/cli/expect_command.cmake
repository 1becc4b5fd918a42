# Runs COMMAND (a ;-list) and checks its exit code and output.
#   cmake -DPROGRAM=path -DARGS="a|b" -DEXPECT_RC=0 [-DEXPECT_REGEX=...] [-DREJECT_REGEX=...] -P expect_command.cmake
# ARGS is |-separated because a ;-list would be split apart on its way through add_test.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${PROGRAM}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(NOT rc STREQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}")
endif()
if(DEFINED EXPECT_REGEX AND NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'")
endif()
if(DEFINED REJECT_REGEX AND all MATCHES "${REJECT_REGEX}")
  message(FATAL_ERROR "output matches '${REJECT_REGEX}', which it must not")
endif()
