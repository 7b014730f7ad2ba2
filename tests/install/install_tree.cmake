# ctest fixture: a fresh install of the build into PREFIX, as a user would run it.
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}\n${err}")
endif()
# What a user finds there (listed in the test log).
file(GLOB_RECURSE files RELATIVE "${PREFIX}" LIST_DIRECTORIES false "${PREFIX}/*")
list(SORT files)
list(LENGTH files n)
string(REPLACE ";" "\n  " listing "${files}")
message(STATUS "installed ${n} files under ${PREFIX}:\n  ${listing}")
