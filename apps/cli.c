/* cli.c — what every command of bin/attnlab parses the same way: numbers, seed lists, thread
 * counts, the memory budget, output files checked before any work, warnings. Each parser prints one
 * line naming the command, the flag and the value it refused, and returns -1 (the caller exits 2). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/io.h"

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

void cli_seed_path(char *out, size_t n, const char *path, long seed, int several)
{
    if (!several) { snprintf(out, n, "%s", path); return; }
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash) || dot == path) snprintf(out, n, "%s-seed%ld", path, seed);
    else snprintf(out, n, "%.*s-seed%ld%s", (int)(dot - path), path, seed, dot);
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

int cli_max_memory(const char *cmd, const char *s)
{
    uint64_t bytes;
    int rc = al_mem_parse(s, &bytes);
    if (rc < 0) {
        fprintf(stderr, "attnlab %s: --max-memory expects a size such as 512M or 2G (bytes; K, M, G, T = powers of 1024), "
                "got '%s'\n", cmd, s);
        return -1;
    }
    if (rc > 0) { fprintf(stderr, "attnlab %s: --max-memory %s does not fit in 64 bits\n", cmd, s); return -1; }
    al_mem_budget_set(bytes);
    return 0;
}

int cli_output(const char *cmd, const char *flag, const char *path, int csv)
{
    if (!path) return 0;
    al_error err = {{0}};
    if ((csv ? al_csv_check(path, &err) : al_output_check(path, &err)) == AL_OK) return 0;
    fprintf(stderr, "attnlab %s: %s %s\n", cmd, flag, err.msg);
    return -1;
}

int cli_output_dir(const char *cmd, const char *flag, const char *dir)
{
    char p[4096];
    struct stat sb;
    if (!*dir || snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        fprintf(stderr, "attnlab %s: %s '%s': empty or too long\n", cmd, flag, dir);
        return -1;
    }
    if (stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode)) { fprintf(stderr, "attnlab %s: %s %s: not a directory\n", cmd, flag, dir); return -1; }
    /* the nearest existing ancestor (the directory itself if it exists) must take a new entry */
    while (stat(p, &sb) != 0) {
        char *slash = strrchr(p, '/');
        while (slash && slash > p && slash[1] == 0) { *slash = 0; slash = strrchr(p, '/'); }   /* "a/b/" -> "a/b" */
        if (!slash) { snprintf(p, sizeof p, "."); break; }
        if (slash == p) slash[1] = 0; else *slash = 0;
    }
    char probe[4096 + 48];
    snprintf(probe, sizeof probe, "%s/.attnlab-probe.%ld", p, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) {
        fprintf(stderr, "attnlab %s: %s %s: cannot create entries in directory '%s': %s\n", cmd, flag, dir, p, strerror(errno));
        return -1;
    }
    if (fd >= 0) { close(fd); unlink(probe); }
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
