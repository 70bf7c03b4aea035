# gw_add_layer(<target> SOURCES <files...>): one layer of libgradwire as an object library.
# Its objects go into the shared gradwire library; tests of that layer link the object library
# alone, so a layer is built and tested without the layers above it.
function(gw_add_layer target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${target} OBJECT ${ARG_SOURCES})
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>)
  target_sources(gradwire PRIVATE $<TARGET_OBJECTS:${target}>)
endfunction()
