/* membudget.c — the library's memory budget and overflow-checked size arithmetic. Every loader
 * checks the memory a file asks for (declared counts × sizes) against al_mem_budget() BEFORE it
 * allocates, so a forged or corrupt header is refused with a message instead of exhausting memory.
 *
 * The default budget is half of the physical memory (sysconf), or $ATTNLAB_MEM_BUDGET (bytes, with
 * an optional K, M, G or T suffix, powers of 1024: al_mem_parse) when that is set; al_mem_budget_set
 * (the CLI's --max-memory) overrides both. */
#include "attnlab/io.h"
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic uint64_t budget_bytes;   /* 0: not set yet (take the default) */

int al_mem_parse(const char *s, uint64_t *bytes)
{
    *bytes = 0;
    if (!s || *s < '0' || *s > '9') return -1;   /* strtoull would take "-1" and " 5" */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I') && (end[1] == 'B' || end[1] == 'b')) end++;   /* "GiB", as messages print it */
    if (*end == 'B' || *end == 'b') end++;
    if (*end || v == 0) return -1;
    if (errno == ERANGE || (shift && v > (UINT64_MAX >> shift))) { *bytes = UINT64_MAX; return 1; }
    *bytes = (uint64_t)v << shift;
    return 0;
}

/* ATTNLAB_MEM_BUDGET parsed (a size too large for 64 bits: no limit), or 0 if unset or malformed. */
static uint64_t env_budget(void)
{
    uint64_t v;
    return al_mem_parse(getenv("ATTNLAB_MEM_BUDGET"), &v) >= 0 ? v : 0;
}

uint64_t al_mem_budget_default(void)
{
    uint64_t e = env_budget();
    if (e) return e;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0) return al_size_mul((uint64_t)pages, (uint64_t)psize) / 2;
    return (uint64_t)8 << 30;   /* unknown: 8 GiB */
}

uint64_t al_mem_budget(void)
{
    uint64_t b = atomic_load(&budget_bytes);
    if (b) return b;
    b = al_mem_budget_default();
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&budget_bytes, &zero, b);
    return atomic_load(&budget_bytes);
}

void al_mem_budget_set(uint64_t bytes) { atomic_store(&budget_bytes, bytes ? bytes : al_mem_budget_default()); }

uint64_t al_size_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t al_size_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

const char *al_bytes_str(uint64_t n, char buf[32])
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n == UINT64_MAX) { snprintf(buf, 32, "more than 16 EiB"); return buf; }
    double v = (double)n; int u = 0;
    while (v >= 1024.0 && u < 6) { v /= 1024.0; u++; }
    if (u == 0) snprintf(buf, 32, "%llu B", (unsigned long long)n);
    else snprintf(buf, 32, "%.1f %s", v, unit[u]);
    return buf;
}

al_status al_mem_check(uint64_t bytes, al_error *err, const char *fmt, ...)
{
    uint64_t lim = al_mem_budget();
    if (bytes <= lim) return AL_OK;
    if (err && !err->msg[0]) {
        char what[AL_ERRLEN], why[200], a[32], b[32], shortw[AL_ERRLEN];
        va_list ap; va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        int k = snprintf(why, sizeof why, "needs %s, more than the memory budget of %s (raise it with --max-memory or ATTNLAB_MEM_BUDGET)",
                         al_bytes_str(bytes, a), al_bytes_str(lim, b));
        /* a long `what` (a path) is shortened in its middle so that the reason is never cut */
        size_t room = AL_ERRLEN - (size_t)(k > 0 ? k : 0) - 3;
        al_seterr(err, "%s: %s", al_path_abbrev(what, shortw, room < sizeof shortw ? room : sizeof shortw), why);
    }
    return AL_ERR;
}

const char *al_path_abbrev(const char *path, char *buf, size_t n)
{
    size_t L = path ? strlen(path) : 0;
    if (!path) { snprintf(buf, n, "(null)"); return buf; }
    if (n < 16 || L < n) { snprintf(buf, n, "%s", path); return buf; }
    size_t keep = n - 4;                 /* room for "..." and the NUL */
    size_t head = keep / 3, tail = keep - head;
    memcpy(buf, path, head);
    memcpy(buf + head, "...", 3);
    memcpy(buf + head + 3, path + L - tail, tail);
    buf[head + 3 + tail] = 0;
    return buf;
}

const char *al_path_short(const char *path)
{
    static _Thread_local char buf[4][AL_PATH_SHORT];
    static _Thread_local int k;
    k = (k + 1) % 4;
    return al_path_abbrev(path, buf[k], sizeof buf[k]);
}
