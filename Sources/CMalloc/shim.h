// glibc's allocator tuning (mallopt), for the long-running `syncnode serve`.
#if defined(__linux__)
#include <malloc.h>
#endif
