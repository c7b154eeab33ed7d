/* folder.c — the class-folder layout of the image and audio readers: DIR/CLASS/FILE or
 * DIR/{train,test}/CLASS/FILE, listed in name order (folder_impl.h). */
#include "data/folder_impl.h"
#include "attnlab/io.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int al__sl_push(al__strlist *l, const char *s)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **q = realloc(l->s, (size_t)cap * sizeof *q);
        if (!q) return -1;
        l->s = q; l->cap = cap;
    }
    if (!(l->s[l->n] = strdup(s))) return -1;
    l->n++;
    return 0;
}
void al__sl_free(al__strlist *l) { for (int i = 0; i < l->n; i++) free(l->s[i]); free(l->s); memset(l, 0, sizeof *l); }
int al__cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
char *al__path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}
int al__is_dir(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode); }

al_status al__list_dir(const char *dir, al__strlist *out, al_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return al_seterr(err, "%s: cannot open directory: %s", al_path_short(dir), strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (al__sl_push(out, e->d_name)) { closedir(d); al__sl_free(out); return al_seterr(err, "out of memory"); }
    }
    closedir(d);
    if (out->n > 1) qsort(out->s, (size_t)out->n, sizeof *out->s, al__cmp_str);
    return AL_OK;
}

void al__classfolder_free(al__classfolder *cf)
{
    for (int i = 0; i < cf->n; i++) free(cf->f[i].path);
    free(cf->f); free(cf->trdir); free(cf->tedir);
    al__sl_free(&cf->classes);
    memset(cf, 0, sizeof *cf);
}

/* Appends every entry of class directory cdir (class label, split) to cf. */
static al_status list_class(al__classfolder *cf, int *cap, const char *cdir, int label, int split, al_error *err)
{
    al__strlist files = {0};
    if (al__list_dir(cdir, &files, err)) return AL_ERR;
    for (int i = 0; i < files.n; i++) {
        if (cf->n == *cap) {
            int c2 = *cap ? 2 * *cap : 256;
            al__classfile *q = realloc(cf->f, (size_t)c2 * sizeof *q);
            if (!q) { al__sl_free(&files); return al_seterr(err, "out of memory"); }
            cf->f = q; *cap = c2;
        }
        char *p = al__path_join(cdir, files.s[i]);
        if (!p) { al__sl_free(&files); return al_seterr(err, "out of memory"); }
        al__classfile *f = &cf->f[cf->n++];
        f->path = p; f->name = p + strlen(cdir) + 1; f->label = label; f->split = split;
    }
    al__sl_free(&files);
    return AL_OK;
}

/* The test split's class directories: each must be a class of the training split. */
static al_status list_test(al__classfolder *cf, int *cap, void (*skip)(void *, const char *), void *ud, al_error *err)
{
    al__strlist testc = {0};
    if (al__list_dir(cf->tedir, &testc, err)) return AL_ERR;
    al_status st = AL_OK;
    for (int i = 0; i < testc.n && st == AL_OK; i++) {
        char *cd = al__path_join(cf->tedir, testc.s[i]);
        if (!cd) { st = al_seterr(err, "out of memory"); break; }
        char **hit = bsearch(&testc.s[i], cf->classes.s, (size_t)cf->classes.n, sizeof *cf->classes.s, al__cmp_str);
        if (!al__is_dir(cd)) {
            char msg[AL_ERRLEN];
            snprintf(msg, sizeof msg, "%s: not a class directory, skipped", cd);
            if (skip) skip(ud, msg);
        } else if (!hit) st = al_seterr(err, "%s: class '%s' of the test split is not a class of %s", al_path_short(cd), testc.s[i], cf->trdir);
        else st = list_class(cf, cap, cd, (int)(hit - cf->classes.s), 1, err);
        free(cd);
    }
    al__sl_free(&testc);
    return st;
}

