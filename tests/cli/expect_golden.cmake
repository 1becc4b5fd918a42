# Runs PROGRAM with ARGS (|-separated) and compares its stdout byte for byte with GOLDEN.
#   cmake -DPROGRAM=path -DARGS="a|b" -DGOLDEN=file [-DUPDATE=1] -P expect_golden.cmake
# To accept a deliberate change: run the test with UPDATE=1 (scripts/update-golden.sh), then review
# the diff of the golden file in git before committing it.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${PROGRAM}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}: ${err}")
endif()
if(UPDATE)
  file(WRITE "${GOLDEN}" "${out}")
  message("updated ${GOLDEN}")
  return()
endif()
file(READ "${GOLDEN}" want)
if(NOT out STREQUAL want)
  get_filename_component(name "${GOLDEN}" NAME)
  set(actual "${CMAKE_CURRENT_BINARY_DIR}/${name}.actual")
  file(WRITE "${actual}" "${out}")
  message(FATAL_ERROR "output differs from ${GOLDEN}\nactual output written to ${actual}\n(diff them; if the change is intended, regenerate with scripts/update-golden.sh)")
endif()
