/* cmd_predict.c — attnlab predict: classify image files with a trained image checkpoint; one CSV row
 * per file (file,class,prob); or, with a molecule checkpoint, one row per molecule of a molecules file
 * (molecule,name,prediction). parse → load the model → collect and decode the inputs → evaluate → print. */
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
#include "attnlab/molnet.h"
#include "attnlab/task.h"
#include "attnlab/train.h"

typedef struct predict_opts { const char *load; int threads, batch, quiet, seen_batch; } predict_opts;
typedef struct strvec { char **s; int n, cap; } strvec;

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab predict --load MODEL.safetensors FILE|DIR... [OPTIONS]\n"
        "       attnlab predict --load MOLECULE-MODEL.safetensors MOLECULES.txt|DIR|NAME [OPTIONS]\n\n"
        "Classifies image files (PNG, JPEG, BMP) with a checkpoint of attnlab train --save: each is converted\n"
        "to the model's channels, resized to its input as image folders are, normalised with the\n"
        "checkpoint's mean and std. A DIR stands for the image files under it (recursively, sorted).\n"
        "Prints CSV on stdout: a header file,class,prob, then one row per file with the predicted class's\n"
        "name (its index for checkpoints that store no class names) and its softmax probability.\n\n"
        "A molecule checkpoint (attnlab train --task molecule --save) takes one molecules file (the format of\n"
        "datasets/README.md; its atoms renumbered to the model's element vocabulary, an element the model\n"
        "never saw is an error), a directory holding molecules.txt, or a dataset NAME (found as train --data\n"
        "finds it, e.g. esol). Prints CSV: a header\n"
        "molecule,name,prediction, then one row per molecule: its number in the file, its name (from the\n"
        "coords.txt beside a file named molecules.txt or in DIR; empty without one) and the prediction in\n"
        "the target's units (a 0/1 target: the probability of class 1). Targets in the file are ignored.\n\n"
        "  --load FILE          image checkpoint (attnlab train --save)\n"
        "  --batch N, --eval-batch N   images per forward pass (default 64; images only): memory, not results\n"
        "  --threads N          OpenMP threads\n"
        CLI_MAX_MEMORY_HELP
        "  --quiet              no thread line on stderr\n");
}

