# Compiles every per-ISA kernel source once per x86 ISA level and links the
# objects into `target`. Never -march=native: one binary runs on any x86-64
# with SSE4.2 and picks the best level at run time (src/cpu/isa.hpp).
#   sse4   -march=x86-64-v2  (xsimd::sse4_2)
#   avx2   -march=x86-64-v3  (xsimd::fma3<avx2>, F16C)
#   avx512 -march=x86-64-v4  (xsimd::avx512f; its reductions use AVX512DQ)
set(TOPS_CPU_ISAS sse4 avx2 avx512)
set(TOPS_CPU_ISA_FLAGS_sse4 -march=x86-64-v2)
set(TOPS_CPU_ISA_FLAGS_avx2 -march=x86-64-v3)
set(TOPS_CPU_ISA_FLAGS_avx512 -march=x86-64-v4 -mprefer-vector-width=512)

function(tops_add_cpu_kernels target sources)
  if(NOT sources)
    return()
  endif()
  foreach(isa IN LISTS TOPS_CPU_ISAS)
    set(lib ${target}_cpu_${isa})
    add_library(${lib} OBJECT ${sources})
    target_compile_options(${lib} PRIVATE ${TOPS_CPU_ISA_FLAGS_${isa}})
    target_compile_definitions(${lib} PRIVATE TOPS_CPU_ISA_${isa} TOPS_BUILDING_LIBRARY)
    target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}
                                              ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PRIVATE tops_xsimd OpenMP::OpenMP_CXX)
    tops_target_warnings(${lib})
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
  endforeach()
endfunction()
