#define _GNU_SOURCE
#include "vault_system.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>

const void *vault_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length) {
    return memmem(haystack, haystack_length, needle, needle_length);
}

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

#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static volatile int vault_interrupt_fd = -1;

/* Async-signal-safe: writes the signal number to the pipe the watcher thread reads. */
static void vault_on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (vault_interrupt_fd >= 0) { ssize_t r = write(vault_interrupt_fd, &b, 1); (void)r; }
    errno = saved;
}

int vault_install_interrupt_handlers(int write_fd) {
    vault_interrupt_fd = write_fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = vault_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    int signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        if (sigaction(signals[i], &sa, NULL) != 0) return -1;
    }
    return 0;
}

int vault_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
#ifdef __linux__
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -1;
#endif
    return 0;
}

#ifdef __GLIBC__
#include <malloc.h>
#endif

int vault_release_free_memory(void) {
#ifdef __GLIBC__
    return malloc_trim(0);
#else
    return 0;
#endif
}

int vault_map_large_allocations(size_t threshold) {
#ifdef __GLIBC__
    return mallopt(M_MMAP_THRESHOLD, (int)threshold) == 1 ? 0 : -1;
#else
    (void)threshold;
    return 0;
#endif
}

/* Grows a pipe's buffer (Linux F_SETPIPE_SZ) to at most `size` bytes, within the unprivileged
   limit /proc/sys/fs/pipe-max-size; returns the new size, or -1 (not a pipe, or elsewhere). */
int vault_grow_pipe(int fd, int size) {
#if defined(__linux__) && defined(F_SETPIPE_SZ)
    for (int s = size; s >= 65536; s /= 2) {
        int r = fcntl(fd, F_SETPIPE_SZ, s);
        if (r >= 0) return r;
        if (errno != EPERM && errno != EBUSY) return -1;
    }
    return -1;
#else
    (void)fd; (void)size;
    return -1;
#endif
}

/* Tells the kernel a file will be read once, front to back (a larger read-ahead window). */
int vault_advise_willneed(int fd, long long offset, long long length) {
#if defined(POSIX_FADV_WILLNEED)
    return posix_fadvise(fd, (off_t)offset, (off_t)length, POSIX_FADV_WILLNEED);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

int vault_advise_sequential(int fd) {
#if defined(POSIX_FADV_SEQUENTIAL)
    return posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#else
    (void)fd;
    return 0;
#endif
}

int vault_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
#else
    (void)actions; (void)from;
    return ENOSYS;
#endif
}
