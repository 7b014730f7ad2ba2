# The installable library (included from the top CMakeLists.txt after core/, proto/,
# daemon/ and client/): shared and static libonepath and libonepath-client, the public
# headers, pkg-config files, the CMake package, man pages, bash completion, the Python
# package, docs and the systemd unit. `cmake --install build [--prefix DIR]` puts them
# under GNUInstallDirs paths. The binaries' own install rules are in daemon/ and client/.
#
# The libraries are built from the same objects as the static archives the binaries and
# tests link (onepath, onepath_proto, onepath_client: compiled position-independent for
# that), so there is one compilation of each file:
#   libonepath.so.0 / .a         core + proto's tile codec (public: the blobs a client
#                                fetches need op_tile_decode)
#   libonepath-client.so.0 / .a  client + proto's RPC messages and pre-scan (internal:
#                                hidden in the .so), linking libonepath
# Only the functions declared in the installed headers are exported (a linker version
# script generated from those headers by exports.cmake); tests/install checks that with
# nm -D against the compiler's own list of declarations.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(OP_INSTALL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(OP_LIB_OUT ${CMAKE_BINARY_DIR}/lib)

# ---- the version header (the version's one source is project() in CMakeLists.txt) ----
set(OP_GENERATED_INCLUDE ${CMAKE_BINARY_DIR}/include)
configure_file(${CMAKE_SOURCE_DIR}/core/include/onepath/version.h.in
               ${OP_GENERATED_INCLUDE}/onepath/version.h @ONLY)
target_include_directories(onepath PUBLIC $<BUILD_INTERFACE:${OP_GENERATED_INCLUDE}>)

