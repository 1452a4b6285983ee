# MLIR's exported targets link the shared libLLVM.so (Debian builds with LLVM_LINK_LLVM_DYLIB).
# librudnn.so must run where no LLVM is installed (DESIGN §3), so every MLIR target we use is
# rewired to LLVM's static archives, and the archives' symbols are hidden at link time.

set(RUDNN_LLVM_STATIC_COMPONENTS LLVMRemarks LLVMBitstreamReader LLVMSupport LLVMDemangle)  # link order

add_library(rudnn_llvm_static INTERFACE)
foreach(component IN LISTS RUDNN_LLVM_STATIC_COMPONENTS)
  target_link_libraries(rudnn_llvm_static INTERFACE "${LLVM_LIBRARY_DIR}/lib${component}.a")
endforeach()
find_package(ZLIB REQUIRED)
find_library(RUDNN_ZSTD_LIBRARY zstd REQUIRED)
target_link_libraries(rudnn_llvm_static INTERFACE ZLIB::ZLIB ${RUDNN_ZSTD_LIBRARY} Threads::Threads ${CMAKE_DL_LIBS})

# Walks the link interface of `target` and replaces the shared "LLVM" with the static archives.
function(rudnn_use_static_llvm target)
  get_property(visited GLOBAL PROPERTY RUDNN_STATIC_LLVM_VISITED)
  if(NOT TARGET ${target} OR "${target}" IN_LIST visited)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY RUDNN_STATIC_LLVM_VISITED ${target})
  get_target_property(imported ${target} IMPORTED)
  if(NOT imported)
    return()
  endif()
  get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT deps)
    return()
  endif()
  list(TRANSFORM deps REPLACE "^LLVM$" rudnn_llvm_static)
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
  foreach(dep IN LISTS deps)
    rudnn_use_static_llvm(${dep})
  endforeach()
endfunction()
