# OP_TSAN: ThreadSanitizer on the programs the daemon and thread tests run.
#
# Criterion's runner cannot start in a ThreadSanitizer process (its BoxFort arena is mapped
# at random addresses TSan's shadow layout refuses: "Could not initialize inheritable
# arena", Snaipe/Criterion#274, open), so the Criterion binaries stay uninstrumented and the
# programs they start, onepathd and onepath, are built with TSan from instrumented twins of
# the libraries (NAME_tsan: same sources, same flags, plus -fsanitize=thread). The
# in-process thread tests (test_parallel, test_level_threads) are built a second time
# against a small Criterion stand-in (tests/tsan/criterion) as plain TSan programs.
# Every TSan report, of any process, lands in ${OP_TSAN_REPORTS}; tsan_reports fails on any.
set(OP_TSAN_FLAGS -fsanitize=thread -fno-omit-frame-pointer)

function(op_tsan_twin lib deps)
  get_target_property(srcs ${lib} SOURCES)
  add_library(${lib}_tsan STATIC ${srcs})
  target_include_directories(${lib}_tsan
    PUBLIC $<TARGET_PROPERTY:${lib},INTERFACE_INCLUDE_DIRECTORIES>
    PRIVATE $<TARGET_PROPERTY:${lib},INCLUDE_DIRECTORIES>)
  target_compile_definitions(${lib}_tsan PRIVATE $<TARGET_PROPERTY:${lib},COMPILE_DEFINITIONS>)
  target_compile_options(${lib}_tsan PRIVATE $<TARGET_PROPERTY:${lib},COMPILE_OPTIONS>
                                             ${OP_TSAN_FLAGS})
  target_link_libraries(${lib}_tsan PUBLIC ${deps})
endfunction()

op_tsan_twin(onepath "m;Threads::Threads")
op_tsan_twin(onepath_proto "onepath_tsan;PkgConfig::MSGPACK")
op_tsan_twin(onepathd_lib
             "onepath_tsan;onepath_proto_tsan;nng::nng;PkgConfig::UV;Threads::Threads;m")
op_tsan_twin(onepath_client "onepath_proto_tsan;nng::nng;Threads::Threads")

# The programs: their own sources instrumented, linked against the twins.
foreach(prog onepathd onepath_cli)
  target_compile_options(${prog} PRIVATE ${OP_TSAN_FLAGS})
  target_link_options(${prog} PRIVATE -fsanitize=thread)
endforeach()
set_property(TARGET onepathd PROPERTY LINK_LIBRARIES onepathd_lib_tsan)
set_property(TARGET onepath_cli PROPERTY LINK_LIBRARIES onepath_tsan onepath_proto_tsan
                                                        onepath_client_tsan)
