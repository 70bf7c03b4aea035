# Reads benchmarks/strategies.json at configure time, for the accuracy tests
# (tests/integration/CMakeLists.txt), through the one reader of the file, tools/strategies_file.py
# (Note [Reading strategies.json]): it checks the file whole and writes the variables below into
# the build tree, which this includes. A mistake in the file stops the configure with the
# reader's message, which names the entry and the field.
get_filename_component(GW_STRATEGIES_READER ${CMAKE_CURRENT_LIST_DIR}/../tools/strategies_file.py
  ABSOLUTE)

# gw_load_strategies(path): checks the file and sets, in the caller's scope:
#   GW_STRATEGIES          every strategy's name, in the file's order
#   GW_STRATEGY_BASELINE   the name the accuracy comparisons are against
#   GW_ACCURACY_RANKS      the accuracy runs' world size
#   GW_ACCURACY_ARGS       their gradwire_train arguments (each run adds --seed and --report)
#   GW_CI_ACCURACY_ARGS    the same at CI's length, GW_CI_ACCURACY_SEED the CI runs' seed
#                          (Note [Accuracy at two lengths], tools/strategies_file.py)
# and, for each strategy, with <name> as given (+ and all):
#   GW_STRATEGY_<name>_ID          the name for test and file names, + written _plus_
#   GW_STRATEGY_<name>_ENV         its settings, VAR=VALUE each, {steps_per_epoch} filled in
#   GW_STRATEGY_<name>_SEEDS       its accuracy runs' seeds (empty: no accuracy test)
#   GW_STRATEGY_<name>_LABELS      labels its accuracy tests carry besides integration;accuracy
#   GW_STRATEGY_<name>_VS_BASELINE gradwire_compare_reports' flags against the baseline
#   GW_STRATEGY_<name>_BASE        the strategy those flags compare with: accuracy.baseline where
#                                  given (a flat twin, say), else the file's baseline
#   GW_STRATEGY_<name>_CHECK       gradwire_check_report's flags on its first seed's report
#   GW_STRATEGY_<name>_CI_ENV, _CI_VS_BASELINE, _CI_CHECK   the same three for its CI run
macro(gw_load_strategies path)
  if(NOT Python3_EXECUTABLE)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
  endif()
  set(_gw_strategies_cmake ${CMAKE_CURRENT_BINARY_DIR}/gw_strategies.cmake)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}"
    "${GW_STRATEGIES_READER}")
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${GW_STRATEGIES_READER} --file ${path}
      --cmake ${_gw_strategies_cmake}
    RESULT_VARIABLE _gw_rc ERROR_VARIABLE _gw_err)
  if(NOT _gw_rc EQUAL 0)
    string(STRIP "${_gw_err}" _gw_err)
    message(FATAL_ERROR "${_gw_err}")
  endif()
  include(${_gw_strategies_cmake})
endmacro()
