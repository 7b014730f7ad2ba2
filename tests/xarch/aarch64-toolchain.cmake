# Debian's aarch64 cross toolchain (gcc-aarch64-linux-gnu) with the target's libraries
# unpacked into OP_XARCH_SYSROOT (tests/xarch/aarch64.sh); programs run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${OP_XARCH_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES OP_XARCH_SYSROOT)
# Some packages (zlib1g, libcom-err2, libkeyutils1) still ship in /lib.
set(OP_XARCH_LIBDIRS ${OP_XARCH_SYSROOT}/usr/lib/aarch64-linux-gnu
    ${OP_XARCH_SYSROOT}/lib/aarch64-linux-gnu)
string(REPLACE ";" ":" OP_XARCH_LIBPATH "${OP_XARCH_LIBDIRS}")
# The unpacked libraries need each other at link time (libcriterion -> libgit2 -> ...).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${OP_XARCH_LIBPATH}")
# QEMU_LD_PREFIX is for the programs a test starts: Criterion runs each test in a new
# process of its own program (execve of /proc/self/exe), which the kernel hands to
# qemu-aarch64 through binfmt_misc (tests/xarch/aarch64.sh registers it).
set(CMAKE_CROSSCOMPILING_EMULATOR env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64
    -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=${OP_XARCH_LIBPATH})
