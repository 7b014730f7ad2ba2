# The TSan pass's tests (OP_TSAN; tests/tsan/tsan.cmake builds the programs): label "tsan".
# Included from tests/CMakeLists.txt (tests' properties are set where they are added).
set(OP_TSAN_DIR ${CMAKE_CURRENT_LIST_DIR})
set(OP_TSAN_REPORTS ${CMAKE_BINARY_DIR}/tsan-reports)
set(OP_TSAN_ENV
  "TSAN_OPTIONS=log_path=${OP_TSAN_REPORTS}/report halt_on_error=0 exitcode=66 second_deadlock_stack=1 suppressions=${OP_TSAN_DIR}/tsan.supp")

# The Criterion tests see that the programs they start run under TSan (op_daemon_test.h).
target_compile_definitions(op_test_support PUBLIC OP_TSAN_PROGRAMS=1)

# In-process thread tests, built against the Criterion stand-in.
foreach(name test_parallel test_level_threads)
  add_executable(tsan_${name} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.c
                              ${CMAKE_CURRENT_SOURCE_DIR}/support/op_test.c
                              ${OP_TSAN_DIR}/criterion_lite.c)
  target_include_directories(tsan_${name} BEFORE PRIVATE ${OP_TSAN_DIR}
                                                         ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_definitions(tsan_${name} PRIVATE OP_SHARED_DIR="${OP_SHARED_DIR}"
    OP_GOLDEN_DIR="${CMAKE_CURRENT_SOURCE_DIR}/golden" OP_DOCS_DIR="${CMAKE_SOURCE_DIR}/docs"
    OP_BIN_DIR="${CMAKE_BINARY_DIR}/bin")
  target_compile_options(tsan_${name} PRIVATE ${OP_TSAN_FLAGS})
  target_link_options(tsan_${name} PRIVATE -fsanitize=thread)
  target_link_libraries(tsan_${name} PRIVATE onepath_tsan onepath_proto_tsan)
  add_test(NAME tsan_${name} COMMAND tsan_${name})
  set_tests_properties(tsan_${name} PROPERTIES TIMEOUT 900)
endforeach()

# The Criterion binaries that start onepathd or onepath (now TSan programs).
set(OP_TSAN_TESTS tsan_test_parallel tsan_test_level_threads)
foreach(t ${OP_TESTS})
  get_filename_component(name ${t} NAME_WE)
  if(name MATCHES "^test_(daemon|client)")
    list(APPEND OP_TSAN_TESTS ${name})
  endif()
endforeach()

# TSan cannot write a report into a missing directory (the process dies instead): the
# directory is made afresh before the pass.
add_test(NAME tsan_reports_clear
         COMMAND sh -c "rm -rf '${OP_TSAN_REPORTS}' && mkdir -p '${OP_TSAN_REPORTS}'")
# The wiring itself: a program with a known race must leave a report where the pass looks.
add_executable(tsan_canary ${OP_TSAN_DIR}/canary.c)
target_compile_options(tsan_canary PRIVATE ${OP_TSAN_FLAGS})
target_link_options(tsan_canary PRIVATE -fsanitize=thread)
target_link_libraries(tsan_canary PRIVATE Threads::Threads)
add_test(NAME tsan_canary
         COMMAND sh ${OP_TSAN_DIR}/canary.sh $<TARGET_FILE:tsan_canary>
                 ${CMAKE_CURRENT_BINARY_DIR}/tsan-canary ${OP_TSAN_DIR}/tsan.supp)
set_tests_properties(tsan_canary PROPERTIES LABELS tsan TIMEOUT 60)
add_test(NAME tsan_reports
         COMMAND sh ${OP_TSAN_DIR}/reports.sh ${OP_TSAN_REPORTS})
set_tests_properties(tsan_reports_clear PROPERTIES FIXTURES_SETUP tsan LABELS tsan)
set_tests_properties(tsan_reports PROPERTIES FIXTURES_CLEANUP tsan LABELS tsan)
set_tests_properties(${OP_TSAN_TESTS} PROPERTIES FIXTURES_REQUIRED tsan LABELS tsan
                     ENVIRONMENT "${OP_TSAN_ENV}")
