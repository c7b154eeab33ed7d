/* cli.c — what every command of bin/attnlab parses the same way: numbers, seed lists, thread
 * counts, the memory budget, output files checked before any work, warnings. Each parser prints one
 * line naming the command, the flag and the value it refused, and returns -1 (the caller exits 2). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
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

/* ---- help texts ---- */
/* The column where a help line's text starts: an option line's ("  --flag VALUE  text") description, a
 * synopsis line's ("usage: attnlab CMD ...", "       attnlab CMD ...") first option, else the line's
 * first word. */
static int help_indent(const char *l, int len)
{
    int i = 0;
    while (i < len && l[i] == ' ') i++;
    const int lead = i;
    if (i < len && l[i] != ' ') {   /* "--flag VALUE  text", "name  text" */
        for (int j = i; j + 2 < len && j < 48; j++)
            if (l[j] == ' ' && l[j + 1] == ' ' && l[j + 2] != ' ') {
                while (j < len && l[j] == ' ') j++;
                return j;
            }
    }
    if (len - i > 8 && (!strncmp(l + i, "usage: ", 7) || !strncmp(l + i, "attnlab ", 8))) {
        const char *p = memchr(l + i, ' ', (size_t)(len - i));   /* after "attnlab CMD " */
        if (p && !strncmp(l + i, "usage: ", 7)) p = memchr(p + 1, ' ', (size_t)(len - (p + 1 - l)));
        if (p) p = memchr(p + 1, ' ', (size_t)(len - (p + 1 - l)));
        if (p && p - l < 48) return (int)(p + 1 - l);
    }
    return lead;
}

/* Words of text[0..len) filled into lines of CLI_HELP_WIDTH columns, continuing the current line at
 * column *col (*fresh: it has no word yet), new lines starting at column indent. */
static void help_fill(FILE *f, const char *text, int len, int *col, int *fresh, int indent)
{
    for (int i = 0; i < len;) {
        while (i < len && text[i] == ' ') i++;
        int j = i;
        while (j < len && text[j] != ' ') j++;
        if (j == i) break;
        if (!*fresh && *col + 1 + (j - i) > CLI_HELP_WIDTH) { fprintf(f, "\n%*s", indent, ""); *col = indent; *fresh = 1; }
        else if (!*fresh) { fputc(' ', f); ++*col; }
        const int w = j - i;
        if (*col + w > CLI_HELP_WIDTH) {   /* a word longer than a line (a column list): break after a comma */
            int k = CLI_HELP_WIDTH - *col;
            while (k > 0 && text[i + k - 1] != ',') k--;
            if (k > 0) { fprintf(f, "%.*s\n%*s", k, text + i, indent, ""); *col = indent; *fresh = 1; i += k; continue; }
        }
        fprintf(f, "%.*s", w, text + i);
        *col += w; *fresh = 0;
        i = j;
    }
}

/* Leading spaces of the line at l (up to its newline), and its length in *len; -1 for a blank line. */
static int help_lead(const char *l, int *len)
{
    const char *e = strchr(l, '\n');
    *len = e ? (int)(e - l) : (int)strlen(l);
    int sp = 0;
    while (sp < *len && l[sp] == ' ') sp++;
    return sp == *len ? -1 : sp;
}

/* Does a line's text start an item of its own: "name: ..." or "name  text"? */
static int help_item(const char *t, int len)
{
    int w = 0;
    while (w < len && t[w] != ' ') w++;
    if (w > 0 && t[w - 1] == ':') return 1;
    for (int j = 0; j + 1 < len; j++) if (t[j] == ' ' && t[j + 1] == ' ') return 1;
    return 0;
}

void cli_usage(FILE *f, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    for (const char *l = text; *l;) {
        int len;
        const int lead = help_lead(l, &len);
        const char *next = l + len + (l[len] == '\n');
        if (len <= CLI_HELP_WIDTH) { fprintf(f, "%.*s%s", len, l, l[len] == '\n' ? "\n" : ""); l = next; continue; }
        int indent = help_indent(l, len), nlen;
        const int nlead = *next ? help_lead(next, &nlen) : -1;
        int start = indent;                                 /* where the refilled text begins */
        if (indent == lead && nlead > lead && next[nlead] != '-') { start = lead; indent = nlead; }   /* a hanging indent */
        int col = start, fresh = 1;
        fprintf(f, "%.*s", start, l);
        help_fill(f, l + start, len - start, &col, &fresh, indent);
        int ended = l[len] == '\n';
        /* the lines that go on under this one's text (that indent, not an option, an item "name: ..." or a
         * table row "name  text") join its paragraph */
        while (ended && *next) {
            const int sp = help_lead(next, &nlen);
            if (sp != indent || next[sp] == '-' || help_item(next + sp, nlen - sp)) break;
            help_fill(f, next + sp, nlen - sp, &col, &fresh, indent);
            ended = next[nlen] == '\n';
            next += nlen + ended;
        }
        fputs(ended ? "\n" : "", f);
        l = next;
    }
    free(text);
}
