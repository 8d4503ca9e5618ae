# The fronts' border (docs/architecture.md, "The session's libraries"): a front (cli/, gui/, exec/,
# python/) includes the session's public headers and core/, never a planner/ or costmodel/ header
# nor a session library's internal/ one. cpplan_front_includes(target) checks the target's
# sources before it compiles, each time one changes: a build that breaks the border fails with
# the file, its line and the header.
function(cpplan_front_includes target)
  # Every source and header of the front's folder (a header no source lists included).
  get_target_property(dir ${target} SOURCE_DIR)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*.h" "${dir}/*.cpp")
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/${target}.includes.stamp")
  string(REPLACE ";" "|" joined "${files}")
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND "${CMAKE_COMMAND}" "-DFILES=${joined}" "-DSTAMP=${stamp}" -P "${PROJECT_SOURCE_DIR}/cmake/CheckFrontIncludes.cmake"
    DEPENDS ${files} "${PROJECT_SOURCE_DIR}/cmake/CheckFrontIncludes.cmake"
    COMMENT "The front ${target} includes only the session's public headers"
    VERBATIM)
  add_custom_target(${target}_includes DEPENDS "${stamp}")
  add_dependencies(${target} ${target}_includes)
endfunction()
