# Runs the real cpplan binary with bad input and checks: exit code 3, exactly one line on
# stderr naming the flag and value, nothing on stdout.
execute_process(COMMAND ${CPPLAN} --gpus abc --res 1024x1024 --hardware h100-sxm
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "expected exit 3, got ${rc}: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "expected no stdout, got: ${out}")
endif()
if(NOT err MATCHES "^cpplan: --gpus = abc: must be an integer\n$")
  message(FATAL_ERROR "unexpected stderr: '${err}'")
endif()
