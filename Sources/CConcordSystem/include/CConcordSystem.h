// System headers Glibc's Swift module does not export (epoll, eventfd, timerfd),
// plus tiny wrappers for variadic or macro-only calls.
#pragma once
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <errno.h>
#include <unistd.h>
#include <malloc.h>

static inline int concord_fcntl_setfl(int fd, int flags) { return fcntl(fd, F_SETFL, flags); }
static inline int concord_fcntl_getfl(int fd) { return fcntl(fd, F_GETFL); }
static inline int concord_errno(void) { return errno; }

// glibc's malloc tuning (malloc.h is not in Glibc's Swift module).
static inline int concord_malloc_trim(void) { return malloc_trim(0); }
static inline int concord_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
static inline int concord_set_arena_max(int arenas) { return mallopt(M_ARENA_MAX, arenas); }
static inline int concord_set_trim_threshold(int bytes) { return mallopt(M_TRIM_THRESHOLD, bytes); }

// A hint to start loading `p`'s cache line (the mapping index's batch lookups overlap their
// cache misses with it); never faults, whatever `p` is.
static inline void concord_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

// CPUs this thread may run on (its affinity mask: `taskset`, a container's cpuset), 0 when
// unknown. Through the raw system call: glibc declares sched_getaffinity only with _GNU_SOURCE.
#include <sys/syscall.h>
static inline int concord_affinity_cpu_count(void) {
    unsigned long long mask[64] = {0};   // 4096 CPUs
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (bytes <= 0) return 0;
    int count = 0;
    for (long i = 0; i < bytes / (long)sizeof(mask[0]); i++) count += __builtin_popcountll(mask[i]);
    return count;
}

// Constants that Swift imports as enum structs or not at all; plain integers keep
// the transport's call sites simple.
#ifndef EPOLLEXCLUSIVE
#define EPOLLEXCLUSIVE (1u << 28)
#endif
static const uint32_t concord_EPOLLIN = EPOLLIN;
static const uint32_t concord_EPOLLOUT = EPOLLOUT;
static const uint32_t concord_EPOLLERR = EPOLLERR;
static const uint32_t concord_EPOLLHUP = EPOLLHUP;
static const uint32_t concord_EPOLLEXCLUSIVE = EPOLLEXCLUSIVE;
static const int concord_SOCK_STREAM = SOCK_STREAM;
static const int concord_SOCK_NONBLOCK = SOCK_NONBLOCK;
static const int concord_SOCK_CLOEXEC = SOCK_CLOEXEC;
static const int concord_EFD_NONBLOCK = EFD_NONBLOCK;
static const int concord_EFD_CLOEXEC = EFD_CLOEXEC;
static const int concord_EPOLL_CLOEXEC = EPOLL_CLOEXEC;

/// epoll_event is packed on x86_64; these accessors avoid depending on how Swift
/// imports the packed layout and the epoll_data union.
static inline int concord_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}
static inline uint32_t concord_epoll_event_events(const struct epoll_event *ev) { return ev->events; }
static inline uint64_t concord_epoll_event_data(const struct epoll_event *ev) { return ev->data.u64; }

/// accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); accept4 needs _GNU_SOURCE, set in shim.c.
int concord_accept4(int fd);
/// The peer's IP address as text (IPv4 dotted, IPv6 RFC 5952) into `out`; 0, or -1 when unknown.
int concord_peer_address(int fd, char *out, unsigned long length);
/// Names the calling thread (≤ 15 bytes shown), for `top -H` and debuggers.
void concord_set_thread_name(const char *name);
/// Puts the calling thread under the batch policy (Linux `SCHED_BATCH`: woken, it does not preempt
/// the thread running on its core); 0 on success, else an errno value.
int concord_set_thread_batch_scheduling(void);
/// The calling thread's scheduling policy (`SCHED_OTHER` 0, `SCHED_BATCH` 3 on Linux), -1 on failure.
int concord_thread_scheduling_policy(void);
/// A per-thread marker for "the event loop on this thread" (thread-local in shim.c).
void concord_set_current_loop(void *loop);
void *concord_current_loop(void);
