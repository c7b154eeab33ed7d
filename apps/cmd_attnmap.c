/* cmd_attnmap.c — attnlab attnmap: where the heads of an attention model look, as a PNG.
 * (A sequence checkpoint goes to attnmap_words.c, a molecule checkpoint to attnmap_mol.c, after the
 * flags are checked here.)
 *
 * Loads one or more attention-model checkpoints (sa, local, hybrid, gpsa), runs one test image through each with the attention
 * weights captured, and draws, for each query position, the input (query outlined) and one heat
 * map per head of the chosen block, models side by side (attnlab/attnmap.h does the drawing).
 * parse → load the models → load and check the test image → compute the maps → render / distances.
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "image_common.h"
#include "attnlab/task.h"
#include "attnlab/attnmap.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/checkpoint.h"

#define MAXM AL_ATTNMAP_MAXMODELS

typedef struct attnmap_opts {
    const char *load, *data, *data_dir, *out, *queries;
    int index, layer, scale, threads, distance, quiet;
    const char *sentence, *conllu;   /* sequence checkpoints */
    int cell;
    const char *molecule;            /* molecule checkpoints */
    int data_given;
    const char *image_flag, *seq_flag;   /* the first flag given that only images / only sequences take */
    const char *not_mol_flag;            /* the first flag given that molecule checkpoints do not take */
    const char *not_speech_flag;         /* ... that speech checkpoints do not take */
    int px;                              /* speech checkpoints: pixels per frame */
    int qy[AL_ATTNMAP_MAXQ], qx[AL_ATTNMAP_MAXQ], nq;
} attnmap_opts;

/* The models, the data and the figure's pieces. */
typedef struct attnmap_run {
    char *paths, *path[MAXM];
    int nm, loaded;
    al_model m[MAXM];
    float mean[MAXM][4], sd[MAXM][4];
    float *maps[MAXM], *x;
    char notes[MAXM][64], titles[MAXM][48], caption[64];
    al_attnmap_model mm[MAXM];
    uint8_t *rgb;
    al_image_split D;
    long permute;                   /* the checkpoints' --permute-pixels seed (-1: none), applied to the test image */
} attnmap_run;

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab attnmap --load MODEL.safetensors[,MODEL2...] --out FILE.png [OPTIONS]\n"
        "       attnlab attnmap --load SEQ.safetensors --sentence \"I saw a saw\" | --conllu FILE [--index I] --out FILE.png\n\n"
        "Draws the attention of one test image: one row per query position, with the input (the query's\n"
        "token outlined in red) and one heat map per head of the chosen block (weight over the image grid,\n"
        "scaled to each panel's own maximum, printed under it), the models of --load side by side.\n\n"
        "  --load LIST          up to %d checkpoints of attention models (sa, local, hybrid, gpsa; attnlab train\n"
        "                       --save), comma-separated\n"
        "  --data NAME|DIR      fashion-mnist (default) or an image folder (resized to the model's input)\n"
        "  --data-dir DIR       where the Fashion-MNIST files are (default: $ATTNLAB_FASHION_MNIST, $ATTNLAB_DATA/fashion-mnist,\n"
        "                       datasets/fashion-mnist, " AL_DATADIR "/fashion-mnist, then " AL_FASHION_MNIST_DIR ")\n"
        "  --index I            test image index, 0-based (default 0)\n"
        "  --queries LIST       query pixels as ROW:COL, comma-separated, e.g. 14:14,4:4 (up to %d;\n"
        "                       default: the centre and three points a quarter in from the edges)\n"
        "  --layer L            block to draw, 1-based (default: each model's last)\n"
        "  --scale S            screen pixels per input pixel, 1..32 (default 4)\n"
        "  --out FILE           PNG to write (atomically)\n"
        "  --distance N         also print each head's mean attention distance (input pixels between the\n"
        "                       query's and the keys' token centres, weighted by attention, averaged over\n"
        "                       every query token of test images 0..N-1), for every block, and for gpsa each\n"
        "                       head's gate sigma(lambda) (the positional map's share of its attention);\n"
        "                       with --distance, --out may be left out\n"
        "  --threads N          OpenMP threads\n"
        CLI_MAX_MEMORY_HELP
        "  --quiet              no per-model lines on stderr\n"
        "sequence checkpoints (attnlab train --task sequence --model sa|trunc --save): each head's attention over\n"
        "the words of one sentence, query words down the rows (with the predicted tag), key words along the\n"
        "columns, one row of panels per block; trunc's band shows (grey: keys outside its window)\n"
        "  --sentence TEXT      the sentence, words separated by spaces\n"
        "  --conllu FILE        or sentence --index I (0-based, default 0) of a CoNLL-U file (.conllu[.gz])\n"
        "  --block L            draw block L only (1-based; same as --layer; default: every block)\n"
        "  --cell N             pixels per word cell, 8..64 (default 16)\n"
        "molecule checkpoints (attnlab train --task molecule --readout attn --save): the attention pooling\n"
        "readout (each head's learned query attending over the atoms) of one molecule, drawn from the\n"
        "dataset's coords.txt (RDKit's 2-D depiction), one panel per head: atoms as circles coloured by their\n"
        "weight (the head's weights sum to 1 over the molecule), element inside; bonds single, double and\n"
        "triple as 1-3 lines, aromatic as a line and a dashed line. Models without attention pooling (sum or\n"
        "mean readout, mlp, fingerprint) are refused.\n"
        "  --molecule NAME|I    the molecule: a name of coords.txt, or its 0-based number\n"
        "  --data NAME|DIR      the molecule dataset (default: the checkpoint's)\n"
        "speech checkpoints (attnlab train --task speech --save): one test utterance of the corpus, its log-mel\n"
        "spectrogram, the reference and the model's label of every frame, and the attention of one block (mean\n"
        "of its heads) over frames on the same time axis, each query row scaled to its maximum (sa, trunc)\n"
        "  --data DIR           the speech-digits corpus (attnlab data speech-digits); --index I its test utterance\n"
        "  --layer L            block to draw (default the last)   --px N  pixels per 10-ms frame, 1..8 (default 2)\n",
        AL_ATTNMAP_MAXMODELS, AL_ATTNMAP_MAXQ);
}

