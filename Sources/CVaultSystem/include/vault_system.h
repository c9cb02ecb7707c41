#ifndef VAULT_SYSTEM_H
#define VAULT_SYSTEM_H
#include <stddef.h>
#include <stdint.h>
#include <spawn.h>

/* Linux calls that Swift's Glibc module does not import (they need _GNU_SOURCE).
   Each returns 0 on success and -1 with errno set; elsewhere they are no-ops returning 0. */

/* Starts writeback of a file range without waiting (sync_file_range SYNC_FILE_RANGE_WRITE),
   so that a later fsync finds the data already on its way to the disk. */
int vault_start_writeback(int fd, int64_t offset, int64_t length);

/* Waits for writeback of a range to finish, then starts it for the same range, so dirty
   pages stay bounded (WAIT_BEFORE | WRITE | WAIT_AFTER). */
int vault_wait_writeback(int fd, int64_t offset, int64_t length);

/* Allocates disk space for bytes [0, length) without changing the file size
   (fallocate FALLOC_FL_KEEP_SIZE). Fails with EOPNOTSUPP where that is not supported. */
int vault_reserve(int fd, int64_t length);
/* F_SETPIPE_SZ up to `size` (Linux); the new size or -1. */
int vault_grow_pipe(int fd, int size);
/* posix_fadvise(POSIX_FADV_SEQUENTIAL) over the whole file, where it exists. */
/* Asks the kernel to start reading [offset, offset + length) into the page cache now
   (POSIX_FADV_WILLNEED); best effort, 0 elsewhere. */
int vault_advise_willneed(int fd, long long offset, long long length);

int vault_advise_sequential(int fd);

/* Installs SIGINT, SIGTERM and SIGHUP handlers that write the signal number (one byte) to
   write_fd, for a thread that reads the other end and cleans up (self-pipe). */
int vault_install_interrupt_handlers(int write_fd);

/* No core dumps (RLIMIT_CORE 0) and, on Linux, not dumpable (PR_SET_DUMPABLE 0): no core file
   or ptrace by the same user can read keys or passwords out of this process. */
int vault_disable_core_dumps(void);

/* Where `needle` first starts in `haystack` (glibc's memmem, vectorized and linear), or NULL. */
const void *vault_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length);

/* Returns the heap's free pages to the system (glibc malloc_trim(0)); 0 and nothing elsewhere. */
int vault_release_free_memory(void);

/* Serves every allocation of at least `threshold` bytes by its own mmap, returned to the system
   when freed (glibc M_MMAP_THRESHOLD, which also stops the threshold from rising); 0 on success
   or elsewhere, -1 on failure. */
int vault_map_large_allocations(size_t threshold);

/* Closes every descriptor from `from` on in a child posix_spawn starts (glibc 2.34 and later:
   posix_spawn_file_actions_addclosefrom_np); returns 0, or an error number (ENOSYS elsewhere,
   where the caller closes what it knows of and relies on close-on-exec for the rest). */
int vault_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

#endif
