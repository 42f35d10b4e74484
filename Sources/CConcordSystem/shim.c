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
