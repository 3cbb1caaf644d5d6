/* An LD_PRELOAD shim that skews the wall clock of one process (a redis-server under test).
 *
 * It interposes clock_gettime (CLOCK_REALTIME and CLOCK_REALTIME_COARSE only; every other clock
 * passes through), gettimeofday and time. Real time comes from a raw syscall, the control file
 * is read with raw open/read/close syscalls, and nothing here calls malloc or dlsym: libfaketime
 * crashes Debian's redis-server through jemalloc recursion, this must not.
 *
 * The file named by REDLOCK_CLOCK_SHIM holds "<offset_ms> <rate> <base_ns>": shimmed time at
 * real time t (CLOCK_REALTIME, ns) is  t + offset + (rate - 1) * (t - base). So at the base
 * point the clock reads real + offset and from there on advances `rate` times as fast. The
 * controller (ClockSkew) moves the base to the moment of each change, which keeps the clock
 * continuous when only the rate changes. offset_ms may have a fraction; without base_ns the
 * moment this process first read the line is the base. The file is re-read at most every 2 ms
 * of real time, by whichever thread asks for the time first; a missing or malformed file keeps
 * the last good settings (initially: no skew).
 *
 * Runs on any thread of the host process, also in signal handlers: no locks that can block,
 * only atomics; a reader never waits on a writer for more than a bounded number of tries. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

enum {
  kPathMax = 4096,
  kFileMax = 256,
};
static const int64_t kNsPerSec = 1000000000;
static const int64_t kRateOne = 1000000000; /* rates are kept in units of 1e-9 */
static const int64_t kCheckIntervalNs = 2000000;

/* The control file's path, copied at load time: redis-server later moves its environment to
 * make room for its process title, so a pointer from getenv() would not stay valid. */
static char g_path[kPathMax];
static int g_have_path;

/* The settings, published with a sequence counter (odd while a writer changes them). */
static unsigned g_seq;
static int64_t g_offset_ns;
static int64_t g_base_ns;
static int64_t g_rate = 1000000000;

static int64_t g_last_check_ns; /* real time of the last look at the file; 0: never */
static int g_reloading;         /* 1 while one thread reads the file */
static char g_last_text[kFileMax];
static long g_last_len = -1;

__attribute__((constructor)) static void shim_init(void) {
  const char* p = getenv("REDLOCK_CLOCK_SHIM");
  if (p == NULL) return;
  size_t n = strlen(p);
  if (n == 0 || n >= sizeof g_path) return;
  memcpy(g_path, p, n + 1);
  __atomic_store_n(&g_have_path, 1, __ATOMIC_RELEASE);
}

/* Parses an optionally signed decimal number, scaled by 10^scale (extra digits are dropped).
 * Returns the position after it, or NULL when there is no number. */
static const char* parse_fixed(const char* p, const char* end, int scale, int64_t* out) {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  int negative = 0;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  int64_t value = 0;
  int digits = 0, frac = -1;
  for (; p < end; ++p) {
    if (*p == '.' && frac < 0) {
      frac = 0;
      continue;
    }
    if (*p < '0' || *p > '9') break;
    ++digits;
    if (frac >= 0) {
      if (frac >= scale) continue;
      ++frac;
    }
    if (value > (INT64_MAX - 9) / 10) return NULL; /* far beyond any sensible setting */
    value = value * 10 + (*p - '0');
  }
  if (digits == 0) return NULL;
  for (int i = frac < 0 ? 0 : frac; i < scale; ++i) {
    if (value > INT64_MAX / 10) return NULL;
    value *= 10;
  }
  *out = negative ? -value : value;
  return p;
}

static void publish(int64_t offset_ns, int64_t rate, int64_t base_ns) {
  unsigned seq = __atomic_load_n(&g_seq, __ATOMIC_RELAXED);
  __atomic_store_n(&g_seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&g_offset_ns, offset_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&g_rate, rate, __ATOMIC_RELAXED);
  __atomic_store_n(&g_base_ns, base_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&g_seq, seq + 2, __ATOMIC_RELEASE);
}

