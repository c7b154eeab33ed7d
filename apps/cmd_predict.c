/* cmd_predict.c — attnlab predict: classify image files with a trained image checkpoint; one CSV row
 * per file (file,class,prob). parse → load the model → collect and decode the files → evaluate → print. */
#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "cli.h"
#include "image_common.h"
#include "attnlab/checkpoint.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/train.h"

typedef struct predict_opts { const char *load; int threads, batch, quiet; } predict_opts;
typedef struct strvec { char **s; int n, cap; } strvec;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab predict --load MODEL.safetensors FILE|DIR... [OPTIONS]\n\n"
        "Classifies image files (PNG, JPEG, BMP) with a checkpoint of attnlab train --save: each is converted\n"
        "to the model's channels, resized to its input as image folders are, normalised with the\n"
        "checkpoint's mean and std. A DIR stands for the image files under it (recursively, sorted).\n"
        "Prints CSV on stdout: a header file,class,prob, then one row per file with the predicted class's\n"
        "name (its index for checkpoints that store no class names) and its softmax probability.\n\n"
        "  --load FILE          image checkpoint (attnlab train --save)\n"
        "  --batch N            images per forward pass (default 256)\n"
        "  --threads N          OpenMP threads\n"
        CLI_MAX_MEMORY_HELP
        "  --quiet              no thread line on stderr\n");
}

/* ---- parse ---- */
static int parse_predict_opts(int argc, char **argv, predict_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 256;
    static const struct option lo[] = {{"load", 1, 0, 'l'}, {"threads", 1, 0, 't'}, {"batch", 1, 0, 'b'},
                                       {"quiet", 0, 0, 'q'}, {"max-memory", 1, 0, 'm'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'l': o->load = optarg; break;
        case 't': if (cli_threads("predict", optarg, &o->threads)) return 2; break;
        case 'b': if (cli_int32("predict", "--batch", optarg, 1, 1 << 20, &o->batch)) return 2; break;
        case 'q': o->quiet = 1; break;
        case 'm': if (cli_max_memory("predict", optarg)) return 2; break;
        case 'h': usage(stdout); return 0;
        default: return cli_bad_option("predict", argv);
        }
    }
    if (!o->load) { fprintf(stderr, "attnlab predict: --load FILE is required\n"); return 2; }
    if (optind >= argc) { fprintf(stderr, "attnlab predict: no image FILE or DIR given\n"); return 2; }
    return -1;
}

/* ---- files ---- */
static int sv_push(strvec *v, const char *s)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        char **ns = realloc(v->s, (size_t)cap * sizeof *ns);
        if (!ns) return -1;
        v->s = ns; v->cap = cap;
    }
    return (v->s[v->n] = strdup(s)) ? (v->n++, 0) : -1;
}
static void sv_free(strvec *v) { for (int i = 0; i < v->n; i++) free(v->s[i]); free(v->s); memset(v, 0, sizeof *v); }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    static const char *ext[] = {"png", "jpg", "jpeg", "bmp"};
    for (size_t i = 0; dot && i < sizeof ext / sizeof *ext; i++) if (!strcasecmp(dot + 1, ext[i])) return 1;
    return 0;
}

/* path (a file) or the image files under path (a directory, recursively, sorted) onto v. */
static al_status collect(const char *path, strvec *v, int depth, al_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return al_seterr(err, "%s: no such file or directory", path);
    if (!S_ISDIR(sb.st_mode)) return sv_push(v, path) ? al_seterr(err, "out of memory") : AL_OK;
    if (depth > 16) return al_seterr(err, "%s: directories nested too deep", path);
    DIR *d = opendir(path);
    if (!d) return al_seterr(err, "%s: cannot open directory", path);
    strvec names = {0};
    al_status st = AL_OK;
    for (struct dirent *e; st == AL_OK && (e = readdir(d));)
        if (e->d_name[0] != '.' && sv_push(&names, e->d_name)) st = al_seterr(err, "out of memory");
    closedir(d);
    if (names.n) qsort(names.s, (size_t)names.n, sizeof *names.s, cmp_str);
    for (int i = 0; st == AL_OK && i < names.n; i++) {
        char p[4096];
        if (snprintf(p, sizeof p, "%s/%s", path, names.s[i]) >= (int)sizeof p) { st = al_seterr(err, "%s/%s: path too long", path, names.s[i]); break; }
        int dir = stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
        if (dir || is_image_name(names.s[i])) st = collect(p, v, depth + 1, err);
    }
    sv_free(&names);
    return st;
}

