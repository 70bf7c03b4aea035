# Helpers for the test suite. Every multi-rank test runs under a real MPI launcher (never a
# home-made collective), with a CTest timeout so that a hang fails instead of blocking CI. The
# launcher is bin/gw_mpiexec (cmake/GradwireMpiLauncher.cmake): the MPI the build found, with the
# flags that MPI needs, so the same tests run under Open MPI and MPICH.

set(GRADWIRE_TEST_ENV OPENBLAS_NUM_THREADS=1 ${GRADWIRE_MPI_TEST_ENV})
if(GRADWIRE_MPI_FLAVOR STREQUAL openmpi)
  # Single-process tests start MPI too; as root, Open MPI wants to be told.
  list(APPEND GRADWIRE_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
endif()

# Note "Skipped is not passed"
# A GoogleTest binary whose tests all skip (GTEST_SKIP: the CUDA kernels' tests without a GPU, the
# data set's without Fashion-MNIST) tested nothing, and must not count as passed. Its main
# (tests/common/gtest_main.cc) exits 77 when no test passed and none failed, and CTest shows 77 as
# "Skipped" (SKIP_RETURN_CODE). A binary where some tests passed and others skipped (cast_cpu_test
# skips its F16C/AVX variants on a CPU without them) passes: what it ran is a real result, and
# GoogleTest lists the skipped tests in its output ("[  SKIPPED ]"). So a test that must show as
# skipped on its own runs as its own CTest test: kernels_cuda_test runs the GPU tests, and
# kernels_cuda_without_device the one check that only a machine without a device can make
# (tests/kernels). The MPI test main (tests/common/mpi_gtest_main.cc) exits 77 the same way, on
# every rank (the GPU communicator tests, tests/plugin); a gw_add_mpi_test that can skip sets
# SKIP_RETURN_CODE 77 itself.

# The two test mains are compiled once per tree and linked into every test binary
# (gw_test_mains(), called by tests/CMakeLists.txt before its folders).
function(gw_test_mains)
  add_library(gw_gtest_main OBJECT ${PROJECT_SOURCE_DIR}/tests/common/gtest_main.cc)
  target_link_libraries(gw_gtest_main PUBLIC GTest::gtest)
  add_library(gw_mpi_gtest_main OBJECT ${PROJECT_SOURCE_DIR}/tests/common/mpi_gtest_main.cc)
  target_link_libraries(gw_mpi_gtest_main PUBLIC gradwire MPI::MPI_C GTest::gtest)
endfunction()

# gw_add_gtest(<name> SOURCES <files...> [LIBS <targets...>] [ARGS <arguments...>] [TIMEOUT <s>]
#              [LABELS <labels...>])
# One GoogleTest executable, run (with ARGS) as one CTest test; skipped when it tested nothing
# (See Note "Skipped is not passed").
function(gw_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;ARGS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} gw_gtest_main)
  gw_add_gtest_run(${name} EXE ${name} ARGS ${ARG_ARGS} TIMEOUT ${ARG_TIMEOUT}
    LABELS ${ARG_LABELS})
endfunction()

# gw_add_gtest_run(<test> EXE <gw_add_gtest executable> [ARGS <arguments...>] [TIMEOUT <s>]
#                  [LABELS <labels...>]): another CTest test of a binary made by gw_add_gtest,
# e.g. a --gtest_filter of it.
function(gw_add_gtest_run test)
  cmake_parse_arguments(ARG "" "EXE;TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${test} COMMAND ${ARG_EXE} ${ARG_ARGS})
  set_tests_properties(${test} PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${GRADWIRE_TEST_ENV}"
    LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77)
endfunction()

# gw_add_mpi_test(<test-name> NP <n> COMMAND <exe> [args...] [TIMEOUT <s>] [LABELS <labels...>])
# Runs <exe> on <n> ranks through bin/gw_mpiexec (more ranks than cores are allowed).
function(gw_add_mpi_test name)
  cmake_parse_arguments(ARG "" "NP;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${GRADWIRE_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${GRADWIRE_TEST_ENV}"
    LABELS "mpi;${ARG_LABELS}")
endfunction()

# gw_add_mpi_gtest(<exe> PREFIX <test-prefix> SOURCES <files...> [LIBS <libs...>] RANKS <n...>
#                  TIMEOUT <s> [ARGS <args...>]): a GoogleTest binary with the MPI main
# (tests/common), run as <prefix>_np<n> for each n, with ARGS on its command line.
function(gw_add_mpi_gtest exe)
  cmake_parse_arguments(ARG "" "PREFIX;TIMEOUT" "SOURCES;LIBS;RANKS;ARGS" ${ARGN})
  add_executable(${exe} ${ARG_SOURCES})
  target_link_libraries(${exe} PRIVATE ${ARG_LIBS} gw_mpi_gtest_main)
  foreach(np ${ARG_RANKS})
    gw_add_mpi_test(${ARG_PREFIX}_np${np} NP ${np} COMMAND $<TARGET_FILE:${exe}> ${ARG_ARGS}
      TIMEOUT ${ARG_TIMEOUT})
  endforeach()
endfunction()
