# rudnn_add_gtest(<name> LABELS <label> SOURCES <file>...): a GoogleTest binary whose tests are
# registered one by one with the CTest label (one: gtest_discover_tests flattens lists).
find_package(GTest REQUIRED)
include(GoogleTest)
function(rudnn_add_gtest name)
  cmake_parse_arguments(ARG "" "" "LABELS;SOURCES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
