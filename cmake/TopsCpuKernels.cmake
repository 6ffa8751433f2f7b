# Compiles every per-ISA kernel source once per x86 ISA level and links the
# objects into `target`. Never -march=native: one binary runs on any x86-64
# with SSE4.2 and picks the best level at run time (src/cpu/isa.hpp).
#   sse4   -march=x86-64-v2  (xsimd::sse4_2)
#   avx2   -march=x86-64-v3  (xsimd::fma3<avx2>, F16C)
#   avx512 -march=x86-64-v4  (xsimd::avx512f; its reductions use AVX512DQ)
# TOPS_CPU_MAX_ISA caps the levels built: avx512 (default: all three), avx2,
# sse4, or host, the best level this build machine executes. The sanitizer
# presets use host: kernels their machine cannot run would only cost compile
# time (AVX-512 objects are a third of an ASan build), and the library clamps
# the run-time level to the highest one built.
set(TOPS_CPU_ISA_LEVELS sse4 avx2 avx512)
set(TOPS_CPU_MAX_ISA "avx512" CACHE STRING "Highest CPU kernel ISA level built: avx512, avx2, sse4 or host")
set_property(CACHE TOPS_CPU_MAX_ISA PROPERTY STRINGS avx512 avx2 sse4 host)

# The best level this machine runs, by the features each level's -march
# needs (as src/cpu/isa.cpp checks them at run time); from /proc/cpuinfo, so
# a machine without it (or a cross build) counts as able to run every level.
function(tops_host_cpu_isa out)
  set(best avx512)
  if(EXISTS /proc/cpuinfo AND NOT CMAKE_CROSSCOMPILING)
    file(STRINGS /proc/cpuinfo flags REGEX "^flags" LIMIT_COUNT 1)
    set(best sse4)
    if(flags MATCHES " avx2( |$)" AND flags MATCHES " fma( |$)" AND flags MATCHES " f16c( |$)"
       AND flags MATCHES " bmi2( |$)")
      set(best avx2)
      if(flags MATCHES " avx512f( |$)" AND flags MATCHES " avx512bw( |$)" AND flags MATCHES " avx512dq( |$)"
         AND flags MATCHES " avx512vl( |$)")
        set(best avx512)
      endif()
    endif()
  endif()
  set(${out} ${best} PARENT_SCOPE)
endfunction()

tops_host_cpu_isa(TOPS_HOST_CPU_ISA)
if(TOPS_CPU_MAX_ISA STREQUAL "host")
  set(TOPS_CPU_MAX_ISA_RESOLVED ${TOPS_HOST_CPU_ISA})
else()
  set(TOPS_CPU_MAX_ISA_RESOLVED ${TOPS_CPU_MAX_ISA})
endif()
list(FIND TOPS_CPU_ISA_LEVELS "${TOPS_CPU_MAX_ISA_RESOLVED}" TOPS_CPU_MAX_ISA_LEVEL)
if(TOPS_CPU_MAX_ISA_LEVEL LESS 0)
  message(FATAL_ERROR "TOPS_CPU_MAX_ISA=${TOPS_CPU_MAX_ISA}: expected avx512, avx2, sse4 or host")
endif()
list(SUBLIST TOPS_CPU_ISA_LEVELS 0 ${TOPS_CPU_MAX_ISA_LEVEL} TOPS_CPU_ISAS)
list(APPEND TOPS_CPU_ISAS ${TOPS_CPU_MAX_ISA_RESOLVED})
message(STATUS "tops: CPU kernels for ${TOPS_CPU_ISAS} (this machine runs up to ${TOPS_HOST_CPU_ISA})")
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
    target_compile_definitions(${lib} PRIVATE TOPS_CPU_ISA_${isa} TOPS_BUILDING_LIBRARY
                                              TOPS_CPU_MAX_ISA_LEVEL=${TOPS_CPU_MAX_ISA_LEVEL})
    target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}
                                              ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PRIVATE tops_xsimd OpenMP::OpenMP_CXX)
    tops_target_warnings(${lib})
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
  endforeach()
  target_compile_definitions(${target} PRIVATE TOPS_CPU_MAX_ISA_LEVEL=${TOPS_CPU_MAX_ISA_LEVEL})
endfunction()
