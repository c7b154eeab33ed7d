/* fuzz_common.h — helpers shared by the libFuzzer harnesses: a per-input CPU-time limit, a private
 * temp directory per process, writing an input (raw or gzip) to a file, splitting one input into parts
 * at a separator. */
#ifndef ATTNLAB_FUZZ_COMMON_H
#define ATTNLAB_FUZZ_COMMON_H
#include "attnlab/io.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/time.h>
#include <zlib.h>

/* Per-input CPU-time limit. libFuzzer's -timeout is wall-clock (SIGALRM), and a paused virtual
 * machine counted as input time (80-120-s false timeouts, tests/fuzz/README.md); CPU time does not
 * run while the machine is paused. Every harness calls fz_cpu_guard() first: an input that uses more
 * than FZ_CPU_SECONDS of CPU time aborts with a message, which libFuzzer reports as a crash and
 * saves. run.sh keeps a generous wall-clock -timeout for inputs that block without using CPU. */
#define FZ_CPU_SECONDS 10
static void fz_cpu_over(int sig)
{
    (void)sig;
    static const char m[] = "\nfuzz: one input used more than 10 s of CPU time (a hang or quadratic loop)\n";
    if (write(2, m, sizeof m - 1) < 0) { /* nothing more to do */ }
    abort();
}
static void fz_cpu_guard(void)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = fz_cpu_over;
        sigaction(SIGPROF, &sa, NULL);
        installed = 1;
    }
    struct itimerval t = {{0, 0}, {FZ_CPU_SECONDS, 0}};   /* one shot, re-armed for every input */
    setitimer(ITIMER_PROF, &t, NULL);
}

/* Parts of one input are separated by this line; seeds are easy to write by hand. */
#define FZ_SEP "\n--8<--\n"
#define FZ_SEP_LEN 7

static const char *fz_dir(void)
{
    static char dir[64];
    if (!dir[0]) {
        /* in memory (/dev/shm) when there is one: a disk stalled by other jobs once held an fclose of
         * the harness past libFuzzer's 10-s timeout (fuzz_image, a false timeout) */
        snprintf(dir, sizeof dir, "/dev/shm/attnlab-fuzz-XXXXXX");
        if (!mkdtemp(dir)) {
            snprintf(dir, sizeof dir, "/tmp/attnlab-fuzz-XXXXXX");
            if (!mkdtemp(dir)) abort();
        }
        /* a budget that keeps every loader's allocations far below libFuzzer's RSS limit */
        al_mem_budget_set((uint64_t)256 << 20);
    }
    return dir;
}
static const char *fz_path(const char *name)
{
    static char b[8][256]; static int k; k = (k + 1) % 8;
    snprintf(b[k], sizeof b[k], "%s/%s", fz_dir(), name);
    return b[k];
}
static void fz_write(const char *path, const uint8_t *d, size_t n, int gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb1");
        if (!f) abort();
        if (n) gzwrite(f, d, (unsigned)n);
        gzclose(f);
        return;
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n) fwrite(d, 1, n, f);
    fclose(f);
}
/* Splits d[0..n) at FZ_SEP into at most max parts; returns the count (>= 1). */
static int fz_split(const uint8_t *d, size_t n, const uint8_t **part, size_t *len, int max)
{
    int k = 0;
    const uint8_t *p = d, *e = d + n;
    while (k < max - 1) {
        const uint8_t *s = memmem(p, (size_t)(e - p), FZ_SEP, FZ_SEP_LEN);
        if (!s) break;
        part[k] = p; len[k] = (size_t)(s - p); k++;
        p = s + FZ_SEP_LEN;
    }
    part[k] = p; len[k] = (size_t)(e - p); k++;
    return k;
}
#endif
