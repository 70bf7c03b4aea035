# Sanitizer and fuzzer builds, in one place.
#
# Note "Sanitizer trees"
# GRADWIRE_SANITIZE instruments one build tree; `./gradwire.sh test --sanitize` builds and runs
# three of them beside ./build (docs/TESTING.md):
#   address  g++, ASan + UBSan (-fsanitize=address,undefined -fno-sanitize-recover=all): every test
#            but the accuracy runs, multi-rank included, plus the leak canary; against Open MPI
#            or MPICH (CI's).
#   thread   g++, TSan: the engine thread and the multi-rank tests that drive it (label `tsan`,
#            tests/sanitizers).
#   fuzzer   clang, libFuzzer + ASan + UBSan: the fuzz targets of tests/fuzz (label `fuzz`).
# All three build -O1 -g1 -fno-omit-frame-pointer (-g1: line tables, all a report's file:line
# needs, compiled faster than -g's full debug information), with CUDA off (nvcc's device code and the CUDA
# runtime cannot be instrumented; ./build checks the CUDA kernels where there is a GPU).
# MPI itself is not instrumented and leaks at exit: the suppression files in tests/sanitizers name
# only MPI's own libraries and their dependencies, never gradwire code, and the leak canary test
# (tests/sanitizers) proves that a leak from gradwire code on a rank is still reported.
#
# Note "Sanitizer reports fail every test"
# A sanitizer's report must fail the test it appears in, also where the exit code does not decide:
# tests that expect a failure (a non-zero exit, PASS_REGULAR_EXPRESSION on an error message) would
# otherwise pass when a rank also leaked or raced, and a rank ended by MPI_Abort loses TSan's exit
# code. So in a sanitizer tree every test gets FAIL_REGULAR_EXPRESSION on the reports' headers and
# the sanitizer options in its environment (ENVIRONMENT_MODIFICATION, so a test's own ENVIRONMENT
# stays). CMake 3.25 sets test properties only in the directory that made the test, so these are
# set when CTest runs, by a file that tests/sanitizers, the last test directory CTest reads,
# includes (gw_sanitizer_checks below). tests/integration/expect_failure.sh checks the same
# patterns itself, because it shows only the end of a failing command's output.

set(GRADWIRE_SANITIZE "" CACHE STRING
  "Instrument this tree: address (ASan+UBSan), thread (TSan), fuzzer (libFuzzer targets), or empty")
set_property(CACHE GRADWIRE_SANITIZE PROPERTY STRINGS "" address thread fuzzer)
set(GRADWIRE_FUZZ_SECONDS "$ENV{FUZZ_SECONDS}" CACHE STRING
  "Seconds each fuzz target runs as a test (GRADWIRE_SANITIZE=fuzzer; default 30)")
if(GRADWIRE_FUZZ_SECONDS STREQUAL "")
  set_property(CACHE GRADWIRE_FUZZ_SECONDS PROPERTY VALUE 30)
endif()
if(NOT GRADWIRE_FUZZ_SECONDS MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "GRADWIRE_FUZZ_SECONDS (FUZZ_SECONDS)='${GRADWIRE_FUZZ_SECONDS}' is not "
    "valid; accepted: a whole number of seconds, at least 1")
endif()

set(GRADWIRE_SANITIZER_DIR ${PROJECT_SOURCE_DIR}/tests/sanitizers)
# The headers of every sanitizer's report (UBSan's "file:line:col: runtime error: ..." included).
set(GRADWIRE_SANITIZER_REPORT_REGEX
  "ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]*Sanitizer|: runtime error: ")
set(GRADWIRE_SANITIZER_ENV "")    # NAME=value for every test of the tree
set(GRADWIRE_SANITIZER_LINK "")   # what a program linking libgradwire must link with too

