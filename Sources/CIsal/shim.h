#include <isa-l/igzip_lib.h>

/* igzip's level-1 buffer at its "small" size (a macro Swift cannot import): on the benchmark
   documents as fast, and as good, as the default's 276 KiB, in 84 KiB. */
static inline uint32_t cisal_level1_buffer_size(void) { return ISAL_DEF_LVL1_SMALL; }
