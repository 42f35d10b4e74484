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

static inline int concord_fcntl_setfl(int fd, int flags) { return fcntl(fd, F_SETFL, flags); }
static inline int concord_fcntl_getfl(int fd) { return fcntl(fd, F_GETFL); }
static inline int concord_errno(void) { return errno; }