# ---- public headers: every core header (a new one is picked up), the tile codec and
# the client; proto's rpc.h and mpscan.h are internal. ----
file(GLOB OP_CORE_PUBLIC_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/core/include/onepath/*.h)
set(OP_PUBLIC_HEADERS ${OP_CORE_PUBLIC_HEADERS} ${OP_GENERATED_INCLUDE}/onepath/version.h
                      ${CMAKE_SOURCE_DIR}/proto/include/onepath/tile_codec.h)
set(OP_CLIENT_PUBLIC_HEADERS ${CMAKE_SOURCE_DIR}/client/include/onepath/client.h
                             ${CMAKE_SOURCE_DIR}/client/include/onepath/fleet.h)
set(OP_PUBLIC_INCLUDES ${CMAKE_SOURCE_DIR}/core/include ${OP_GENERATED_INCLUDE}
                       ${CMAKE_SOURCE_DIR}/proto/include ${CMAKE_SOURCE_DIR}/client/include)

# Position-independent objects, usable by the shared libraries too. With -fPIC, gcc
# assumes any global function may be interposed and stops inlining them within a file;
# nothing here supports interposition, so keep the static build's code.
set_target_properties(onepath onepath_proto onepath_client PROPERTIES POSITION_INDEPENDENT_CODE ON)
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  foreach(t onepath onepath_proto onepath_client)
    target_compile_options(${t} PRIVATE -fno-semantic-interposition)
  endforeach()
endif()

# ---- version scripts ----
function(op_version_script out node headers)
  list(JOIN OP_PUBLIC_INCLUDES "|" incs)
  list(JOIN headers "|" hdrs)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} "-DINCLUDES=${incs}" "-DHEADERS=${hdrs}"
            -DNODE=${node} -DOUT=${out} -P ${OP_INSTALL_DIR}/exports.cmake
    DEPENDS ${headers} ${OP_INSTALL_DIR}/exports.cmake
    COMMENT "Exported symbols of ${node} from the public headers"
    VERBATIM)
endfunction()
set(OP_MAP ${CMAKE_BINARY_DIR}/exports/onepath.map)
set(OP_CLIENT_MAP ${CMAKE_BINARY_DIR}/exports/onepath-client.map)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/exports)
op_version_script(${OP_MAP} ONEPATH_${PROJECT_VERSION_MAJOR} "${OP_PUBLIC_HEADERS}")
op_version_script(${OP_CLIENT_MAP} ONEPATH_CLIENT_${PROJECT_VERSION_MAJOR}
                  "${OP_CLIENT_PUBLIC_HEADERS}")
add_custom_target(onepath_exports DEPENDS ${OP_MAP} ${OP_CLIENT_MAP})

# --no-undefined proves each .so complete; sanitizer and fuzzer builds leave their runtime's
# symbols for the program to bring (clang does not link it into shared libraries).
set(OP_SO_LINK_CHECK "LINKER:--no-undefined")
if(OP_SANITIZE OR OP_FUZZ)
  set(OP_SO_LINK_CHECK "")
endif()

# ---- libonepath ----
set(OP_CODEC_OBJECTS $<FILTER:$<TARGET_OBJECTS:onepath_proto>,INCLUDE,/tile_codec\.c\.o$>)
set(OP_RPC_OBJECTS $<FILTER:$<TARGET_OBJECTS:onepath_proto>,EXCLUDE,/tile_codec\.c\.o$>)
set(OP_INSTALL_INCLUDES $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
add_library(onepath_shared SHARED $<TARGET_OBJECTS:onepath> ${OP_CODEC_OBJECTS})
add_dependencies(onepath_shared onepath_exports)
target_link_libraries(onepath_shared PRIVATE m Threads::Threads)
target_link_options(onepath_shared PRIVATE "LINKER:--version-script=${OP_MAP}"
                    ${OP_SO_LINK_CHECK} "LINKER:--gc-sections")
target_include_directories(onepath_shared INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/core/include>
  $<BUILD_INTERFACE:${OP_GENERATED_INCLUDE}>
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/proto/include> ${OP_INSTALL_INCLUDES})
set_target_properties(onepath_shared PROPERTIES
  OUTPUT_NAME onepath EXPORT_NAME onepath
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${OP_MAP} LIBRARY_OUTPUT_DIRECTORY ${OP_LIB_OUT})

add_library(onepath_static STATIC $<TARGET_OBJECTS:onepath> ${OP_CODEC_OBJECTS})
target_link_libraries(onepath_static INTERFACE m Threads::Threads)
target_include_directories(onepath_static INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/core/include>
  $<BUILD_INTERFACE:${OP_GENERATED_INCLUDE}>
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/proto/include> ${OP_INSTALL_INCLUDES})
set_target_properties(onepath_static PROPERTIES
  OUTPUT_NAME onepath EXPORT_NAME onepath_static ARCHIVE_OUTPUT_DIRECTORY ${OP_LIB_OUT})

# ---- libonepath-client ----
add_library(onepath_client_shared SHARED $<TARGET_OBJECTS:onepath_client> ${OP_RPC_OBJECTS})
add_dependencies(onepath_client_shared onepath_exports)
target_link_libraries(onepath_client_shared PUBLIC onepath_shared
                      PRIVATE nng::nng PkgConfig::MSGPACK Threads::Threads)
target_link_options(onepath_client_shared PRIVATE "LINKER:--version-script=${OP_CLIENT_MAP}"
                    ${OP_SO_LINK_CHECK} "LINKER:--gc-sections")
target_include_directories(onepath_client_shared INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/client/include> ${OP_INSTALL_INCLUDES})
set_target_properties(onepath_client_shared PROPERTIES
  OUTPUT_NAME onepath-client EXPORT_NAME client
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${OP_CLIENT_MAP} LIBRARY_OUTPUT_DIRECTORY ${OP_LIB_OUT})

add_library(onepath_client_static STATIC $<TARGET_OBJECTS:onepath_client> ${OP_RPC_OBJECTS})
target_link_libraries(onepath_client_static INTERFACE onepath_static Threads::Threads
  $<BUILD_INTERFACE:nng::nng PkgConfig::MSGPACK> $<INSTALL_INTERFACE:nng msgpackc>)
target_include_directories(onepath_client_static INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/client/include> ${OP_INSTALL_INCLUDES})
set_target_properties(onepath_client_static PROPERTIES
  OUTPUT_NAME onepath-client EXPORT_NAME client_static ARCHIVE_OUTPUT_DIRECTORY ${OP_LIB_OUT})

# ---- install: libraries, headers, CMake package ----
set(OP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/onepath)
install(TARGETS onepath_shared onepath_static onepath_client_shared onepath_client_static
        EXPORT onepathTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${OP_PUBLIC_HEADERS} ${OP_CLIENT_PUBLIC_HEADERS}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onepath)
install(EXPORT onepathTargets NAMESPACE onepath:: DESTINATION ${OP_CMAKE_DIR})
configure_package_config_file(${OP_INSTALL_DIR}/onepathConfig.cmake.in
  ${CMAKE_BINARY_DIR}/exports/onepathConfig.cmake INSTALL_DESTINATION ${OP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/exports/onepathConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/exports/onepathConfig.cmake
              ${CMAKE_BINARY_DIR}/exports/onepathConfigVersion.cmake
        DESTINATION ${OP_CMAKE_DIR})

# ---- files that name installed paths: written at install time, so that
# `cmake --install build --prefix DIR` gets DIR's paths (not the configure-time prefix).
# Each is configured into build/exports/installed/ and then installed from there. ----
set(OP_AT_INSTALL ${CMAKE_BINARY_DIR}/exports/installed)
install(CODE "
  set(OP_SRC \"${CMAKE_SOURCE_DIR}\")
  set(OP_OUT \"${OP_AT_INSTALL}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(OP_REL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(OP_REL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(OP_REL_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(OP_REL_SBINDIR \"${CMAKE_INSTALL_SBINDIR}\")
  set(OP_REL_SYSCONFDIR \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(OP_REL_LOCALSTATEDIR \"${CMAKE_INSTALL_LOCALSTATEDIR}\")
  set(OP_REL_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  set(OP_REL_MANDIR \"${CMAKE_INSTALL_MANDIR}\")
  include(\"${OP_INSTALL_DIR}/at_install.cmake\")")
install(FILES ${OP_AT_INSTALL}/onepath.pc ${OP_AT_INSTALL}/onepath-client.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# systemd looks in <prefix>/lib/systemd/system for /usr and /usr/local.
install(FILES ${OP_AT_INSTALL}/onepathd.service DESTINATION lib/systemd/system)
install(FILES ${OP_AT_INSTALL}/onepath.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${OP_AT_INSTALL}/onepathd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

# ---- completion, docs, examples ----
install(FILES ${OP_INSTALL_DIR}/bash-completion/onepath ${OP_INSTALL_DIR}/bash-completion/onepathd
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB OP_SPEC_DOCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/spec/*.md)
install(FILES ${OP_SPEC_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/deploy/onepathd.env ${CMAKE_SOURCE_DIR}/deploy/k8s/onepathd.yaml
              ${CMAKE_SOURCE_DIR}/deploy/k8s/bake-job.yaml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- the Python client (pure Python: client/python/onepath) ----
# Debian's python3 reads /usr/lib/python3/dist-packages; for another prefix set
# PYTHONPATH=<prefix>/lib/python3/dist-packages (README "Install").
set(OP_INSTALL_PYTHONDIR lib/python3/dist-packages CACHE STRING
    "where cmake --install puts the onepath Python package (relative to the prefix)")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/client/python/onepath DESTINATION ${OP_INSTALL_PYTHONDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