/* "R:C,R:C" → qy, qx; returns the count or -1. */
static int parse_queries(const char *s, int *qy, int *qx)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *e; errno = 0;
        long r = strtol(p, &e, 10);
        if (e == p || *e != ':' || errno || r < 0 || r > 1 << 20) goto bad;
        p = e + 1;
        long c = strtol(p, &e, 10);
        if (e == p || (*e && *e != ',') || errno || c < 0 || c > 1 << 20) goto bad;
        if (n == AL_ATTNMAP_MAXQ) { fprintf(stderr, "attnlab attnmap: --queries: at most %d queries\n", AL_ATTNMAP_MAXQ); return -1; }
        qy[n] = (int)r; qx[n] = (int)c; n++;
        p = *e ? e + 1 : e;
    }
    if (n == 0) goto bad;
    return n;
bad:
    fprintf(stderr, "attnlab attnmap: --queries expects ROW:COL[,ROW:COL...] (pixel coordinates), got '%s'\n", s);
    return -1;
}


/* Mean attention distance of every block and head of model k over test images 0..n-1 (all query
 * tokens) into acc (depth × heads); uni = the same for uniform weights. x: scratch (one image). */
static int model_distances(attnmap_run *R, int k, const al_images *T, int n, double *acc, double *uni)
{
    al_model *m = &R->m[k];
    const al_model_config *cfg = &m->cfg;
    const int gw = m->grid_w, N = m->grid_h * gw, H = cfg->heads, P = cfg->patch;
    float *maps = malloc((size_t)N * H * N * sizeof *maps);
    int *tok = malloc((size_t)N * sizeof *tok), rc = -1;
    if (!maps || !tok) { fprintf(stderr, "attnlab attnmap: out of memory\n"); goto out; }
    for (int i = 0; i < N; i++) tok[i] = i;
    for (int im = 0; im < n; im++) {
        al_error err = {{0}};
        if (al_images_batch(T, &im, 1, R->mean[k], R->sd[k], R->x, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out; }
        for (int L = 0; L < cfg->depth; L++) {
            if (al_attnmap_compute(m, R->x, L, tok, N, maps, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out; }
            for (int h = 0; h < H; h++) {
                double s = 0;
                for (int q = 0; q < N; q++) {
                    const float *mp = maps + ((size_t)q * H + h) * N;   /* (N) */
                    for (int j = 0; j < N; j++) {
                        double dy = q / gw - j / gw, dx = q % gw - j % gw;
                        s += mp[j] * sqrt(dy * dy + dx * dx) * P;
                    }
                }
                acc[L * H + h] += s / N;
            }
        }
    }
    *uni = 0;   /* reference: every key of the grid weighted equally */
    for (int q = 0; q < N; q++)
        for (int j = 0; j < N; j++) {
            double dy = q / gw - j / gw, dx = q % gw - j % gw;
            *uni += sqrt(dy * dy + dx * dx) * P / ((double)N * N);
        }
    rc = 0;
out:
    free(maps); free(tok);
    return rc;
}

/* Mean attention distance per model, block and head over test images 0..n-1 (all query tokens). */
static int print_distances(attnmap_run *R, const al_images *T, int n)
{
    if (n > T->n) n = T->n;
    printf("mean attention distance in input pixels over test images 0..%d, every query token:\n", n - 1);
    for (int k = 0; k < R->nm; k++) {
        const al_model_config *cfg = &R->m[k].cfg;
        const int H = cfg->heads;
        double uni, *acc = calloc((size_t)cfg->depth * H, sizeof *acc);
        if (!acc) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return -1; }
        if (model_distances(R, k, T, n, acc, &uni)) { free(acc); return -1; }
        printf("  %-6s uniform over the %dx%d grid: %.2f\n", cfg->name, R->m[k].grid_h, R->m[k].grid_w, uni);
        for (int L = 0; L < cfg->depth; L++) {
            printf("  %-6s block %d:", cfg->name, L + 1);
            for (int h = 0; h < H; h++) printf("  head %d %5.2f", h + 1, acc[L * H + h] / n);
            printf("\n");
            const al_tensor *gate = R->m[k].blocks[L].gpsa_gate;   /* gpsa: each head's share of the positional map */
            if (!gate) continue;
            printf("  %-6s block %d gate:", cfg->name, L + 1);
            for (int h = 0; h < H; h++) printf("  head %d %5.3f", h + 1, 1.0 / (1.0 + exp(-(double)gate->data[h])));
            printf("\n");
        }
        free(acc);
    }
    return 0;
}

/* ---- parse ---- */
static int parse_opt(attnmap_opts *o, int ch, const char *a)
{
    enum { O_LOAD = 256, O_DATA, O_DATADIR, O_INDEX, O_QUERIES, O_LAYER, O_SCALE, O_OUT, O_THREADS, O_DIST, O_QUIET,
           O_SENTENCE, O_CONLLU, O_CELL, O_BLOCK, O_MAXMEM, O_MOLECULE, O_PX };
    const char *c = "attnmap";
    static const char *const image_only[] = {[O_DATA - 256] = "--data", [O_DATADIR - 256] = "--data-dir",
                                             [O_QUERIES - 256] = "--queries", [O_SCALE - 256] = "--scale", [O_DIST - 256] = "--distance"};
    static const char *const seq_only[] = {[O_SENTENCE - O_SENTENCE] = "--sentence", [O_CONLLU - O_SENTENCE] = "--conllu",
                                           [O_CELL - O_SENTENCE] = "--cell"};
    if (ch >= 256 && ch - 256 < (int)(sizeof image_only / sizeof *image_only) && image_only[ch - 256] && !o->image_flag)
        o->image_flag = image_only[ch - 256];
    if (ch >= O_SENTENCE && ch <= O_CELL && !o->seq_flag) o->seq_flag = seq_only[ch - O_SENTENCE];
    static const char *const not_mol[] = {[O_DATADIR - 256] = "--data-dir", [O_INDEX - 256] = "--index", [O_QUERIES - 256] = "--queries",
                                          [O_LAYER - 256] = "--layer", [O_SCALE - 256] = "--scale", [O_DIST - 256] = "--distance",
                                          [O_SENTENCE - 256] = "--sentence", [O_CONLLU - 256] = "--conllu", [O_CELL - 256] = "--cell",
                                          [O_BLOCK - 256] = "--block"};
    if (ch >= 256 && ch - 256 < (int)(sizeof not_mol / sizeof *not_mol) && not_mol[ch - 256] && !o->not_mol_flag)
        o->not_mol_flag = not_mol[ch - 256];
    if (ch == O_PX && !o->not_mol_flag) o->not_mol_flag = "--px";
    static const char *const not_speech[] = {[O_DATADIR - 256] = "--data-dir", [O_QUERIES - 256] = "--queries",
                                             [O_SCALE - 256] = "--scale", [O_DIST - 256] = "--distance", [O_SENTENCE - 256] = "--sentence",
                                             [O_CONLLU - 256] = "--conllu", [O_CELL - 256] = "--cell", [O_MOLECULE - 256] = "--molecule"};
    if (ch >= 256 && ch - 256 < (int)(sizeof not_speech / sizeof *not_speech) && not_speech[ch - 256] && !o->not_speech_flag)
        o->not_speech_flag = not_speech[ch - 256];
    switch (ch) {
    case O_LOAD: o->load = a; return 0;
    case O_DATA: o->data = a; o->data_given = 1; return 0;
    case O_MOLECULE: o->molecule = a; return 0;
    case O_DATADIR: o->data_dir = a; return 0;
    case O_OUT: o->out = a; return 0;
    case O_QUERIES: o->queries = a; return (o->nq = parse_queries(a, o->qy, o->qx)) < 0 ? -1 : 0;
    case O_INDEX: return cli_int32(c, "--index", a, 0, 1L << 30, &o->index);
    case O_LAYER: return cli_int32(c, "--layer", a, 1, AL_MODEL_MAXDEPTH, &o->layer);
    case O_BLOCK: return cli_int32(c, "--block", a, 1, AL_MODEL_MAXDEPTH, &o->layer);
    case O_SCALE: return cli_int32(c, "--scale", a, 1, 32, &o->scale);
    case O_DIST: return cli_int32(c, "--distance", a, 1, 1 << 30, &o->distance);
    case O_SENTENCE: o->sentence = a; return 0;
    case O_CONLLU: o->conllu = a; return 0;
    case O_CELL: return cli_int32(c, "--cell", a, 8, 64, &o->cell);
    case O_PX: return cli_int32(c, "--px", a, 1, 8, &o->px);
    case O_THREADS: return cli_threads(c, a, &o->threads);
    case O_QUIET: o->quiet = 1; return 0;
    case O_MAXMEM: return cli_max_memory(c, a);
    default: return 1;
    }
}

/* argv → o. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_attnmap_opts(int argc, char **argv, attnmap_opts *o)
{
    memset(o, 0, sizeof *o);
    o->data = "fashion-mnist"; o->scale = 4; o->cell = 16;
    static const struct option lo[] = {
        {"load", 1, 0, 256}, {"data", 1, 0, 257}, {"data-dir", 1, 0, 258}, {"index", 1, 0, 259},
        {"queries", 1, 0, 260}, {"layer", 1, 0, 261}, {"scale", 1, 0, 262}, {"out", 1, 0, 263},
        {"threads", 1, 0, 264}, {"distance", 1, 0, 265}, {"quiet", 0, 0, 266}, {"sentence", 1, 0, 267},
        {"conllu", 1, 0, 268}, {"cell", 1, 0, 269}, {"block", 1, 0, 270}, {"max-memory", 1, 0, 271}, {"molecule", 1, 0, 272}, {"px", 1, 0, 273},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (ch == 'h') { usage(stdout); return 0; }
        int r = parse_opt(o, ch, optarg);
        if (r > 0) return cli_bad_option("attnmap", argv);
        if (r < 0) return 2;
    }
    if (optind < argc) { fprintf(stderr, "attnlab attnmap: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!o->load) { fprintf(stderr, "attnlab attnmap: --load FILE is required\n"); usage(stderr); return 2; }
    if (!o->out && !o->distance) { fprintf(stderr, "attnlab attnmap: --out FILE.png is required\n"); return 2; }
    if (cli_output("attnmap", "--out", o->out, 0)) return 2;   /* before the models and the data are loaded */
    return -1;
}

