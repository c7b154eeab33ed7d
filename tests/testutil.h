/* testutil.h — shared helpers for the cmocka tests: random data, comparisons, gradient checks. */
#ifndef ATTNLAB_TESTUTIL_H
#define ATTNLAB_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "attnlab/tensor.h"
#include "attnlab/dist.h"

/* Fill x[n] with uniform values in [lo, hi) from a seeded stream. */
void   tu_fill(float *x, int64_t n, uint64_t seed, float lo, float hi);
float *tu_alloc_rand(int64_t n, uint64_t seed, float lo, float hi);   /* caller frees */
/* max_i |a_i - b_i| / (max_i |b_i| + 1e-12): scale-aware maximum error. */
double tu_max_rel_err(const float *a, const float *b, int64_t n);
double tu_max_abs_err(const float *a, const float *b, int64_t n);

/* An input of a gradient check: data is owned by the caller; check = compare its gradient. */
typedef struct tu_input { int ndim; int shape[AL_MAXDIM]; float *data; int check; } tu_input;
/* The function under test: builds its output from the wrapped inputs t[0..n). */
typedef al_tensor *(*tu_fn)(al_ctx *c, al_tensor **t, void *ud);
/* Central-difference gradient check of L = Σ r ⊙ fn(inputs) for a fixed random r (loss in double).
 * The dropout RNG is restored before every evaluation, so dropout masks are identical.
 * Returns the worst tu_max_rel_err over checked inputs (analytic vs numeric); prints details on failure. */
double tu_gradcheck(tu_fn fn, void *ud, tu_input *in, int n, double eps);
/* Assert tu_gradcheck(...) <= tol, with a message naming what. */
#define TU_GRADCHECK(what, fn, ud, in, n, eps, tol) do { \
        double e_ = tu_gradcheck(fn, ud, in, n, eps); \
        if (!(e_ <= (tol))) fail_msg("%s: gradient check error %.3g > %.3g", what, e_, (double)(tol)); \
    } while (0)
/* The image model `name` for (C, H, W) inputs and `classes` classes with its default configuration,
 * initialised from seed; fails the test if it cannot be built. */
struct al_model;
void tu_model_init(struct al_model *m, const char *name, int C, int H, int W, int classes, uint64_t seed);
/* Path of the CLI under test: $ATTNLAB_BIN (the Makefile exports it), else bin/attnlab; fails the test if absent. */
const char *tu_attnlab_bin(void);
/* A whole file, NUL-terminated (malloc'd; the caller frees); NULL if it cannot be read. *n = its size
 * when n is not NULL. */
char *tu_slurp_n(const char *path, size_t *n);
static inline char *tu_slurp(const char *path) { return tu_slurp_n(path, NULL); }
/* system(cmd)'s exit status, or -1 when the command did not exit normally. */
int tu_system(const char *cmd);
/* Run `$ATTNLAB_BIN ARGS` with stdout to DIR/out.txt and stderr to DIR/err.txt; its exit status. */
int tu_run_cli(const char *dir, const char *args);
/* tu_run_cli, with the start of DIR/err.txt copied to err (n bytes). */
int tu_run_cli_err(const char *dir, const char *args, char *err, size_t n);
/* Write text to DIR/NAME (the directory must exist); fails the test if it cannot. */
void tu_put(const char *dir, const char *name, const char *text);
/* A molecule dataset in dir: molecules.txt, coords.txt (when coords is not NULL) and the three splits
 * (their lines, e.g. "0\n2\n"). */
void tu_put_molset(const char *dir, const char *molecules, const char *coords, const char *train, const char *val,
                   const char *test);
/* rm -rf dir (a test's scratch directory): 0, or -1 if that failed. */
int tu_rm_rf(const char *dir);
/* How many files in dir have ".tmp." in their name (left-overs of an atomic write). */
int tu_tmp_files(const char *dir);
/* Run `SCRIPT $ATTNLAB_BIN` (a CLI test script: tests/readme_commands.sh, scripts/bad-inputs.sh, ...)
 * with its output to a log of this process in /tmp; on failure print the log and fail the test (the
 * log stays), else print its last line (and remove the log). */
void tu_script_passes(const char *script);
/* A tiny CoNLL-U treebank of nsent sentences at path: DET NOUN VERB [ADP DET NOUN] PUNCT from small word
 * lists, seeded; "saw" is both a VERB and a NOUN (an ambiguous word). rare_every > 0: every rare_every-th
 * sentence's first noun is "zebra" or "yak", words the other sentences never have (unseen in train). */
void tu_write_treebank(const char *path, int nsent, uint64_t seed, int rare_every);
/* A scratch directory per test program: tu_tmpdir_make("data") creates /tmp/attnlab_data_XXXXXX (0, or
 * -1), tu_tpath("a/%d.wav", 3) names a path under it (one of 8 rotating buffers), tu_tmpdir_remove()
 * deletes the whole tree (0, or -1). tu_mkdirs makes a directory and its parents; tu_spit writes a file
 * (fails the test if it cannot). */
int         tu_tmpdir_make(const char *tag);
const char *tu_tmpdir(void);
const char *tu_tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int         tu_tmpdir_remove(void);
void        tu_mkdirs(const char *path);
void        tu_spit(const char *path, const void *data, size_t n);
/* n threads standing in for MPI ranks (dist.h): fn(d, args[rank]) runs on each, and d's allreduce
 * (sum or max of int64) meets the other ranks at a barrier. Returns when every rank has returned. */
typedef void (*tu_rank_fn)(const al_dist *d, void *arg);
void        tu_ranks(int n, tu_rank_fn fn, void *const *args);
/* Build a 1-4 dim shape initializer. */
static inline tu_input tu_in(float *data, int check, int ndim, int d0, int d1, int d2, int d3)
{ tu_input i = {ndim, {d0, d1, d2, d3}, data, check}; return i; }
#endif
