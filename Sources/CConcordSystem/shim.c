#define _GNU_SOURCE
#include <sys/socket.h>
#include "CConcordSystem.h"

int concord_accept4(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#include <arpa/inet.h>
#include <string.h>
int concord_peer_address(int fd, char *out, unsigned long length) {
    struct sockaddr_storage address;
    socklen_t size = sizeof(address);
    if (length == 0 || getpeername(fd, (struct sockaddr *)&address, &size) != 0) return -1;
    const void *raw = NULL;
    if (address.ss_family == AF_INET) raw = &((struct sockaddr_in *)&address)->sin_addr;
    else if (address.ss_family == AF_INET6) raw = &((struct sockaddr_in6 *)&address)->sin6_addr;
    else return -1;
    return inet_ntop(address.ss_family, raw, out, (socklen_t)length) ? 0 : -1;
}

#include <pthread.h>
#include <sched.h>
int concord_set_thread_batch_scheduling(void) {
#ifdef SCHED_BATCH
    struct sched_param parameter = { .sched_priority = 0 };
    return pthread_setschedparam(pthread_self(), SCHED_BATCH, &parameter);
#else
    return 0;
#endif
}

int concord_thread_scheduling_policy(void) {
    int policy = -1;
    struct sched_param parameter;
    return pthread_getschedparam(pthread_self(), &policy, &parameter) == 0 ? policy : -1;
}

/// Linux takes at most 15 bytes (and refuses a longer name): the name is cut there.
void concord_set_thread_name(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = 0;
    pthread_setname_np(pthread_self(), cut);
}

/// The event loop running on this thread (NULL elsewhere): lets `respond` know, without a
/// data race, whether it was called on the connection's own loop.
static __thread void *concord_loop_marker = NULL;
void concord_set_current_loop(void *loop) { concord_loop_marker = loop; }
void *concord_current_loop(void) { return concord_loop_marker; }
