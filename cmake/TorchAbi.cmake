# LibTorch's libstdc++ ABI against the compiler's.
#
# libstdc++ has two layouts of std::string and std::list, chosen per translation unit by
# _GLIBCXX_USE_CXX11_ABI (1, the new one, is g++'s default since 5). A LibTorch announces its own in
# TORCH_CXX_FLAGS and puts it on the `torch` target only: PyTorch wheels up to 2.6 use the old ABI
# (0), Debian's LibTorch and PyTorch 2.7's wheels the new one. Code built with one ABI that passes a
# std::string to code built with the other fails to link (missing [abi:cxx11] symbols) or, worse,
# runs with the wrong layout. So, after find_package(Torch) and before any target:
#
#   cpplan_apply_torch_abi()
#
# does nothing when the two agree (or either is unknown: not libstdc++, no flag in TORCH_CXX_FLAGS);
# otherwise, with CPPLAN_TORCH_ABI=check (the default) it stops the configure with one line, and
# with CPPLAN_TORCH_ABI=auto it builds every target of the tree with LibTorch's ABI. Compiled
# libraries that take std::string must then be built with that ABI too: {fmt} and toml++ are used
# header-only (their shared libraries keep the compiler's ABI), and the parts that link Qt 6 or
# Google Benchmark (CPPLAN_GUI, CPPLAN_BUILD_BENCH) are refused with one line.

set(CPPLAN_TORCH_ABI "check" CACHE STRING
    "check: refuse a LibTorch whose _GLIBCXX_USE_CXX11_ABI differs from the compiler's; auto: build with LibTorch's")
set_property(CACHE CPPLAN_TORCH_ABI PROPERTY STRINGS check auto)

include(CheckCXXSourceCompiles)

# The compiler's default ABI (with CMAKE_CXX_FLAGS): 0 or 1 in `out`, empty when not libstdc++.
function(cpplan_compiler_cxx11_abi out)
  check_cxx_source_compiles("#include <string>\n#ifndef _GLIBCXX_USE_CXX11_ABI\n#error not libstdc++\n#endif\nint main() {}"
                            CPPLAN_CXX_IS_LIBSTDCXX)
  check_cxx_source_compiles("#include <string>\n#if !_GLIBCXX_USE_CXX11_ABI\n#error old ABI\n#endif\nint main() {}"
                            CPPLAN_CXX_DEFAULT_CXX11_ABI)
  if(NOT CPPLAN_CXX_IS_LIBSTDCXX)
    set(${out} "" PARENT_SCOPE)
  elseif(CPPLAN_CXX_DEFAULT_CXX11_ABI)
    set(${out} 1 PARENT_SCOPE)
  else()
    set(${out} 0 PARENT_SCOPE)
  endif()
endfunction()

# Each refusal is one line: its message starts with a space, which CMake prints as is instead of
# wrapping it at 80 columns. Sets CPPLAN_TORCH_ABI_IMPOSED (0 or 1) in the caller when the tree is built with LibTorch's ABI.
function(cpplan_apply_torch_abi)
  if(NOT CPPLAN_TORCH_ABI MATCHES "^(check|auto)$")
    message(FATAL_ERROR " CPPLAN_TORCH_ABI = ${CPPLAN_TORCH_ABI}: must be check or auto")
  endif()
  string(REGEX MATCH "-D_GLIBCXX_USE_CXX11_ABI=([01])" flag "${TORCH_CXX_FLAGS}")
  if(flag STREQUAL "")
    return()
  endif()
  set(torch_abi "${CMAKE_MATCH_1}")
  cpplan_compiler_cxx11_abi(compiler_abi)
  if(compiler_abi STREQUAL "" OR compiler_abi STREQUAL torch_abi)
    return()
  endif()
  if(NOT CPPLAN_TORCH_ABI STREQUAL "auto")
    message(FATAL_ERROR " LibTorch was built with _GLIBCXX_USE_CXX11_ABI=${torch_abi}, this compiler defaults to "
                        "${compiler_abi}: std::string differs across the boundary; pass -DCPPLAN_TORCH_ABI=auto to "
                        "build the whole tree with LibTorch's ABI (README, \"GPU build\")")
  endif()
  if(CPPLAN_GUI OR CPPLAN_BUILD_BENCH)
    message(FATAL_ERROR " CPPLAN_TORCH_ABI=auto builds with LibTorch's _GLIBCXX_USE_CXX11_ABI=${torch_abi}, which "
                        "this machine's Qt 6 and Google Benchmark were not built with: add -DCPPLAN_GUI=OFF "
                        "-DCPPLAN_BUILD_BENCH=OFF")
  endif()
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=${torch_abi})
  # Header-only: the shared libraries of {fmt} and toml++ take and return std::string in the
  # compiler's ABI. Their headers compile everything in each translation unit instead.
  if(TARGET fmt::fmt)
    set_target_properties(fmt::fmt PROPERTIES INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
  endif()
  if(TARGET tomlplusplus::tomlplusplus)
    set_target_properties(tomlplusplus::tomlplusplus PROPERTIES INTERFACE_COMPILE_OPTIONS "-DTOML_HEADER_ONLY=1")
  endif()
  message(STATUS "cpplan: every target built with LibTorch's _GLIBCXX_USE_CXX11_ABI=${torch_abi} "
                 "(the compiler's default is ${compiler_abi}); {fmt} and toml++ header-only")
  set(CPPLAN_TORCH_ABI_IMPOSED ${torch_abi} PARENT_SCOPE)
endfunction()
