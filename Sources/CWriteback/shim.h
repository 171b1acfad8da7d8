// Starting a file's writeback without waiting for it (sync_file_range(2), Linux): a batch of
// blobs then waits for the disk once, at its end, while later blobs are still arriving.
#include <stdint.h>
#ifdef __linux__
int sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);
static inline int syncnode_start_writeback(int fd) { return sync_file_range(fd, 0, 0, 2 /* SYNC_FILE_RANGE_WRITE */); }
#else
static inline int syncnode_start_writeback(int fd) { (void)fd; return 0; }
#endif
