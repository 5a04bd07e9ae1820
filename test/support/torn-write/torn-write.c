/*
 * A write torn by SIGKILL, made to happen on purpose (test/support/torn-write.ts): Linux checks for a fatal signal
 * between the pages of a write, so a process killed while it writes a block leaves the first pages of the new
 * block on top of the old one. Preloaded into a process, this library cuts the first write of at least 8 KiB at
 * byte offset TORN_WRITE_OFFSET of the file TORN_WRITE_PATH to its first TORN_WRITE_BYTES bytes, and the process
 * then kills itself with SIGKILL. Every other write goes through unchanged. With TORN_UNLINK_PATH set instead, the
 * process kills itself when it is about to remove that file. With TORN_FULL_PATH and TORN_FULL_WHILE set, every
 * write to the file TORN_FULL_PATH fails with ENOSPC while the file TORN_FULL_WHILE exists: a disk that fills up
 * and is freed again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

static int is_path(int fd, const char *path) {
  char link[64];
  char target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t length = readlink(link, target, sizeof target - 1);
  if (length < 0) return 0;
  target[length] = '\0';
  return strcmp(target, path) == 0;
}

static int writes_to_target(int fd, size_t count, off_t offset) {
  const char *path = getenv("TORN_WRITE_PATH");
  const char *at = getenv("TORN_WRITE_OFFSET");
  if (path == NULL || at == NULL || count < 8192 || offset != (off_t)atoll(at)) return 0;
  return is_path(fd, path);
}

static int disk_full_for(int fd) {
  const char *path = getenv("TORN_FULL_PATH");
  const char *flag = getenv("TORN_FULL_WHILE");
  return path != NULL && flag != NULL && access(flag, F_OK) == 0 && is_path(fd, path);
}

static ssize_t maybe_torn(int fd, const void *buf, size_t count, off_t offset, pwrite_fn real) {
  if (disk_full_for(fd)) {
    errno = ENOSPC;
    return -1;
  }
  if (writes_to_target(fd, count, offset)) {
    const char *bytes = getenv("TORN_WRITE_BYTES");
    size_t kept = bytes == NULL ? 4096 : (size_t)atoll(bytes);
    real(fd, buf, kept < count ? kept : count, offset);
    kill(getpid(), SIGKILL);
  }
  return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
  static pwrite_fn real;
  if (real == NULL) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
  return maybe_torn(fd, buf, count, offset, real);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  static pwrite_fn real;
  if (real == NULL) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
  return maybe_torn(fd, buf, count, offset, real);
}

static void die_before_removing(const char *path) {
  const char *target = getenv("TORN_UNLINK_PATH");
  char absolute[PATH_MAX];
  if (target != NULL && realpath(path, absolute) != NULL && strcmp(absolute, target) == 0) kill(getpid(), SIGKILL);
}

int unlink(const char *path) {
  static int (*real)(const char *);
  if (real == NULL) real = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
  die_before_removing(path);
  return real(path);
}

/* DuckDB removes files with remove(3), which reaches the system call without calling unlink(3). */
int remove(const char *path) {
  static int (*real)(const char *);
  if (real == NULL) real = (int (*)(const char *))dlsym(RTLD_NEXT, "remove");
  die_before_removing(path);
  return real(path);
}