/* ---- load ---- */
/* --load into R->path[0..nm). Returns an exit status (-1: go on). */
static int split_paths(const char *load, attnmap_run *R)
{
    if (!(R->paths = strdup(load))) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    for (char *sv = NULL, *tok = strtok_r(R->paths, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
        if (R->nm == MAXM) { fprintf(stderr, "attnlab attnmap: --load: at most %d checkpoints\n", MAXM); return 2; }
        R->path[R->nm++] = tok;
    }
    if (R->nm == 0) { fprintf(stderr, "attnlab attnmap: --load: no checkpoint named\n"); return 2; }
    return -1;
}

/* Checkpoint k, which must hold an attention model with --layer blocks and model 0's input shape. */
static int load_model(const attnmap_opts *o, attnmap_run *R, int k)
{
    al_error err = {{0}};
    if (access(R->path[k], R_OK)) { fprintf(stderr, "attnlab attnmap: --load %s: %s\n", R->path[k], strerror(errno)); return 1; }
    char *meta = NULL;
    if (al_model_load(R->path[k], &R->m[k], R->mean[k], R->sd[k], &meta, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1;
    }
    R->loaded = k + 1;
    const long perm = app_permute_seed(meta);
    free(meta);
    if (perm == -2) { fprintf(stderr, "attnlab attnmap: %s: a bad %s in the metadata\n", R->path[k], APP_PERMUTE_KEY); return 1; }
    if (k == 0) R->permute = perm;
    else if (perm != R->permute) {   /* the models see one test image: it must be arranged alike for all */
        fprintf(stderr, "attnlab attnmap: %s was trained on pixels permuted with seed %ld, %s with %ld; draw them separately\n",
                R->path[k], perm, R->path[0], R->permute);
        return 2;
    }
    const al_model_config *cfg = &R->m[k].cfg, *c0 = &R->m[0].cfg;
    if (!R->m[k].kind->attention) {
        fprintf(stderr, "attnlab attnmap: %s holds a '%s' model, which has no attention to draw (use an sa, local, hybrid or gpsa checkpoint)\n",
                R->path[k], cfg->name);
        return 1;
    }
    if (o->layer > cfg->depth) {
        fprintf(stderr, "attnlab attnmap: --layer %d: %s has %d blocks (1..%d)\n", o->layer, R->path[k], cfg->depth, cfg->depth);
        return 2;
    }
    if (k && (cfg->channels != c0->channels || cfg->height != c0->height || cfg->width != c0->width)) {
        fprintf(stderr, "attnlab attnmap: %s takes %dx%dx%d images but %s takes %dx%dx%d; draw them separately\n",
                R->path[k], cfg->channels, cfg->height, cfg->width, R->path[0], c0->channels, c0->height, c0->width);
        return 2;
    }
    return 0;
}

/* The test split for model 0's input; the index and the queries inside it (default queries: the
 * centre, and points a quarter in from the edges). Returns an exit status. */
static int load_test(attnmap_opts *o, attnmap_run *R)
{
    const al_model_config *c0 = &R->m[0].cfg;
    al_error err = {{0}};
    if (al_image_data_load(o->data, o->data_dir, c0->channels, c0->height, c0->width, cli_warn, NULL, &R->D, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1;
    }
    if (app_images_permute(&R->D.test, R->permute, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    const al_images *T = &R->D.test;
    if (T->c != c0->channels || T->h != c0->height || T->w != c0->width) {
        fprintf(stderr, "attnlab attnmap: %s expects %dx%dx%d images but %s has %dx%dx%d\n", R->path[0], c0->channels,
                c0->height, c0->width, o->data, T->c, T->h, T->w);
        return 2;
    }
    if (o->index >= T->n) {
        fprintf(stderr, "attnlab attnmap: --index %d is out of range: the test split of %s has %d images (0..%d)\n",
                o->index, o->data, T->n, T->n - 1);
        return 2;
    }
    if (!o->queries) {
        int H = T->h, W = T->w;
        int dy[4] = {H / 2, H / 4, H / 4, (3 * H) / 4}, dx[4] = {W / 2, W / 4, (3 * W) / 4, W / 2};
        o->nq = 4;
        for (int i = 0; i < o->nq; i++) { o->qy[i] = dy[i]; o->qx[i] = dx[i]; }
    }
    for (int i = 0; i < o->nq; i++)
        if (o->qy[i] >= T->h || o->qx[i] >= T->w) {
            fprintf(stderr, "attnlab attnmap: --queries: %d:%d is outside the %dx%d image\n", o->qy[i], o->qx[i], T->h, T->w);
            return 2;
        }
    return 0;
}

/* ---- compute ---- */
/* Model k's maps for the queries, its note and title. Returns an exit status. */
static int compute_model(const attnmap_opts *o, attnmap_run *R, int k)
{
    const al_images *T = &R->D.test;
    al_model *m = &R->m[k];
    const al_model_config *cfg = &m->cfg;
    int N = m->grid_h * m->grid_w, tok[AL_ATTNMAP_MAXQ], pred = -1;
    for (int i = 0; i < o->nq; i++) {
        int ty = o->qy[i] / cfg->patch, tx = o->qx[i] / cfg->patch;
        if (ty >= m->grid_h) ty = m->grid_h - 1;
        if (tx >= m->grid_w) tx = m->grid_w - 1;
        tok[i] = ty * m->grid_w + tx;
    }
    R->maps[k] = malloc((size_t)o->nq * cfg->heads * N * sizeof(float));
    if (!R->maps[k]) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    al_error err = {{0}};
    if (al_images_batch(T, &o->index, 1, R->mean[k], R->sd[k], R->x, NULL, &err) != AL_OK ||
        al_attnmap_compute(m, R->x, o->layer ? o->layer - 1 : -1, tok, o->nq, R->maps[k], &pred, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s: %s\n", R->path[k], err.msg); return 1;
    }
    const char *pn = T->class_names && pred < T->classes ? T->class_names[pred] : NULL;
    int L = o->layer ? o->layer : cfg->depth;
    if (pn) snprintf(R->notes[k], sizeof R->notes[k], "block %d  pred %s", L, pn);
    else snprintf(R->notes[k], sizeof R->notes[k], "block %d  pred %d", L, pred);
    if (m->kind->windowed) snprintf(R->titles[k], sizeof R->titles[k], "local %dx%d", cfg->window, cfg->window);
    else snprintf(R->titles[k], sizeof R->titles[k], "%.15s (full)", cfg->name);
    R->mm[k] = (al_attnmap_model){R->titles[k], m->grid_h, m->grid_w, cfg->patch, cfg->heads, R->maps[k], R->notes[k]};
    if (!o->quiet)
        fprintf(stderr, "attnlab attnmap: %s: %s, %dx%d tokens, %d heads, block %d; predicts %d (%s), label %d\n",
                R->path[k], cfg->name, m->grid_h, m->grid_w, cfg->heads, L, pred, pn ? pn : "-", T->labels[o->index]);
    return 0;
}

/* The figure as a PNG. Returns an exit status. */
static int render(const attnmap_opts *o, attnmap_run *R)
{
    const al_images *T = &R->D.test;
    const char *cls = T->class_names ? T->class_names[T->labels[o->index]] : NULL;
    if (cls) snprintf(R->caption, sizeof R->caption, "test #%d\n%s", o->index, cls);
    else snprintf(R->caption, sizeof R->caption, "test #%d\nclass %d", o->index, T->labels[o->index]);
    al_attnmap_fig fig = {T->pix + (size_t)o->index * T->c * T->h * T->w, T->c, T->h, T->w, R->caption,
                          o->nq, o->qy, o->qx, R->mm, R->nm, o->scale};
    int W, H;
    al_error err = {{0}};
    if (al_attnmap_render(&fig, &R->rgb, &W, &H, &err) != AL_OK || al_png_write(o->out, R->rgb, W, H, 3, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1;
    }
    printf("attnmap %s: %dx%d pixels, %d models, %d queries, test image %d\n", o->out, W, H, R->nm, o->nq, o->index);
    return 0;
}

static int attnmap_run_all(attnmap_opts *o, attnmap_run *R)
{
    int rc = split_paths(o->load, R);
    if (rc >= 0) return rc;
    for (int k = 0; k < R->nm; k++) if ((rc = load_model(o, R, k))) return rc;
    if ((rc = load_test(o, R))) return rc;
    const al_images *T = &R->D.test;
    if (!(R->x = malloc((size_t)T->c * T->h * T->w * sizeof *R->x))) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    for (int k = 0; k < R->nm; k++) if ((rc = compute_model(o, R, k))) return rc;
    if (o->distance && print_distances(R, T, o->distance) != 0) return 1;
    return o->out ? render(o, R) : 0;
}

/* The task (AL_TASK_*) of the (first) checkpoint of --load; -1: unreadable (the path the other flags
 * choose reports it). */
static int checkpoint_task(const char *load)
{
    char path[4096];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(load, ","), load);
    al_error err = {{0}};
    const al_task *t = al_task_of_checkpoint(path, &err);
    return t ? (int)t->id : -1;
}

/* A molecule checkpoint: its flags checked, then attnmap_mol_run. Returns the exit status. */
static int run_mol(const attnmap_opts *o)
{
    if (o->not_mol_flag) { fprintf(stderr, "attnlab attnmap: %s does not apply to the molecule model %s\n", o->not_mol_flag, o->load); return 2; }
    if (strchr(o->load, ',')) { fprintf(stderr, "attnlab attnmap: --load: one molecule checkpoint at a time\n"); return 2; }
    if (!o->out) { fprintf(stderr, "attnlab attnmap: --out FILE.png is required\n"); return 2; }
    if (!o->molecule) { fprintf(stderr, "attnlab attnmap: a molecule checkpoint needs --molecule NAME|NUMBER (of the dataset's coords.txt)\n"); return 2; }
    attnmap_mol_opts mo = {o->load, o->out, o->molecule, o->data_given ? o->data : NULL, o->quiet};
    return attnmap_mol_run(&mo);
}

/* A sequence checkpoint: its flags checked, then attnmap_words_run. Returns the exit status. */
static int run_words(const attnmap_opts *o)
{
    if (o->image_flag) { fprintf(stderr, "attnlab attnmap: %s applies to image checkpoints, not to the sequence model %s\n", o->image_flag, o->load); return 2; }
    if (o->px) { fprintf(stderr, "attnlab attnmap: --px applies to speech checkpoints, not to the sequence model %s\n", o->load); return 2; }
    if (strchr(o->load, ',')) { fprintf(stderr, "attnlab attnmap: --load: one sequence checkpoint at a time\n"); return 2; }
    if (!o->out) { fprintf(stderr, "attnlab attnmap: --out FILE.png is required\n"); return 2; }
    if (!o->sentence == !o->conllu) {
        fprintf(stderr, "attnlab attnmap: a sequence checkpoint needs --sentence TEXT or --conllu FILE [--index I] (one of them)\n");
        return 2;
    }
    if (o->sentence && o->index) { fprintf(stderr, "attnlab attnmap: --index goes with --conllu, not --sentence\n"); return 2; }
    attnmap_words_opts w = {o->load, o->out, o->sentence, o->conllu, o->index, o->layer, o->cell, o->quiet};
    return attnmap_words_run(&w);
}

/* A speech checkpoint: its flags checked, then attnmap_speech_run. Returns the exit status. */
static int run_speech(const attnmap_opts *o)
{
    if (o->not_speech_flag) { fprintf(stderr, "attnlab attnmap: %s does not apply to the speech model %s\n", o->not_speech_flag, o->load); return 2; }
    if (strchr(o->load, ',')) { fprintf(stderr, "attnlab attnmap: --load: one speech checkpoint at a time\n"); return 2; }
    if (!o->out) { fprintf(stderr, "attnlab attnmap: --out FILE.png is required\n"); return 2; }
    if (!o->data_given) { fprintf(stderr, "attnlab attnmap: a speech checkpoint needs --data CORPUS (attnlab data speech-digits) [--index I]\n"); return 2; }
    attnmap_speech_opts so = {o->load, o->out, o->data, o->index, o->layer, o->px, o->quiet};
    return attnmap_speech_run(&so);
}

int cmd_attnmap(int argc, char **argv)
{
    attnmap_opts o;
    int rc = parse_attnmap_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("attnmap")) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    const int task = checkpoint_task(o.load);
    if (task == AL_TASK_MOLECULE || (task < 0 && o.molecule)) return run_mol(&o);
    if (o.molecule) {
        fprintf(stderr, "attnlab attnmap: --molecule applies to molecule checkpoints (attnlab train --task molecule --save), not to %s\n", o.load);
        return 2;
    }
    if (task == AL_TASK_SEQUENCE) return run_words(&o);
    if (task == AL_TASK_SPEECH) return run_speech(&o);
    if (o.px) { fprintf(stderr, "attnlab attnmap: --px applies to speech checkpoints (attnlab train --task speech --save), not to %s\n", o.load); return 2; }
    if (o.seq_flag) {
        fprintf(stderr, "attnlab attnmap: %s applies to sequence checkpoints (attnlab train --task sequence --save), not to %s\n",
                o.seq_flag, o.load);
        return 2;
    }
    static attnmap_run R;
    memset(&R, 0, sizeof R);
    rc = attnmap_run_all(&o, &R);
    for (int k = 0; k < R.loaded; k++) al_model_free(&R.m[k]);
    for (int k = 0; k < R.nm; k++) free(R.maps[k]);
    free(R.x); free(R.rgb); free(R.paths);
    al_image_split_free(&R.D);
    return rc;
}
