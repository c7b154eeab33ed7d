/* cmd_attnmap.c — attnlab attnmap: where the heads of an attention model look, as a PNG.
 *
 * Loads one or more sa/local checkpoints, runs one test image through each with the attention
 * weights captured, and draws, for each query position, the input (query outlined) and one heat
 * map per head of the chosen block, models side by side (attnlab/attnmap.h does the drawing).
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/attnmap.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/checkpoint.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab attnmap --load MODEL.safetensors[,MODEL2...] --out FILE.png [OPTIONS]\n\n"
        "Draws the attention of one test image: one row per query position, with the input (the query's\n"
        "token outlined in red) and one heat map per head of the chosen block (weight over the image grid,\n"
        "scaled to each panel's own maximum, printed under it), the models of --load side by side.\n\n"
        "  --load LIST          up to %d checkpoints of sa or local models (attnlab train --save), comma-separated\n"
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
        "                       every query token of test images 0..N-1), for every block; with --distance,\n"
        "                       --out may be left out\n"
        "  --threads N          OpenMP threads\n",
        AL_ATTNMAP_MAXMODELS, AL_ATTNMAP_MAXQ);
}

static void warn_skip(void *ud, const char *msg) { (void)ud; fprintf(stderr, "attnlab: warning: %s\n", msg); }

static int parse_int(const char *s, const char *flag, long lo, long hi, int *out)
{
    char *e; errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || *e || errno || v < lo || v > hi) {
        fprintf(stderr, "attnlab attnmap: %s expects an integer in [%ld, %ld], got '%s'\n", flag, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
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

/* Mean attention distance per model, block and head over test images 0..n-1 (all query tokens). */
static int print_distances(al_model *m, int nm, const al_images *T, float mean[][4], float sd[][4], int n, float *x)
{
    if (n > T->n) n = T->n;
    int rc = -1;
    float *maps = NULL;
    int *tok = NULL;
    double *acc = NULL;
    printf("mean attention distance in input pixels over test images 0..%d, every query token:\n", n - 1);
    for (int k = 0; k < nm; k++) {
        const al_model_config *g = &m[k].cfg;
        const int gh = m[k].grid_h, gw = m[k].grid_w, N = gh * gw, H = g->heads, P = g->patch;
        free(maps); free(tok); free(acc);
        maps = malloc((size_t)N * H * N * sizeof *maps);
        tok = malloc((size_t)N * sizeof *tok);
        acc = calloc((size_t)g->depth * H, sizeof *acc);
        if (!maps || !tok || !acc) { fprintf(stderr, "attnlab attnmap: out of memory\n"); goto out; }
        for (int i = 0; i < N; i++) tok[i] = i;
        for (int im = 0; im < n; im++) {
            al_error err = {{0}};
            if (al_images_batch(T, &im, 1, mean[k], sd[k], x, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out; }
            for (int L = 0; L < g->depth; L++) {
                if (al_attnmap_compute(&m[k], x, L, tok, N, maps, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out; }
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
        double uni = 0;   /* reference: every key of the grid weighted equally */
        for (int q = 0; q < N; q++)
            for (int j = 0; j < N; j++) {
                double dy = q / gw - j / gw, dx = q % gw - j % gw;
                uni += sqrt(dy * dy + dx * dx) * P / ((double)N * N);
            }
        printf("  %-6s uniform over the %dx%d grid: %.2f\n", g->name, gh, gw, uni);
        for (int L = 0; L < g->depth; L++) {
            printf("  %-6s block %d:", g->name, L + 1);
            for (int h = 0; h < H; h++) printf("  head %d %5.2f", h + 1, acc[L * H + h] / n);
            printf("\n");
        }
    }
    rc = 0;
out:
    free(maps); free(tok); free(acc);
    return rc;
}

int cmd_attnmap(int argc, char **argv)
{
    const char *load = NULL, *data = "fashion-mnist", *data_dir = NULL, *out = NULL, *queries = NULL;
    int index = 0, layer = 0, scale = 4, threads = 0, distance = 0;
    enum { O_LOAD = 256, O_DATA, O_DATADIR, O_INDEX, O_QUERIES, O_LAYER, O_SCALE, O_OUT, O_THREADS, O_DIST, O_HELP };
    static const struct option lo[] = {
        {"load", 1, 0, O_LOAD}, {"data", 1, 0, O_DATA}, {"data-dir", 1, 0, O_DATADIR}, {"index", 1, 0, O_INDEX},
        {"queries", 1, 0, O_QUERIES}, {"layer", 1, 0, O_LAYER}, {"scale", 1, 0, O_SCALE}, {"out", 1, 0, O_OUT},
        {"threads", 1, 0, O_THREADS}, {"distance", 1, 0, O_DIST}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case O_LOAD: load = optarg; break;
        case O_DATA: data = optarg; break;
        case O_DATADIR: data_dir = optarg; break;
        case O_OUT: out = optarg; break;
        case O_QUERIES: queries = optarg; break;
        case O_INDEX: if (parse_int(optarg, "--index", 0, 1L << 30, &index)) return 2; break;
        case O_LAYER: if (parse_int(optarg, "--layer", 1, AL_MODEL_MAXDEPTH, &layer)) return 2; break;
        case O_SCALE: if (parse_int(optarg, "--scale", 1, 32, &scale)) return 2; break;
        case O_DIST: if (parse_int(optarg, "--distance", 1, 1 << 30, &distance)) return 2; break;
        case O_THREADS: if (parse_int(optarg, "--threads", 1, 1 << 20, &threads)) return 2; break;
        case 'h': case O_HELP: usage(stdout); return 0;
        default: return cli_bad_option("attnmap", argv);
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab attnmap: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!load) { fprintf(stderr, "attnlab attnmap: --load FILE is required\n"); usage(stderr); return 2; }
    if (!out && !distance) { fprintf(stderr, "attnlab attnmap: --out FILE.png is required\n"); return 2; }
    int qy[AL_ATTNMAP_MAXQ], qx[AL_ATTNMAP_MAXQ], nq = 0;
    if (queries && (nq = parse_queries(queries, qy, qx)) < 0) return 2;
    if (threads > 0) al_set_threads(threads);

    /* split --load into paths */
    char *paths = strdup(load), *path[AL_ATTNMAP_MAXMODELS];
    int nm = 0;
    if (!paths) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    for (char *sv = NULL, *tok = strtok_r(paths, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
        if (nm == AL_ATTNMAP_MAXMODELS) {
            fprintf(stderr, "attnlab attnmap: --load: at most %d checkpoints\n", AL_ATTNMAP_MAXMODELS);
            free(paths); return 2;
        }
        path[nm++] = tok;
    }
    if (nm == 0) { fprintf(stderr, "attnlab attnmap: --load: no checkpoint named\n"); free(paths); return 2; }

    int rc = 1, loaded = 0;
    al_error err = {{0}};
    al_model m[AL_ATTNMAP_MAXMODELS];
    float mean[AL_ATTNMAP_MAXMODELS][4], sd[AL_ATTNMAP_MAXMODELS][4];
    float *maps[AL_ATTNMAP_MAXMODELS] = {0}, *x = NULL;
    char notes[AL_ATTNMAP_MAXMODELS][64], caption[64];
    al_attnmap_model mm[AL_ATTNMAP_MAXMODELS];
    uint8_t *rgb = NULL;
    al_image_split D;
    memset(&D, 0, sizeof D);
    for (; loaded < nm; loaded++) {
        if (access(path[loaded], R_OK)) {
            fprintf(stderr, "attnlab attnmap: --load %s: %s\n", path[loaded], strerror(errno)); goto out;
        }
        if (al_model_load(path[loaded], &m[loaded], mean[loaded], sd[loaded], NULL, &err) != AL_OK) {
            fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out;
        }
        const al_model_config *g = &m[loaded].cfg;
        if (!m[loaded].kind->attention) {
            fprintf(stderr, "attnlab attnmap: %s holds a '%s' model, which has no attention to draw (use an sa or local checkpoint)\n",
                    path[loaded], g->name);
            loaded++; goto out;
        }
        if (layer > g->depth) {
            fprintf(stderr, "attnlab attnmap: --layer %d: %s has %d blocks (1..%d)\n", layer, path[loaded], g->depth, g->depth);
            loaded++; rc = 2; goto out;
        }
        if (loaded && (g->channels != m[0].cfg.channels || g->height != m[0].cfg.height || g->width != m[0].cfg.width)) {
            fprintf(stderr, "attnlab attnmap: %s takes %dx%dx%d images but %s takes %dx%dx%d; draw them separately\n",
                    path[loaded], g->channels, g->height, g->width, path[0], m[0].cfg.channels, m[0].cfg.height, m[0].cfg.width);
            loaded++; rc = 2; goto out;
        }
    }
    const al_model_config *g0 = &m[0].cfg;
    al_status st = al_image_data_load(data, data_dir, g0->channels, g0->height, g0->width, warn_skip, NULL, &D, &err);
    if (st != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out; }
    const al_images *T = &D.test;
    if (T->c != g0->channels || T->h != g0->height || T->w != g0->width) {
        fprintf(stderr, "attnlab attnmap: %s expects %dx%dx%d images but %s has %dx%dx%d\n", path[0], g0->channels,
                g0->height, g0->width, data, T->c, T->h, T->w);
        rc = 2; goto out;
    }
    if (index >= T->n) {
        fprintf(stderr, "attnlab attnmap: --index %d is out of range: the test split of %s has %d images (0..%d)\n",
                index, data, T->n, T->n - 1);
        rc = 2; goto out;
    }
    if (!queries) {   /* the centre, and points a quarter in from the edges */
        int H = T->h, W = T->w;
        int dy[4] = {H / 2, H / 4, H / 4, (3 * H) / 4}, dx[4] = {W / 2, W / 4, (3 * W) / 4, W / 2};
        nq = 4;
        for (int i = 0; i < nq; i++) { qy[i] = dy[i]; qx[i] = dx[i]; }
    }
    for (int i = 0; i < nq; i++)
        if (qy[i] >= T->h || qx[i] >= T->w) {
            fprintf(stderr, "attnlab attnmap: --queries: %d:%d is outside the %dx%d image\n", qy[i], qx[i], T->h, T->w);
            rc = 2; goto out;
        }
    const char *cls = T->class_names ? T->class_names[T->labels[index]] : NULL;
    if (cls) snprintf(caption, sizeof caption, "test #%d\n%s", index, cls);
    else snprintf(caption, sizeof caption, "test #%d\nclass %d", index, T->labels[index]);
    x = malloc((size_t)T->c * T->h * T->w * sizeof *x);
    if (!x) { fprintf(stderr, "attnlab attnmap: out of memory\n"); goto out; }
    for (int k = 0; k < nm; k++) {
        const al_model_config *g = &m[k].cfg;
        int N = m[k].grid_h * m[k].grid_w, tok[AL_ATTNMAP_MAXQ], pred = -1;
        for (int i = 0; i < nq; i++) {
            int ty = qy[i] / g->patch, tx = qx[i] / g->patch;
            if (ty >= m[k].grid_h) ty = m[k].grid_h - 1;
            if (tx >= m[k].grid_w) tx = m[k].grid_w - 1;
            tok[i] = ty * m[k].grid_w + tx;
        }
        maps[k] = malloc((size_t)nq * g->heads * N * sizeof(float));
        if (!maps[k]) { fprintf(stderr, "attnlab attnmap: out of memory\n"); goto out; }
        if (al_images_batch(T, &index, 1, mean[k], sd[k], x, NULL, &err) != AL_OK ||
            al_attnmap_compute(&m[k], x, layer ? layer - 1 : -1, tok, nq, maps[k], &pred, &err) != AL_OK) {
            fprintf(stderr, "attnlab attnmap: %s: %s\n", path[k], err.msg); goto out;
        }
        const char *pn = T->class_names && pred < T->classes ? T->class_names[pred] : NULL;
        int L = layer ? layer : g->depth;
        if (pn) snprintf(notes[k], sizeof notes[k], "block %d  pred %s", L, pn);
        else snprintf(notes[k], sizeof notes[k], "block %d  pred %d", L, pred);
        mm[k].grid_h = m[k].grid_h; mm[k].grid_w = m[k].grid_w; mm[k].patch = g->patch; mm[k].heads = g->heads;
        mm[k].maps = maps[k]; mm[k].note = notes[k];
        fprintf(stderr, "attnlab attnmap: %s: %s, %dx%d tokens, %d heads, block %d; predicts %d (%s), label %d\n",
                path[k], g->name, m[k].grid_h, m[k].grid_w, g->heads, L, pred, pn ? pn : "-", T->labels[index]);
    }
    char titles[AL_ATTNMAP_MAXMODELS][48];
    for (int k = 0; k < nm; k++) {
        const al_model_config *g = &m[k].cfg;
        if (m[k].kind->windowed) snprintf(titles[k], sizeof titles[k], "local %dx%d", g->window, g->window);
        else snprintf(titles[k], sizeof titles[k], "%.15s (full)", g->name);
        mm[k].title = titles[k];
    }
    al_attnmap_fig fig = {T->pix + (size_t)index * T->c * T->h * T->w, T->c, T->h, T->w, caption,
                          nq, qy, qx, mm, nm, scale};
    if (distance && print_distances(m, nm, T, mean, sd, distance, x) != 0) goto out;
    if (!out) { rc = 0; goto out; }
    int W, H;
    if (al_attnmap_render(&fig, &rgb, &W, &H, &err) != AL_OK ||
        al_png_write(out, rgb, W, H, 3, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); goto out;
    }
    printf("attnmap %s: %dx%d pixels, %d models, %d queries, test image %d\n", out, W, H, nm, nq, index);
    rc = 0;
out:
    for (int k = 0; k < loaded; k++) al_model_free(&m[k]);
    for (int k = 0; k < nm; k++) free(maps[k]);
    free(x); free(rgb); free(paths);
    al_image_split_free(&D);
    return rc;
}