# Note "Test code at -Og in the sanitizer trees"
# The ASan and TSan trees compile gradwire's code -O1 (Note "Sanitizer trees"), and the code of the
# tests -Og: tests/CMakeLists.txt calls gw_sanitizer_test_code() before its folders. A test's own
# code is GoogleTest's macros and calls into gradwire, slow to compile instrumented at -O1; -Og
# skips most of -O1's passes but keeps the inlining of small functions, so a test's loops over a
# buffer (a vector's operator[], an iterator) stay about as quick as at -O1, where -O0 leaves a
# call per element. The instrumentation is the same at every level, so every check stays. Two
# folders keep -O1 (gw_sanitizer_test_code(OPTIMIZED)): tests/kernels/, whose sources instantiate
# the device algorithms under Thrust's OpenMP system, code under test that runs on millions of
# elements; and tests/integration/, whose tools read whole checkpoints, reports and parameter
# files. The libFuzzer tree's targets stay -O1: their speed is how many inputs a run tries.
macro(gw_sanitizer_test_code)
  if(GRADWIRE_SANITIZE MATCHES "^(address|thread)$")
    if("${ARGN}" STREQUAL "OPTIMIZED")
      # CMake drops a repeated option, so the -Og inherited from the folder above goes instead.
      get_directory_property(gw_options COMPILE_OPTIONS)
      list(REMOVE_ITEM gw_options "$<$<COMPILE_LANGUAGE:C,CXX>:-Og>")
      set_directory_properties(PROPERTIES COMPILE_OPTIONS "${gw_options}")
    else()
      add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-Og>")
    endif()
  endif()
endmacro()

if(GRADWIRE_SANITIZE STREQUAL "")
  return()
endif()
if(NOT GRADWIRE_SANITIZE MATCHES "^(address|thread|fuzzer)$")
  message(FATAL_ERROR "GRADWIRE_SANITIZE='${GRADWIRE_SANITIZE}' is not known; accepted: address "
    "(ASan+UBSan), thread (TSan), fuzzer (libFuzzer, clang), or empty for none")
endif()
if(GRADWIRE_SANITIZE STREQUAL fuzzer AND NOT CMAKE_CXX_COMPILER_ID STREQUAL Clang)
  message(FATAL_ERROR "GRADWIRE_SANITIZE=fuzzer needs clang (libFuzzer), not "
    "${CMAKE_CXX_COMPILER_ID}: configure with -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
  message(FATAL_ERROR "GRADWIRE_SANITIZE needs g++ or clang, not ${CMAKE_CXX_COMPILER_ID}")
endif()

# See Note "Sanitizer trees": no CUDA in a sanitizer tree.
set(GRADWIRE_ENABLE_CUDA OFF CACHE BOOL "Build the CUDA kernels when nvcc is found" FORCE)

set(gw_common -O1 -g1 -fno-omit-frame-pointer)
if(GRADWIRE_SANITIZE STREQUAL address)
  set(gw_compile -fsanitize=address,undefined -fno-sanitize-recover=all)
  set(GRADWIRE_SANITIZER_LINK -fsanitize=address,undefined)
  # ASan's fast unwinder (See Note "Open MPI's components stay loaded").
  set(GRADWIRE_SANITIZER_ENV
    "ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1"
    "LSAN_OPTIONS=suppressions=${GRADWIRE_SANITIZER_DIR}/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:print_summary=1")
elseif(GRADWIRE_SANITIZE STREQUAL thread)
  set(gw_compile -fsanitize=thread)
  set(GRADWIRE_SANITIZER_LINK -fsanitize=thread)
  set(GRADWIRE_SANITIZER_ENV
    "TSAN_OPTIONS=suppressions=${GRADWIRE_SANITIZER_DIR}/tsan.supp:second_deadlock_stack=1:print_suppressions=0")
else()
  # Everything is instrumented for coverage; only the fuzz targets get libFuzzer's main
  # (gw_add_fuzzer). UBSan findings abort, so libFuzzer sees them as crashes and keeps the input.
  set(gw_compile -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all)
  set(GRADWIRE_SANITIZER_LINK -fsanitize=address,undefined)
  set(GRADWIRE_SANITIZER_ENV "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:print_summary=1")
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 15)
    # clang 14's binary16 (__fp16, Note [CPU fp16 casts]) converts through compiler-rt's builtins,
    # which libgcc does not have.
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} --rtlib=compiler-rt --print-libgcc-file-name
      OUTPUT_VARIABLE gw_builtins OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT EXISTS "${gw_builtins}")
      message(FATAL_ERROR "GRADWIRE_SANITIZE=fuzzer: clang's compiler-rt builtins are missing "
        "('${gw_builtins}'); install libclang-rt-14-dev (Debian 12)")
    endif()
    link_libraries(${gw_builtins})
  endif()
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${gw_common};${gw_compile}>")
add_link_options(${GRADWIRE_SANITIZER_LINK})
message(STATUS "gradwire: sanitizer tree '${GRADWIRE_SANITIZE}': ${gw_compile}")

