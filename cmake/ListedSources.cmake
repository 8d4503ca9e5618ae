# Test, fuzz and benchmark sources are listed by name, never gathered with file(GLOB), and a listed
# file that does not exist is a configure error naming it, not a suite that silently shrinks.
#
# cpplan_check_listed_sources(<kind>): every source of every target defined in the calling
# directory must exist; the error reads "<dir>/CMakeLists.txt: listed <kind> file <file> does not
# exist", <file> as the CMakeLists wrote it. Call it at the end of the directory's CMakeLists.txt.
function(cpplan_check_listed_sources kind)
  file(RELATIVE_PATH lists_file ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.txt)
  get_property(targets DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(sources ${target} SOURCES)
    if(NOT sources)
      continue()
    endif()
    get_target_property(source_dir ${target} SOURCE_DIR)
    foreach(source IN LISTS sources)
      if(source MATCHES "^\\$<")  # a generator expression: nothing to check before generation
        continue()
      endif()
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${source_dir} OUTPUT_VARIABLE path)
      if(NOT EXISTS ${path})
        message(FATAL_ERROR "${lists_file}: listed ${kind} file ${source} does not exist")
      endif()
    endforeach()
  endforeach()
endfunction()
