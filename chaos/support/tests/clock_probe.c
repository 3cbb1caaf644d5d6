/* Test helper for the clock shim: prints what each interposed function and one clock that must
 * pass through return, as integers on one line:
 *   <CLOCK_REALTIME ns> <CLOCK_REALTIME_COARSE ns> <gettimeofday us> <time s> <CLOCK_MONOTONIC ns>
 */
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static long long ns_of(const struct timespec* ts) {
  return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int main(void) {
  struct timespec real, coarse, mono;
  struct timeval tv;
  if (clock_gettime(CLOCK_REALTIME, &real) != 0 ||
      clock_gettime(CLOCK_REALTIME_COARSE, &coarse) != 0 || gettimeofday(&tv, NULL) != 0 ||
      clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
    return 1;
  time_t seconds = time(NULL);
  printf("%lld %lld %lld %lld %lld\n", ns_of(&real), ns_of(&coarse),
         (long long)tv.tv_sec * 1000000LL + tv.tv_usec, (long long)seconds, ns_of(&mono));
  return 0;
}
