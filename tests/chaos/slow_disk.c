/*
 * A slow disk for one node of the fault harness, loaded into the node with LD_PRELOAD.
 *
 * While the file named by $CHAOS_SLOW_DISK holds a number of milliseconds, every fsync, fdatasync
 * and sync_file_range the process makes sleeps that long before reaching the disk: the way a
 * failing or overloaded disk looks to a program, whose writes land in the page cache at once and
 * whose flushes do not return. Without the file, the calls go straight through (one open(2) more
 * each).
 *
 * Built by the harness: cc -shared -fPIC -O2 -o slow_disk.so slow_disk.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static long configured_delay_ms(void) {
    const char *path = getenv("CHAOS_SLOW_DISK");
    if (path == NULL) {
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    char text[32];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    text[n] = '\0';
    long ms = strtol(text, NULL, 10);
    return ms > 0 ? ms : 0;
}

/* Sleeps for the configured delay, keeping the caller's errno. */
static void stall(void) {
    int saved = errno;
    long ms = configured_delay_ms();
    if (ms > 0) {
        struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&left, &left) != 0 && errno == EINTR) {
        }
    }
    errno = saved;
}

/* fsync and fdatasync: the same signature, the same delay. */
#define SLOWED_FD_SYNC(name)                                      \
    int name(int fd) {                                            \
        static int (*real)(int);                                  \
        if (real == NULL) {                                       \
            real = (int (*)(int))dlsym(RTLD_NEXT, #name);         \
        }                                                         \
        stall();                                                  \
        return real(fd);                                          \
    }

SLOWED_FD_SYNC(fsync)
SLOWED_FD_SYNC(fdatasync)

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
    static int (*real)(int, off64_t, off64_t, unsigned int);
    if (real == NULL) {
        real = (int (*)(int, off64_t, off64_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
    }
    stall();
    return real(fd, offset, nbytes, flags);
}