# Note "Open MPI's components stay loaded"
# LeakSanitizer reports at exit, and a leak is suppressed when a frame of its allocation stack lies
# in a library lsan.supp names. Both MPIs unload the modules they opened (Open MPI's components,
# mca_*.so; UCX's transports under MPICH) before LSan looks. A block then reachable only from such
# a module's data counts as leaked, and a frame in it has no module left to match. Open MPI is
# built without frame pointers, so ASan's fast unwinder often records only the caller of malloc,
# a frame in a component; the slow unwinder (fast_unwind_on_malloc=0) follows such stacks up into
# libmpi, but unwinds every allocation of every process that way, at a cost of seconds per MPI
# launch. So an ASan tree links tests/sanitizers/keep_loaded.c into each of its executables
# (gw_keep_components_loaded, called at the end of the top CMakeLists.txt) and exports its
# dlclose, which leaves libraries mapped: their blocks stay reachable and the fast unwinder's one
# frame names its module. What remains unnamed is an allocation by the C library on Open MPI's
# behalf (asprintf's buffer: lsan.supp names that function, which gradwire does not call;
# tests/integration/layering.sh checks). A program built outside the tree (the installed-package
# example) runs with the slow unwinder. The leak canary (tests/sanitizers) proves that a leak
# from gradwire code on a rank is still reported.
function(gw_keep_components_loaded)
  add_library(gw_keep_loaded OBJECT ${GRADWIRE_SANITIZER_DIR}/keep_loaded.c)
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target ${targets})
      get_target_property(type ${target} TYPE)
      if(type STREQUAL EXECUTABLE)
        target_link_libraries(${target} PRIVATE gw_keep_loaded)
        target_link_options(${target} PRIVATE -Wl,--export-dynamic-symbol=dlclose)
      endif()
    endforeach()
  endwhile()
endfunction()

# gw_sanitizer_checks(<dir>...): in a sanitizer tree, gives every test of the named test
# directories the report check and the sanitizer environment; call it from the test directory
# CTest reads last (See Note "Sanitizer reports fail every test").
function(gw_sanitizer_checks)
  if(GRADWIRE_SANITIZE STREQUAL "")
    return()
  endif()
  set(tests "")
  foreach(dir ${ARGN})
    get_property(dir_tests DIRECTORY ${dir} PROPERTY TESTS)
    list(APPEND tests ${dir_tests})
  endforeach()
  set(modifications "")
  foreach(assignment ${GRADWIRE_SANITIZER_ENV})
    string(REGEX REPLACE "^([^=]*)=(.*)$" "\\1=set:\\2" modification "${assignment}")
    list(APPEND modifications "${modification}")
  endforeach()
  set(file ${CMAKE_CURRENT_BINARY_DIR}/sanitizer_checks.cmake)
  set(text "# Generated by gw_sanitizer_checks (cmake/GradwireSanitizers.cmake).\n")
  foreach(test ${tests})
    string(APPEND text "set_tests_properties([=[${test}]=] PROPERTIES\n"
      "  FAIL_REGULAR_EXPRESSION [=[${GRADWIRE_SANITIZER_REPORT_REGEX}]=]\n"
      "  ENVIRONMENT_MODIFICATION [=[${modifications}]=])\n")
  endforeach()
  file(WRITE ${file} "${text}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()

# gw_add_fuzzer(<name> SOURCES <files...> [LIBS <targets...>] [ARGS <libFuzzer flags...>]):
# a libFuzzer target tests/fuzz/<name>.cc, run from its committed seed corpus
# tests/fuzz/corpus/<name>/ for GRADWIRE_FUZZ_SECONDS as the CTest test <name> (label fuzz). A
# dictionary tests/fuzz/<name>.dict is used when present. New inputs go to a scratch folder in the
# build tree, never into the committed corpus.
function(gw_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;ARGS" ${ARGN})
  set(corpus ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
  if(NOT IS_DIRECTORY ${corpus})
    message(FATAL_ERROR "gw_add_fuzzer(${name}): no seed corpus at ${corpus}")
  endif()
  if(NOT TARGET gw_fuzzers)
    add_custom_target(gw_fuzzers)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(gw_fuzzers ${name})
  set(args ${ARG_ARGS})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${name}.dict)
    list(APPEND args -dict=${CMAKE_CURRENT_SOURCE_DIR}/${name}.dict)
  endif()
  add_test(NAME ${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_fuzzer.sh $<TARGET_FILE:${name}> ${corpus}
      ${CMAKE_CURRENT_BINARY_DIR}/scratch/${name} ${GRADWIRE_FUZZ_SECONDS} ${args})
  math(EXPR timeout "${GRADWIRE_FUZZ_SECONDS} + 120")
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS fuzz)
endfunction()
