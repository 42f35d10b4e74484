#define _GNU_SOURCE
#include <sys/socket.h>
#include "CConcordSystem.h"

int concord_accept4(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#include <pthread.h>
void concord_set_thread_name(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

/// The event loop running on this thread (NULL elsewhere): lets `respond` know, without a
/// data race, whether it was called on the connection's own loop.
static __thread void *concord_loop_marker = NULL;
void concord_set_current_loop(void *loop) { concord_loop_marker = loop; }
void *concord_current_loop(void) { return concord_loop_marker; }
