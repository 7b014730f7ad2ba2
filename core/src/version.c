/* The library's version (onepath/version.h, generated from the top CMakeLists.txt). */
#include "onepath/version.h"

const char *op_version(void)
{
    return OP_VERSION_STRING;
}
