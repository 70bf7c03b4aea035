# Helpers for the test suite. Every multi-rank test runs under a real mpirun (never a home-made
# collective), with a CTest timeout so that a hang fails instead of blocking CI.

set(GRADWIRE_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none)

# gw_add_gtest(<name> SOURCES <files...> [LIBS <targets...>] [TIMEOUT <s>] [LABELS <labels...>])
# One GoogleTest executable, run as one CTest test.
function(gw_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${GRADWIRE_TEST_ENV}"
    LABELS "${ARG_LABELS}")
endfunction()

# gw_add_mpi_test(<test-name> NP <n> COMMAND <exe> [args...] [TIMEOUT <s>] [LABELS <labels...>])
# Runs <exe> under mpirun with <n> ranks (oversubscribed when n exceeds the cores).
function(gw_add_mpi_test name)
  cmake_parse_arguments(ARG "" "NP;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} --oversubscribe --bind-to none
            ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${GRADWIRE_TEST_ENV}"
    LABELS "mpi;${ARG_LABELS}")
endfunction()
