# A stand-in for a LibTorch's TorchConfig.cmake: only what cmake/TorchAbi.cmake reads (TORCH_CXX_FLAGS)
# and the `torch` target carrying it, as the real one does. Its ABI: CPPLAN_FAKE_TORCH_ABI (default 0,
# the ABI of PyTorch wheels up to 2.6).
if(NOT DEFINED CPPLAN_FAKE_TORCH_ABI)
  set(CPPLAN_FAKE_TORCH_ABI 0)
endif()
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=${CPPLAN_FAKE_TORCH_ABI}")
set(TORCH_LIBRARIES torch)
set(Torch_FOUND TRUE)
if(NOT TARGET torch)
  add_library(torch INTERFACE IMPORTED)
  set_property(TARGET torch PROPERTY INTERFACE_COMPILE_OPTIONS "${TORCH_CXX_FLAGS}")
endif()
