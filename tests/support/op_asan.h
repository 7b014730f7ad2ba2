/* OPT_ASAN: 1 in a build under AddressSanitizer (gcc's __SANITIZE_ADDRESS__ or clang's
 * __has_feature), else 0; tests that bound time or RSS loosen or skip those bounds there. */
#ifndef OP_ASAN_H
#define OP_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define OPT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPT_ASAN 1
#endif
#endif
#ifndef OPT_ASAN
#define OPT_ASAN 0
#endif

#endif
