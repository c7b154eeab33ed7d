/* cli.c — what every command of bin/attnlab parses the same way: numbers, seed lists, thread
 * counts, warnings. Each parser prints one line naming the command, the flag and the value it
 * refused, and returns -1 (the caller exits 2). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

int cli_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out)
{
    char *e; errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || *e || errno || v < lo || v > hi) {
        if (hi == CLI_NOMAX) fprintf(stderr, "attnlab %s: %s expects an integer >= %ld, got '%s'\n", cmd, flag, lo, s);
        else fprintf(stderr, "attnlab %s: %s expects an integer in [%ld, %ld], got '%s'\n", cmd, flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_int32(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out)
{
    long v;
    if (cli_int(cmd, flag, s, lo, hi > 2147483647L ? 2147483647L : hi, &v)) return -1;
    *out = (int)v;
    return 0;
}

int cli_num(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out)
{
    char *e; errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "attnlab %s: %s expects a number in [%g, %g], got '%s'\n", cmd, flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_seeds(const char *cmd, const char *s, long *seeds, int max, int *n)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *e; errno = 0;
        long a = strtol(p, &e, 10), b;
        if (e == p || errno || a < 0) goto bad;
        p = e; b = a;
        if (*p == '-') {
            p++; b = strtol(p, &e, 10);
            if (e == p || errno || b < a) goto bad;
            p = e;
        }
        if (b - a >= (long)max - *n) {
            fprintf(stderr, "attnlab %s: --seeds: more than %d seeds in '%s'\n", cmd, max, s);
            return -1;
        }
        for (long v = a; v <= b; v++) {
            for (int j = 0; j < *n; j++)
                if (seeds[j] == v) { fprintf(stderr, "attnlab %s: --seeds: seed %ld appears twice in '%s'\n", cmd, v, s); return -1; }
            seeds[(*n)++] = v;
        }
        if (*p == ',') p++;
        else if (*p) goto bad;
    }
    if (*n > 0) return 0;
bad:
    fprintf(stderr, "attnlab %s: --seeds expects a list like 1-10 or 1,3,5-7, got '%s'\n", cmd, s);
    return -1;
}

int cli_max_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    return cores * 4 > CLI_MAX_THREADS ? CLI_MAX_THREADS : (int)cores * 4;
}

int cli_threads(const char *cmd, const char *s, int *out)
{
    long v;
    char flag[] = "--threads";
    if (cli_int(cmd, flag, s, 1, cli_max_threads(), &v)) return -1;
    *out = (int)v;
    return 0;
}

int cli_check_env_threads(const char *cmd)
{
    const char *e = getenv("OMP_NUM_THREADS");
    if (!e || !*e) return 0;
    char *end; errno = 0;
    long v = strtol(e, &end, 10);
    /* OMP_NUM_THREADS may be a list ("4,2" for nested levels): only its first level is checked */
    if (end == e || errno || v < 1 || v > cli_max_threads() || (*end && *end != ',')) {
        fprintf(stderr, "attnlab %s: OMP_NUM_THREADS=%s is not a thread count in [1, %d] (cores x 4)\n", cmd, e,
                cli_max_threads());
        return -1;
    }
    return 0;
}

void cli_warn(void *ud, const char *msg)
{
    (void)ud;
    fprintf(stderr, "attnlab: warning: %s\n", msg);
}

void cli_dataset_name(const char *data, char *name, size_t n)
{
    const char *b = data + strlen(data);
    while (b > data && b[-1] == '/') b--;
    const char *e = b;
    while (b > data && b[-1] != '/') b--;
    snprintf(name, n, "%.*s", (int)(e - b), b);
    for (char *q = name; *q; q++) if (*q == ',' || *q == '"' || *q == '\n') *q = '_';
}
