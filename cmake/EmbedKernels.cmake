# Embeds every *.cu and *.cuh file of a folder into the library as a string, so that
# NVRTC can compile the kernels at run time without the sources on disk.
# The generated table is reached through rayo::cuda::embedded_kernel_sources().
function(rayo_embed_kernels target dir)
  file(GLOB kernel_files CONFIGURE_DEPENDS ${dir}/*.cu ${dir}/*.cuh)
  set(out ${CMAKE_BINARY_DIR}/generated/embedded_kernels.cpp)
  # A list argument would be split into separate command arguments: pass it with '|'.
  string(REPLACE ";" "|" kernel_file_arg "${kernel_files}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${kernel_file_arg}" -P ${CMAKE_SOURCE_DIR}/cmake/WriteEmbeddedKernels.cmake
    DEPENDS ${kernel_files} ${CMAKE_SOURCE_DIR}/cmake/WriteEmbeddedKernels.cmake
    COMMENT "Embedding CUDA kernel sources"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
