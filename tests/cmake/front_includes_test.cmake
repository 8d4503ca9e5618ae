# cmake -DSOURCE_DIR=... -DWORK_DIR=... -P front_includes_test.cmake: the build's border check
# (cmake/CheckFrontIncludes.cmake, run before each front compiles) on front sources written here.
# A source including a planner/, costmodel/ or session internal/ header fails it, naming the file
# and the header; one including the session's public headers and core/ passes and leaves its stamp.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(check "${SOURCE_DIR}/cmake/CheckFrontIncludes.cmake")

function(expect_refused name text header)
  file(WRITE "${WORK_DIR}/${name}" "${text}")
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DFILES=${WORK_DIR}/${name}" "-DSTAMP=${WORK_DIR}/${name}.stamp" -P "${check}"
                  RESULT_VARIABLE code ERROR_VARIABLE err)
  if(code EQUAL 0)
    message(FATAL_ERROR "${name}: including ${header} passed the border check")
  endif()
  string(REPLACE "\n" " " err "${err}")
  if(NOT err MATCHES "${name}: includes ${header}")
    message(FATAL_ERROR "${name}: the check does not name the file and ${header}: ${err}")
  endif()
  if(EXISTS "${WORK_DIR}/${name}.stamp")
    message(FATAL_ERROR "${name}: a refused source left a stamp")
  endif()
endfunction()

expect_refused(planner.cpp "#include \"core/plan.h\"\n#include \"planner/planner.h\"\n" "planner/planner.h")
expect_refused(costmodel.h "#pragma once\n  #  include \"costmodel/cost_model.h\"\n" "costmodel/cost_model.h")
expect_refused(internal.cpp "#include \"session/engine/internal/planning.h\"\n" "session/engine/internal/planning.h")

file(WRITE "${WORK_DIR}/good.cpp" "#include \"core/plan.h\"\n#include \"session/engine/engine.h\"\n// planner/planner.h in a comment\n")
execute_process(COMMAND "${CMAKE_COMMAND}" "-DFILES=${WORK_DIR}/good.cpp" "-DSTAMP=${WORK_DIR}/good.stamp" -P "${check}"
                RESULT_VARIABLE code ERROR_VARIABLE err)
if(NOT code EQUAL 0 OR NOT EXISTS "${WORK_DIR}/good.stamp")
  message(FATAL_ERROR "a front including the engine's header and core/ was refused: ${err}")
endif()
message(STATUS "the border check refuses planner/, costmodel/ and internal/ includes and passes the public ones")
