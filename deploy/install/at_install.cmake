# Run by `cmake --install` (install(CODE) in install.cmake): writes the files that name
# installed paths for the prefix of this install (CMAKE_INSTALL_PREFIX as --prefix set
# it), into OP_OUT, from where the next install rules copy them (DESTDIR applies there).
function(op_full_dir var rel)
  if(IS_ABSOLUTE "${rel}")
    set(${var} "${rel}" PARENT_SCOPE)
  else()
    set(${var} "${CMAKE_INSTALL_PREFIX}/${rel}" PARENT_SCOPE)
  endif()
endfunction()
op_full_dir(OP_FULL_LIBDIR "${OP_REL_LIBDIR}")
op_full_dir(OP_FULL_INCLUDEDIR "${OP_REL_INCLUDEDIR}")
op_full_dir(OP_FULL_SBINDIR "${OP_REL_SBINDIR}")
op_full_dir(OP_FULL_DOCDIR "${OP_REL_DOCDIR}")
set(OP_PREFIX "${CMAKE_INSTALL_PREFIX}")

file(MAKE_DIRECTORY "${OP_OUT}")
configure_file("${OP_SRC}/deploy/install/onepath.pc.in" "${OP_OUT}/onepath.pc" @ONLY)
configure_file("${OP_SRC}/deploy/install/onepath-client.pc.in" "${OP_OUT}/onepath-client.pc" @ONLY)

# deploy/onepathd.service is written for the default prefix /usr/local (so that it can
# be copied by hand as it is); the installed copy names this install's paths.
file(READ "${OP_SRC}/deploy/onepathd.service" unit)
string(REPLACE "/usr/local/sbin" "${OP_FULL_SBINDIR}" unit "${unit}")
string(REPLACE "/usr/local/share/doc/onepath" "${OP_FULL_DOCDIR}" unit "${unit}")
file(WRITE "${OP_OUT}/onepathd.service" "${unit}")

# Man pages: the version and the documentation directory of this install; a long path
# may break after any slash (\: is roff's invisible break point).
string(REPLACE "/" "/\\:" OP_MAN_DOCDIR "${OP_FULL_DOCDIR}")
string(REPLACE "/" "/\\:" OP_MAN_PREFIX "${OP_PREFIX}")
configure_file("${OP_SRC}/docs/man/onepath.1.in" "${OP_OUT}/onepath.1" @ONLY)
configure_file("${OP_SRC}/docs/man/onepathd.8.in" "${OP_OUT}/onepathd.8" @ONLY)