al_status al__classfolder_list(const char *dir, const char *noun, void (*skip)(void *ud, const char *msg), void *ud,
                               al__classfolder *cf, al_error *err)
{
    memset(cf, 0, sizeof *cf);
    if (!al__is_dir(dir)) return al_seterr(err, "%s: not a directory", al_path_short(dir));
    cf->trdir = al__path_join(dir, "train"); cf->tedir = al__path_join(dir, "test");
    if (!cf->trdir || !cf->tedir) { al__classfolder_free(cf); return al_seterr(err, "out of memory"); }
    int tr = al__is_dir(cf->trdir), te = al__is_dir(cf->tedir);
    if (tr != te) {   /* half of the split layout: not classes named train/test */
        al_seterr(err, "%s: has %s/ but no %s/ (expected DIR/train/CLASS/%s and DIR/test/CLASS/%s, or DIR/CLASS/%s "
                  "to hold out a test fraction)", al_path_short(dir), tr ? "train" : "test", tr ? "test" : "train", noun, noun, noun);
        al__classfolder_free(cf); return AL_ERR;
    }
    cf->split_mode = tr;
    cf->cbase = tr ? cf->trdir : dir;
    al__strlist top = {0};
    int cap = 0;
    al_status st = al__list_dir(cf->cbase, &top, err);
    for (int i = 0; i < top.n && st == AL_OK; i++) {
        char *p = al__path_join(cf->cbase, top.s[i]);
        if (!p) { st = al_seterr(err, "out of memory"); break; }
        if (al__is_dir(p)) { if (al__sl_push(&cf->classes, top.s[i])) st = al_seterr(err, "out of memory"); }
        else if (!(!tr && (!strcmp(top.s[i], "train") || !strcmp(top.s[i], "test"))) && skip) {
            char msg[AL_ERRLEN];
            snprintf(msg, sizeof msg, "%s: not a class directory, skipped", p);
            skip(ud, msg);
        }
        free(p);
    }
    al__sl_free(&top);
    if (st == AL_OK && cf->classes.n == 0)
        st = al_seterr(err, "%s: no class directories (expected %s/CLASS/%s files)", al_path_short(cf->cbase), cf->cbase, noun);
    for (int k = 0; k < cf->classes.n && st == AL_OK; k++) {
        char *cd = al__path_join(cf->cbase, cf->classes.s[k]);
        if (!cd) { st = al_seterr(err, "out of memory"); break; }
        st = list_class(cf, &cap, cd, k, 0, err);
        free(cd);
    }
    if (st == AL_OK && tr) st = list_test(cf, &cap, skip, ud, err);
    if (st != AL_OK) al__classfolder_free(cf);
    return st;
}

void al__skipf(al__skips *s, const char *fmt, ...)
{
    s->n++;
    char msg[1024];
    va_list ap; va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!s->first[0]) { size_t k = strlen(msg); if (k >= sizeof s->first) k = sizeof s->first - 1; memcpy(s->first, msg, k); s->first[k] = 0; }
    if (s->warn) s->warn(s->ud, msg);
}
void al__skip_entry(void *skips, const char *msg) { al__skipf(skips, "%s", msg); }

al_status al__none_usable(const al__skips *s, const char *dir, const char *what, al_error *err)
{
    char db[120];
    if (s->n) return al_seterr(err, "no readable %s in any class directory of %s (%d file%s skipped, the first: %s)", what,
                               al_path_abbrev(dir, db, sizeof db), s->n, s->n == 1 ? "" : "s", s->first);
    return al_seterr(err, "%s: no readable %s in any class directory", al_path_short(dir), what);
}

int al__hold_out_pick(al_rng *rng, int *members, int m, double frac, int min_test)
{
    int nt = (int)floor(frac * m + 0.5);
    if (nt < min_test && m > min_test) nt = min_test;
    if (nt >= m) nt = m - 1;
    al_rng_shuffle(rng, members, m);
    return nt;
}

int al__name_index(const char *const *names, int n, al__strlist *uniq, int *idx)
{
    for (int i = 0; i < n; i++) if (names[i] && al__sl_push(uniq, names[i])) return -1;
    if (uniq->n > 1) qsort(uniq->s, (size_t)uniq->n, sizeof *uniq->s, al__cmp_str);
    int u = uniq->n ? 1 : 0;
    for (int i = 1; i < uniq->n; i++) {
        if (strcmp(uniq->s[i], uniq->s[u - 1])) uniq->s[u++] = uniq->s[i];
        else free(uniq->s[i]);
    }
    uniq->n = u;
    for (int i = 0; i < n; i++) {
        char **hit = names[i] ? bsearch(&names[i], uniq->s, (size_t)uniq->n, sizeof *uniq->s, al__cmp_str) : NULL;
        idx[i] = hit ? (int)(hit - uniq->s) : -1;
    }
    return 0;
}