/* The files decoded into im (the model's input shape); a file that cannot be decoded is an error. */
static al_status decode_all(const strvec *files, const al_model_config *cfg, al_images *im, al_error *err)
{
    memset(im, 0, sizeof *im);
    size_t per = (size_t)cfg->channels * cfg->height * cfg->width;
    im->n = files->n; im->c = cfg->channels; im->h = cfg->height; im->w = cfg->width; im->classes = cfg->classes;
    im->pix = malloc((size_t)files->n * per);
    im->labels = calloc((size_t)files->n, sizeof *im->labels);
    if (!im->pix || !im->labels) return al_seterr(err, "out of memory for %d images", files->n);
    for (int i = 0; i < files->n; i++)
        if (al_image_file_load(files->s[i], cfg->channels, cfg->height, cfg->width, im->pix + (size_t)i * per, err) != AL_OK)
            return AL_ERR;
    return AL_OK;
}

/* ---- output ---- */
static void print_field(const char *s)
{
    if (!strpbrk(s, ",\"\n")) { fputs(s, stdout); return; }
    putchar('"');
    for (; *s; s++) { if (*s == '"') putchar('"'); putchar(*s); }
    putchar('"');
}

/* file,class,prob for every file: the argmax class and its softmax probability. */
static void print_rows(const strvec *files, const float *lg, int K, char **names, int nnames)
{
    printf("file,class,prob\n");
    for (int i = 0; i < files->n; i++) {
        const float *r = lg + (size_t)i * K;
        int k = 0;
        for (int j = 1; j < K; j++) if (r[j] > r[k]) k = j;
        double s = 0;
        for (int j = 0; j < K; j++) s += exp((double)r[j] - r[k]);
        print_field(files->s[i]);
        putchar(',');
        if (names && k < nnames) print_field(names[k]); else printf("%d", k);
        printf(",%.4f\n", 1.0 / s);
    }
    fflush(stdout);
}

static int predict_run(const predict_opts *o, int nargs, char **args, al_error *err)
{
    al_model m;
    float mean[4], std[4];
    char *meta = NULL, *joined = NULL, **names = NULL;
    int nnames = 0, rc = 1;
    if (al_model_load(o->load, &m, mean, std, &meta, err) != AL_OK) return 1;
    if ((joined = al_meta_get(meta, APP_CLASS_NAMES_KEY))) names = app_class_names_split(joined, &nnames);
    strvec files = {0};
    al_images im = {0};
    float *lg = NULL;
    for (int i = 0; i < nargs; i++) if (collect(args[i], &files, 0, err) != AL_OK) goto out;
    if (!files.n) { al_seterr(err, "no image files (.png, .jpg, .jpeg, .bmp) found"); goto out; }
    if (decode_all(&files, &m.cfg, &im, err) != AL_OK) goto out;
    if (!(lg = malloc((size_t)files.n * m.cfg.classes * sizeof *lg))) { al_seterr(err, "out of memory"); goto out; }
    double acc;
    if (al_eval_image_ex(&m, &im, mean, std, o->batch, &acc, NULL, lg, NULL, NULL, err) != AL_OK) goto out;
    print_rows(&files, lg, m.cfg.classes, names, nnames);
    rc = 0;
out:
    free(lg); al_images_free(&im); sv_free(&files);
    app_class_names_free(names, nnames); free(joined); free(meta);
    al_model_free(&m);
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    predict_opts o;
    int rc = parse_predict_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("predict")) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    if (!o.quiet) fprintf(stderr, "attnlab predict: %d threads\n", al_threads());
    al_error err = {{0}};
    rc = predict_run(&o, argc - optind, argv + optind, &err);
    if (rc) fprintf(stderr, "attnlab predict: %s\n", err.msg[0] ? err.msg : "failed");
    return rc;
}
