/* folder_impl.h — the class-folder layout that the image and audio readers share (internal):
 * DIR/CLASS/FILE, or DIR/train/CLASS/FILE + DIR/test/CLASS/FILE; sorted name lists; path joins. */
#ifndef ATTNLAB_DATA_FOLDER_IMPL_H
#define ATTNLAB_DATA_FOLDER_IMPL_H
#include "attnlab/tensor.h"
#include "attnlab/datadir.h"

/* A growable list of malloc'd strings. */
typedef struct al__strlist { char **s; int n, cap; } al__strlist;
int   al__sl_push(al__strlist *l, const char *s);     /* 0, or -1 when out of memory */
void  al__sl_free(al__strlist *l);
int   al__cmp_str(const void *a, const void *b);      /* qsort/bsearch on char * */
char *al__path_join(const char *a, const char *b);    /* "a/b", malloc'd; NULL when out of memory */
int   al__is_dir(const char *p);
/* Non-hidden entries of dir, sorted by name (byte order, locale-independent). */
al_status al__list_dir(const char *dir, al__strlist *out, al_error *err);

/* One file of a class folder: its path (malloc'd), its name inside the class directory, its class
 * (index into the sorted class names) and split (0 train, 1 test: only with train/ + test/). */
typedef struct al__classfile { char *path; const char *name; int label, split; } al__classfile;
typedef struct al__classfolder {
    al__strlist classes;      /* the class directories' names, sorted (of DIR, or of DIR/train) */
    al__classfile *f; int n;  /* every non-hidden entry of every class directory, class-major, by name */
    int split_mode;           /* 1: DIR has train/ and test/ */
    const char *cbase;        /* DIR (the caller's string) or trdir */
    char *trdir, *tedir;
} al__classfolder;
/* Lists dir as a class folder. `noun` names the files in messages ("IMAGE": "expected DIR/CLASS/IMAGE").
 * An entry that is not a directory where a class should be is passed to skip (a message naming it)
 * and left out. Errors: dir is not a directory, train/ without test/ (or the reverse), no class
 * directories, a test class that is not a training class. */
al_status al__classfolder_list(const char *dir, const char *noun, void (*skip)(void *ud, const char *msg), void *ud,
                               al__classfolder *cf, al_error *err);
void al__classfolder_free(al__classfolder *cf);

/* The held-out part of m members (a class's files, or speakers): shuffles members[0..m) with rng and
 * returns how many of the first ones go to the test split, round(frac · m) but at most m − 1 (and at
 * least min_test when m > min_test). */
int al__hold_out_pick(al_rng *rng, int *members, int m, double frac, int min_test);

/* The speaker part of a file name (audio.h's rule: SPEAKER_REST) into out (n bytes); 0 if it has none
 * (audio.c). */
int al__speaker_of(const char *name, char *out, size_t n);
/* Indices of names[0..n) (NULL entries: none) in the sorted list of the distinct ones, appended to uniq
 * (which must start empty): idx[i] in [0, uniq->n), or -1 for a NULL entry. 0, or -1 out of memory. */
int al__name_index(const char *const *names, int n, al__strlist *uniq, int *idx);

/* The files a folder reader skipped: each reported through warn (may be NULL) and counted; the first
 * message kept for the error that follows when nothing was usable. */
typedef struct al__skips { al_warn_fn warn; void *ud; int n; char first[AL_ERRLEN]; } al__skips;
void al__skipf(al__skips *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void al__skip_entry(void *skips, const char *msg);   /* al__skipf(skips, "%s", msg): for al__classfolder_list */
/* The error of a folder with no usable file: "no readable WHAT in any class directory of DIR (...)". */
al_status al__none_usable(const al__skips *s, const char *dir, const char *what, al_error *err);
#endif
