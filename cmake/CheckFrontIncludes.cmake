# cmake -DFILES=a.cpp|b.h -DSTAMP=file -P CheckFrontIncludes.cmake: fails, naming each file, line
# and header, when a front's source includes a planner/, costmodel/ or session internal/ header
# (cmake/FrontIncludes.cmake); touches STAMP otherwise.
string(REPLACE "|" ";" files "${FILES}")
set(broken)
foreach(file IN LISTS files)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    if(line MATCHES "\"((planner|costmodel)/[^\"]+|session/[a-z_]+/internal/[^\"]+)\"")
      list(APPEND broken "${file}: includes ${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
if(broken)
  list(JOIN broken "\n  " text)
  message(FATAL_ERROR "A front includes what is behind the Engine (include session/engine/engine.h, "
                      "session/query/..., session/render/... or session/jobs/... instead):\n  ${text}")
endif()
file(TOUCH "${STAMP}")
