#define _GNU_SOURCE
#include "vault_system.h"
#include <errno.h>
#include <fcntl.h>

int vault_start_writeback(int fd, int64_t offset, int64_t length) {
#ifdef __linux__
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

int vault_wait_writeback(int fd, int64_t offset, int64_t length) {
#ifdef __linux__
    return sync_file_range(fd, offset, length,
                           SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

int vault_reserve(int fd, int64_t length) {
#ifdef __linux__
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, length);
#else
    (void)fd; (void)length;
    errno = EOPNOTSUPP;
    return -1;
#endif
}
