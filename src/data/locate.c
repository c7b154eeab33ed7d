/* locate.c — the one dataset resolver (datadir.h) for image and graph datasets. */
#include "attnlab/datadir.h"
#include "attnlab/graph.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CAND_MAX = 8, CAND_LEN = 4200 };
typedef struct cands { char p[CAND_MAX][CAND_LEN]; int n; } cands;

static int is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

static void cand_add(cands *c, const char *a, const char *b)
{
    if (c->n >= CAND_MAX) return;
    int k = snprintf(c->p[c->n], CAND_LEN, "%s%s%s", a, b ? "/" : "", b ? b : "");
    if (k > 0 && k < CAND_LEN) c->n++;
}

static al_status copy_out(const char *dir, char *out, size_t n, al_error *err)
{
    if (strlen(dir) + 1 > n) return al_seterr(err, "%s: path too long", dir);
    strcpy(out, dir);
    return AL_OK;
}

int al_locate_dirs(const char *env, const char *subdir, const char *installed, char (*dirs)[AL_LOCATE_LEN], int max)
{
    int n = 0;
#define ADD(...) do { if (n < max && snprintf(dirs[n], AL_LOCATE_LEN, __VA_ARGS__) < AL_LOCATE_LEN) n++; } while (0)
    const char *d = env ? getenv(env) : NULL;
    if (d && *d) ADD("%s", d);
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    char *slash = k > 0 ? (self[k] = 0, strrchr(self, '/')) : NULL;
    if (slash) {
        *slash = 0;
        ADD("%s/../%s", self, subdir);
        ADD("%s/../../%s", self, subdir);   /* test binaries live in BUILD/tests/ */
    }
    ADD("./%s", subdir);
    if (installed) ADD("%s", installed);
#undef ADD
    return n;
}

/* The candidates for dataset `name`, in lookup order (see datadir.h). */
static void candidates(const char *name, cands *c)
{
    c->n = 0;
    int fm = !strcmp(name, "fashion-mnist");
    const char *e = fm ? getenv("ATTNLAB_FASHION_MNIST") : NULL;
    if (e && *e) cand_add(c, e, NULL);
    char dirs[6][AL_LOCATE_LEN];
    int nd = al_locate_dirs("ATTNLAB_DATA", "datasets", AL_DATADIR, dirs, 6);
    for (int i = 0; i < nd; i++) cand_add(c, dirs[i], name);
    if (fm) cand_add(c, AL_FASHION_MNIST_DIR, NULL);
}

al_status al_file_locate(const char *env, const char *subdir, const char *installed, const char *name, char *out,
                         size_t n, al_error *err)
{
    char dirs[6][AL_LOCATE_LEN], list[2048] = "";
    int nd = al_locate_dirs(env, subdir, installed, dirs, 6);
    size_t o = 0;
    for (int i = 0; i < nd; i++) {
        char p[AL_LOCATE_LEN + 256];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%.200s", dirs[i], name) >= (int)sizeof p) continue;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) return copy_out(p, out, n, err);
        if (o < sizeof list) o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", dirs[i]);
    }
    char unset[96] = "";
    if (env && !(getenv(env) && *getenv(env))) snprintf(unset, sizeof unset, " ($%s is not set)", env);
    return al_seterr(err, "'%s' not found; looked in %s%s", name, list, unset);
}

al_status al_data_locate(const char *name, const char *explicit_dir, char *out, size_t n, al_error *err)
{
    if (explicit_dir && *explicit_dir) {
        if (!is_dir(explicit_dir)) return al_seterr(err, "%s: no such directory", explicit_dir);
        return copy_out(explicit_dir, out, n, err);
    }
    if (!name || !*name) return al_seterr(err, "empty dataset name");
    cands c;
    candidates(name, &c);
    for (int i = 0; i < c.n; i++)
        if (is_dir(c.p[i])) return copy_out(c.p[i], out, n, err);
    char list[2048] = "";
    size_t o = 0;
    for (int i = 0; i < c.n && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", c.p[i]);
    return al_seterr(err, "dataset '%s' not found; looked in %s%s; pass --data DIR", name, list,
                     getenv("ATTNLAB_DATA") && *getenv("ATTNLAB_DATA") ? "" : " ($ATTNLAB_DATA is not set)");
}

al_status al_data_resolve(const char *name, char *out, size_t n, al_error *err)
{
    if (!name || !*name) return al_seterr(err, "empty dataset name");
    if (strchr(name, '/') || is_dir(name)) return al_data_locate(name, name, out, n, err);
    return al_data_locate(name, NULL, out, n, err);
}

al_status al_graph_resolve(const char *name, const char *exe, char *out, size_t n, al_error *err)
{
    (void)exe;   /* the executable is found through /proc/self/exe */
    if (!name || !*name) return al_seterr(err, "graph: empty dataset name");
    return al_data_resolve(name, out, n, err);
}
