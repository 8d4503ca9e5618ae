# cmake/TorchAbi.cmake against a fake LibTorch of the other libstdc++ ABI (torch_abi/): the default
# configure is refused with one line naming both ABIs and -DCPPLAN_TORCH_ABI=auto; auto with the
# GUI on is refused with one line; auto with it off configures, and its program (fmt, toml++) builds
# with LibTorch's ABI and runs; a LibTorch of the compiler's ABI configures without a word.
# Run: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<dir> -DGENERATOR=<gen> -DCXX=<c++> -DPREFIX_PATH=<a|b> -P this
foreach(v SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "torch_abi_test: -D${v}= is required")
  endif()
endforeach()
string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
file(REMOVE_RECURSE "${WORK_DIR}")

# configure(<name> <expect_success> <args>...): output in `out`.
function(configure name expect_success)
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/cmake/torch_abi" -B "${WORK_DIR}/${name}"
                          -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_PREFIX_PATH=${prefix_path}"
                          -DCPPLAN_SOURCE_DIR=${SOURCE_DIR} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  if(expect_success AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: the configure failed:\n${stdout}\n${stderr}")
  elseif(NOT expect_success AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: the configure succeeded, a refusal was expected:\n${stdout}\n${stderr}")
  endif()
  set(out "${stdout}${stderr}" PARENT_SCOPE)
endfunction()

# expect_line(<name> <text> <regex>): `text` matches `regex`, which matches no newline: the
# message is one line.
function(expect_line name text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${name}: no line matches '${regex}' in:\n${text}")
  endif()
endfunction()

configure(refused FALSE)
expect_line(refused "${out}" "LibTorch was built with _GLIBCXX_USE_CXX11_ABI=0, this compiler defaults to 1: std::string differs across the boundary; pass -DCPPLAN_TORCH_ABI=auto to build the whole tree with LibTorch's ABI")

configure(gui FALSE -DCPPLAN_TORCH_ABI=auto -DCPPLAN_GUI=ON)
expect_line(gui "${out}" "CPPLAN_TORCH_ABI=auto builds with LibTorch's _GLIBCXX_USE_CXX11_ABI=0, which [^\n]* add -DCPPLAN_GUI=OFF -DCPPLAN_BUILD_BENCH=OFF")

configure(bad FALSE -DCPPLAN_TORCH_ABI=yes)
expect_line(bad "${out}" "CPPLAN_TORCH_ABI = yes: must be check or auto")

configure(auto TRUE -DCPPLAN_TORCH_ABI=auto)
expect_line(auto "${out}" "every target built with LibTorch's _GLIBCXX_USE_CXX11_ABI=0 \\(the compiler's default is 1\\)")
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/auto" RESULT_VARIABLE rc OUTPUT_VARIABLE build_out
                ERROR_VARIABLE build_out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "auto: the program did not build with LibTorch's ABI:\n${build_out}")
endif()
execute_process(COMMAND "${WORK_DIR}/auto/abi_check" RESULT_VARIABLE rc OUTPUT_VARIABLE run_out ERROR_VARIABLE run_out)
if(NOT rc EQUAL 0 OR NOT run_out MATCHES "^flux 3 abi=0")
  message(FATAL_ERROR "auto: the program ran with exit code ${rc}, printed: ${run_out}")
endif()

configure(same TRUE -DCPPLAN_FAKE_TORCH_ABI=1)
if(out MATCHES "_GLIBCXX_USE_CXX11_ABI")
  message(FATAL_ERROR "same: a LibTorch of the compiler's ABI drew a message:\n${out}")
endif()
message(STATUS "torch_abi_test: refused in one line, auto builds with LibTorch's ABI, the same ABI passes")