/* ---- parse ---- */
static int parse_predict_opts(int argc, char **argv, predict_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 64;
    static const struct option lo[] = {{"load", 1, 0, 'l'}, {"threads", 1, 0, 't'}, {"batch", 1, 0, 'b'}, {"eval-batch", 1, 0, 'b'},
                                       {"quiet", 0, 0, 'q'}, {"max-memory", 1, 0, 'm'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'l': o->load = optarg; break;
        case 't': if (cli_threads("predict", optarg, &o->threads)) return 2; break;
        case 'b': if (cli_int32("predict", "--batch", optarg, 1, 1 << 20, &o->batch)) return 2; o->seen_batch = 1; break;
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
    const long perm = app_permute_seed(meta);   /* a model of permuted pixels sees its images permuted alike */
    if (perm == -2) { al_seterr(err, "%s: a bad %s in the metadata", o->load, APP_PERMUTE_KEY); goto out; }
    if (app_images_permute(&im, perm, err) != AL_OK) goto out;
    if (!(lg = malloc((size_t)files.n * m.cfg.classes * sizeof *lg))) { al_seterr(err, "out of memory"); goto out; }
    double acc;
    if (al_model_evaluate_ex(&m, &im, mean, std, o->batch, &acc, NULL, lg, NULL, NULL, err) != AL_OK) goto out;
    print_rows(&files, lg, m.cfg.classes, names, nnames);
    rc = 0;
out:
    free(lg); al_images_free(&im); sv_free(&files);
    app_class_names_free(names, nnames); free(joined); free(meta);
    al_model_free(&m);
    return rc;
}

/* ---- molecules ---- */
/* The molecules of path (a file, DIR/molecules.txt, or a dataset NAME looked up as --data is) into ms,
 * with the names of the coords.txt beside a molecules.txt when there is one. */
static al_status read_molecules(const char *path, al_molset *ms, al_error *err)
{
    struct stat sb;
    char file[4200], coords[4200], dir[4096];
    int isdir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!isdir && stat(path, &sb) != 0 && !strchr(path, '/')) {   /* not a file here: a dataset name */
        if (al_molset_resolve(path, dir, sizeof dir, err) != AL_OK) return AL_ERR;
        path = dir; isdir = 1;
    }
    snprintf(file, sizeof file, isdir ? "%s/molecules.txt" : "%s", path);
    if (al_molset_read(ms, file, err) != AL_OK) return AL_ERR;
    const char *slash = strrchr(file, '/'), *base = slash ? slash + 1 : file;
    if (strcmp(base, "molecules.txt")) return AL_OK;
    snprintf(coords, sizeof coords, "%.*scoords.txt", (int)(base - file), file);
    if (stat(coords, &sb) != 0) return AL_OK;
    return al_molset_read_coords(ms, coords, err);
}

static int predict_mol(const predict_opts *o, int nargs, char **args, al_error *err)
{
    if (nargs != 1) { al_seterr(err, "a molecule checkpoint takes one molecules file or directory, got %d", nargs); return 2; }
    if (o->seen_batch) { al_seterr(err, "--batch does not apply to molecule checkpoints"); return 2; }
    al_molset ms; memset(&ms, 0, sizeof ms);
    al_molnet m;
    al_ctx *c = NULL;
    int *ids = NULL, rc = 1, have = 0;
    float *pred = NULL;
    if (read_molecules(args[0], &ms, err) != AL_OK || al_molnet_load(o->load, &ms, &m, NULL, err) != AL_OK) goto out;
    have = 1;
    if (m.cfg.target < 0) m.cfg.target = 0;   /* the file's targets are not used */
    ids = malloc((size_t)ms.nmol * sizeof *ids); pred = malloc((size_t)ms.nmol * sizeof *pred);
    if (!ids || !pred || !(c = al_ctx_new(0))) { al_seterr(err, "out of memory"); goto out; }
    for (int i = 0; i < ms.nmol; i++) ids[i] = i;
    al_mol_eval ev;
    if (al_molnet_evaluate(&m, &ms, ids, ms.nmol, c, &ev, pred, err) != AL_OK) goto out;
    printf("molecule,name,prediction\n");
    for (int i = 0; i < ms.nmol; i++) {
        printf("%d,", i);
        print_field(al_molset_name(&ms, i) ? al_molset_name(&ms, i) : "");
        printf(",%.6g\n", (double)pred[i]);
    }
    fflush(stdout);
    rc = 0;
out:
    al_ctx_free(c);
    free(ids); free(pred);
    if (have) al_molnet_free(&m);
    al_molset_free(&ms);
    return rc;
}

/* What predict runs on the checkpoints of each task (by AL_TASK_*; NULL: predict does not take that task). */
static int (*const predictors[AL_TASK_COUNT])(const predict_opts *, int, char **, al_error *) = {
    [AL_TASK_IMAGE] = predict_run, [AL_TASK_MOLECULE] = predict_mol};

int cmd_predict(int argc, char **argv)
{
    predict_opts o;
    int rc = parse_predict_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("predict")) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    if (!o.quiet) fprintf(stderr, "attnlab predict: %d threads\n", al_threads());
    al_error err = {{0}};
    al_error te = {{0}};
    const al_task *t = al_task_of_checkpoint(o.load, &te);   /* unreadable: the image loader says why */
    if (t && !predictors[t->id])
        rc = 1, al_seterr(&err, "%s is a %s checkpoint; predict takes image and molecule checkpoints", o.load, t->name);
    else rc = predictors[t ? t->id : AL_TASK_IMAGE](&o, argc - optind, argv + optind, &err);
    if (rc) fprintf(stderr, "attnlab predict: %s\n", err.msg[0] ? err.msg : "failed");
    return rc;
}