/* Reads and applies the control file; called by one thread at a time. */
static void reload(int64_t real_ns) {
  char text[kFileMax];
  long fd = syscall(SYS_openat, AT_FDCWD, g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  long len = syscall(SYS_read, fd, text, sizeof text);
  syscall(SYS_close, fd);
  if (len <= 0 || len >= (long)sizeof text) return;
  if (len == g_last_len && memcmp(text, g_last_text, (size_t)len) == 0) return;
  const char* end = text + len;
  int64_t offset_ns = 0, rate = 0, base_ns = real_ns;
  const char* p = parse_fixed(text, end, 6, &offset_ns);
  if (p == NULL || (p = parse_fixed(p, end, 9, &rate)) == NULL || rate < 0) return;
  const char* after_base = parse_fixed(p, end, 0, &base_ns);
  if (after_base == NULL) base_ns = real_ns;
  memcpy(g_last_text, text, (size_t)len);
  g_last_len = len;
  publish(offset_ns, rate, base_ns);
}

static void maybe_reload(int64_t real_ns) {
  if (!__atomic_load_n(&g_have_path, __ATOMIC_ACQUIRE)) return;
  int64_t last = __atomic_load_n(&g_last_check_ns, __ATOMIC_RELAXED);
  if (last != 0 && real_ns >= last && real_ns - last < kCheckIntervalNs) return;
  if (__atomic_exchange_n(&g_reloading, 1, __ATOMIC_ACQUIRE)) return; /* another thread reads */
  __atomic_store_n(&g_last_check_ns, real_ns, __ATOMIC_RELAXED);
  int saved_errno = errno;
  reload(real_ns);
  errno = saved_errno;
  __atomic_store_n(&g_reloading, 0, __ATOMIC_RELEASE);
}

static int64_t shimmed_ns(int64_t real_ns) {
  maybe_reload(real_ns);
  int64_t offset_ns = 0, base_ns = 0, rate = kRateOne;
  for (int tries = 0; tries < 1000; ++tries) {
    unsigned before = __atomic_load_n(&g_seq, __ATOMIC_ACQUIRE);
    offset_ns = __atomic_load_n(&g_offset_ns, __ATOMIC_RELAXED);
    rate = __atomic_load_n(&g_rate, __ATOMIC_RELAXED);
    base_ns = __atomic_load_n(&g_base_ns, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((before & 1u) == 0 && before == __atomic_load_n(&g_seq, __ATOMIC_RELAXED)) break;
  }
  double drift = (double)(real_ns - base_ns) * ((double)(rate - kRateOne) / (double)kRateOne);
  return real_ns + offset_ns + (int64_t)drift;
}

static void to_timespec(int64_t ns, struct timespec* ts) {
  int64_t sec = ns / kNsPerSec, rest = ns % kNsPerSec;
  if (rest < 0) {
    rest += kNsPerSec;
    --sec;
  }
  ts->tv_sec = (time_t)sec;
  ts->tv_nsec = (long)rest;
}

/* Shimmed CLOCK_REALTIME (or its coarse variant); false when the syscall failed. */
static int shimmed_realtime(clockid_t clock, struct timespec* ts) {
  if (syscall(SYS_clock_gettime, clock, ts) != 0) return 0;
  to_timespec(shimmed_ns((int64_t)ts->tv_sec * kNsPerSec + ts->tv_nsec), ts);
  return 1;
}

SHIM_EXPORT int clock_gettime(clockid_t clock, struct timespec* ts) {
  if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)
    return shimmed_realtime(clock, ts) ? 0 : -1;
  return syscall(SYS_clock_gettime, clock, ts) == 0 ? 0 : -1;
}

SHIM_EXPORT int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  struct timespec ts;
  if (!shimmed_realtime(CLOCK_REALTIME, &ts)) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
  if (tz != NULL) memset(tz, 0, 2 * sizeof(int)); /* struct timezone: obsolete, all zero */
  return 0;
}

SHIM_EXPORT time_t time(time_t* out) {
  struct timespec ts;
  if (!shimmed_realtime(CLOCK_REALTIME, &ts)) return (time_t)-1;
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
