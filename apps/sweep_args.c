/* sweep_args.c — `attnlab sweep`'s command line into a sweep_cfg: lists, seeds and splits, model flags
 * as grid axes (which model takes which flag is train_flags.c's table), epoch rules, and the preset
 * files' settings (sweep_presets.c reads them; preset_apply below says what each key means). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/gnn.h"
#include "attnlab/io.h"
#include "attnlab/models.h"
#include "attnlab/molnet.h"
#include "attnlab/results.h"
#include "attnlab/seq.h"
#include "cli.h"
#include "sweep.h"
#include "train_flags.h"

int bad(const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "attnlab sweep: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 2;
}

/* ---------------- lists, seeds, splits ---------------- */
/* Split a comma list into items (pointers into a strdup'd copy kept in *keep). Returns the count or -1. */
int split_list(const char *opt, const char *s, char **items, int max, char **keep)
{
    if (!s || !*s) { bad("%s: empty list", opt); return -1; }
    char *c = strdup(s);
    if (!c) return -1;
    *keep = c;
    int n = 0;
    for (char *p = c;;) {
        char *q = strchr(p, ',');
        if (q) *q = 0;
        if (!*p) { bad("%s: empty item in list '%s'", opt, s); return -1; }
        if (n == max) { bad("%s: too many items in '%s'", opt, s); return -1; }
        items[n++] = p;
        if (!q) break;
        p = q + 1;
    }
    return n;
}

int parse_int(const char *s, long lo, long hi, long *out)
{
    char *e; errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || e == s || *e || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int parse_seeds(const char *opt, const char *s, sweep_cfg *c)
{
    char *items[MAXLIST], *keep = NULL;
    int n = split_list(opt, s, items, MAXLIST, &keep);
    c->nseeds = 0;
    for (int i = 0; i < n; i++) {
        long a, b;
        char *dash = strchr(items[i] + 1, '-');   /* + 1: a leading '-' is a negative number, refused below */
        if (dash) {
            *dash = 0;
            if (parse_int(items[i], 0, INT_MAX, &a) || parse_int(dash + 1, 0, INT_MAX, &b) || b < a) {
                *dash = '-';
                bad("%s: bad range '%s' in '%s' (want A-B with 0 <= A <= B)", opt, items[i], s);
                n = -1; break;
            }
        } else if (parse_int(items[i], 0, INT_MAX, &a)) {
            bad("%s: bad seed '%s' in '%s' (want a non-negative integer or A-B)", opt, items[i], s);
            n = -1; break;
        } else b = a;
        if (b - a + 1 > MAXLIST - c->nseeds) { bad("%s: more than %d seeds in '%s'", opt, MAXLIST, s); n = -1; break; }
        for (long v = a; v <= b; v++) {
            for (int j = 0; j < c->nseeds; j++)
                if (c->seeds[j] == v) { bad("%s: seed %ld appears twice in '%s'", opt, v, s); free(keep); return -1; }
            c->seeds[c->nseeds++] = v;
        }
    }
    free(keep);
    return n < 0 ? -1 : 0;
}

int same_split(const split *a, const split *b) { return a->kind == b->kind && a->n == b->n && a->frac == b->frac; }

int find_split(const sweep_cfg *c, const split *sp)
{
    for (int j = 0; j < c->nsplits; j++) if (same_split(&c->splits[j], sp)) return j;
    return -1;
}

/* The splits of a list into c->splits (once each) and, if use is given, marked in use[]; 0 or -1. */
int add_splits(const char *opt, const char *s, int kind, sweep_cfg *c, unsigned char *use)
{
    char *items[MAXLIST], *keep = NULL;
    int n = split_list(opt, s, items, MAXLIST, &keep);
    for (int i = 0; i < n; i++) {
        split sp = {kind, 0, 0};
        if (kind == SPLIT_FRAC) {
            char *e; errno = 0;
            sp.frac = strtod(items[i], &e);
            if (errno || *e || !(sp.frac > 0 && sp.frac <= 1)) { bad("%s: '%s' is not a fraction in (0, 1]", opt, items[i]); n = -1; break; }
        } else if (parse_int(items[i], 1, INT_MAX, &sp.n)) {
            bad("%s: '%s' is not a positive integer", opt, items[i]); n = -1; break;
        }
        int j = find_split(c, &sp);
        if (j >= 0 && (!use || use[j])) { bad("%s: '%s' appears twice", opt, items[i]); free(keep); return -1; }
        if (j < 0 && c->nsplits == MAXLIST) { bad("%s: too many items", opt); n = -1; break; }
        if (j < 0) { j = c->nsplits++; c->splits[j] = sp; }
        if (use) use[j] = 1;
    }
    free(keep);
    return n < 0 ? -1 : 0;
}

void split_str(const split *sp, char *buf, size_t n)
{
    switch (sp->kind) {
    case SPLIT_SIZE: snprintf(buf, n, "size=%ld", sp->n); break;
    case SPLIT_LPC:  snprintf(buf, n, "lpc=%ld", sp->n); break;
    case SPLIT_FRAC: snprintf(buf, n, "frac=%g", sp->frac); break;
    case SPLIT_ALL:  snprintf(buf, n, "all"); break;
    default:         snprintf(buf, n, "planetoid"); break;
    }
}

/* ---------------- models and model flags ---------------- */
/* The models a sweep can run, from the library's tables (image: the trained ones and conv-attn, which a
 * stage builds from a cnn checkpoint); "a, b or c" into buf. */
static const char *task_model_list(int task, char *buf, size_t n)
{
    const al_task *t = al_task_at(task);
    al_task_model m;
    int k = 0, total = 0;
    for (int i = 0; t->model_at(i, &m) == AL_OK; i++) total += m.trainable;
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; t->model_at(i, &m) == AL_OK && o < n; i++)
        if (m.trainable) { o += (size_t)snprintf(buf + o, n - o, "%s%s", k == 0 ? "" : k == total - 1 ? " or " : ", ", m.name); k++; }
    return buf;
}

int known_model(int task, const char *name)
{
    return al_task_model_find(al_task_at(task), name, NULL, NULL) == AL_OK;
}

int trained_model(int task, const char *name)
{
    al_task_model m;
    return al_task_model_find(al_task_at(task), name, &m, NULL) == AL_OK && m.trainable;
}

static int axis_applies(int task, const axis *a, const char *model)
{
    if (a->only && strcmp(a->only, model)) return 0;
    return train_model_flag(task, a->flag, model) == 1;
}
static int cmp_axis(const void *x, const void *y) { return strcmp(((const axis *)x)->flag, ((const axis *)y)->flag); }

/* The axes fit the task and each applies to some model of the stage; sorted by flag so the run ids do
 * not depend on the order of the command line. 0 or the exit status 2. */
static int check_axes(int task, stage *s)
{
    for (int i = 0; i < s->naxes; i++) {
        const axis *a = &s->axes[i];
        const unsigned need = train_model_flag_need(task, a->flag);
        if (!need)
            return bad("--%s is not a model flag of --task %s (see attnlab train%s%s --help)", a->flag, al_task_at(task)->name,
                       task == AL_TASK_IMAGE ? "" : " --task ", task == AL_TASK_IMAGE ? "" : al_task_at(task)->name);
        int used = 0;
        for (int m = 0; m < s->nmodels; m++) used |= axis_applies(task, a, s->models[m]);
        const char *kind = need & AP_ATTENTION ? "attention" : need & AP_WINDOWED ? "windowed" : need & AP_RECURRENT
                           ? "recurrent" : need & AP_LAYERS ? "graph-layer" : "trained";
        if (!used) return bad("--%s applies to none of the models of this sweep (%s models only)", a->flag, kind);
        for (int j = 0; j < i; j++) if (!strcmp(s->axes[j].flag, a->flag)) return bad("--%s given twice", a->flag);
    }
    qsort(s->axes, (size_t)s->naxes, sizeof *s->axes, cmp_axis);
    return 0;
}

/* Number of grid points of a model in a stage: the product of the sizes of the axes that apply to it,
 * saturating (al_size_mul) instead of overflowing. */
uint64_t model_points(const stage *s, const char *model)
{
    uint64_t n = 1;
    for (int i = 0; i < s->naxes; i++) if (axis_applies(s->task, &s->axes[i], model)) n = al_size_mul(n, (uint64_t)s->axes[i].nvals);
    return n;
}

/* Point p (0 <= p < model_points) of model as value indices per axis (-1: the axis does not apply);
 * appends " flag=value" of each applying axis to desc. */
void model_point(const stage *s, const char *model, long p, int *val, char *desc, size_t dn)
{
    for (int i = s->naxes - 1; i >= 0; i--) {
        const axis *a = &s->axes[i];
        if (!axis_applies(s->task, a, model)) { val[i] = -1; continue; }
        val[i] = (int)(p % a->nvals); p /= a->nvals;
    }
    for (int i = 0; i < s->naxes; i++)
        if (val[i] >= 0) {
            size_t o = strlen(desc);
            snprintf(desc + o, dn - o, " %s=%s", s->axes[i].flag, s->axes[i].vals[val[i]]);
        }
}

/* A swept flag (vals a comma list; only: the one model it applies to, or NULL) appended to stage s; 0 or 2. */
int add_axis(stage *s, const char *flag, const char *vals, const char *only, const char *what)
{
    if (s->naxes == MAXAXES) return bad("too many swept flags (at most %d)", MAXAXES);
    axis *a = &s->axes[s->naxes++];
    a->flag = flag; a->only = only;
    char opt[48];
    if (!what) { snprintf(opt, sizeof opt, "--%s", flag); what = opt; }
    a->nvals = split_list(what, vals, a->vals, MAXLIST, &a->buf);
    return a->nvals < 0 ? 2 : 0;
}

/* ---------------- epochs ---------------- */
long epochs_for(const sweep_cfg *c, const stage *s, const char *model, const split *sp)
{
    (void)c;
    if (!trained_model(s->task, model)) return 0;   /* built, not trained */
    const epoch_rule *r = &s->epochs;
    for (int i = 0; i < s->nover; i++)
        if ((!s->over[i].model[0] || !strcmp(s->over[i].model, model)) && sp->n >= s->over[i].from_size) {
            r = &s->over[i].rule;
            break;
        }
    if (r->kind != ER_STEPS) return r->kind == ER_FIXED ? r->n : 0;
    long steps = sp->n / BATCH + (sp->n % BATCH != 0);   /* ceil(n / BATCH) without n + BATCH - 1 */
    if (steps < 1) steps = 1;
    long e = r->n / steps + (r->n % steps != 0);        /* r->n <= MAXSTEPS: no overflow */
    return e < r->min ? r->min : e;
}

/* "default", "N" or "steps N [min M]" (N, M in 1..MAXEPOCHS; a step budget N in 1..MAXSTEPS); 0 or -1. */
int parse_epochs(const char *s, epoch_rule *r)
{
    long n, m = 1;
    char num[24], word[16], min[24], extra;
    if (!strcmp(s, "default")) { *r = (epoch_rule){ER_DEFAULT, 0, 0}; return 0; }
    if (!parse_int(s, 1, MAXEPOCHS, &n)) { *r = (epoch_rule){ER_FIXED, n, 0}; return 0; }
    int k = sscanf(s, "steps %23s %15s %23s %c", num, word, min, &extra);   /* numbers as text: no %ld past a long */
    if ((k == 1 || (k == 3 && !strcmp(word, "min") && !parse_int(min, 1, MAXEPOCHS, &m))) && !parse_int(num, 1, MAXSTEPS, &n)) {
        *r = (epoch_rule){ER_STEPS, n, m};
        return 0;
    }
    return -1;
}

/* ---------------- the command line ---------------- */
typedef struct cli_args {
    const char *preset, *models, *sizes, *lpc, *frac, *seeds;
    int planetoid, epochs, freeform;
    struct { const char *flag, *vals; } axes[MAXAXES]; int naxes;
} cli_args;

enum { O_PRESET = 256, O_TASK, O_DATA, O_MODELS, O_SIZES, O_LPC, O_FRAC, O_PLANETOID, O_SEEDS, O_EPOCHS,
       O_CSV, O_JOBS, O_PLOT, O_DRY, O_MAXMEM, O_THREADS, O_AXIS };

/* The options: the sweep's own, then every task's model flags (each once). */
static const struct option *sweep_options(void)
{
    static const struct option own[] = {
        {"preset", required_argument, 0, O_PRESET}, {"task", required_argument, 0, O_TASK},
        {"data", required_argument, 0, O_DATA}, {"models", required_argument, 0, O_MODELS},
        {"train-sizes", required_argument, 0, O_SIZES}, {"labels-per-class", required_argument, 0, O_LPC},
        {"train-frac", required_argument, 0, O_FRAC}, {"planetoid", no_argument, 0, O_PLANETOID},
        {"seeds", required_argument, 0, O_SEEDS}, {"epochs", required_argument, 0, O_EPOCHS},
        {"csv", required_argument, 0, O_CSV}, {"jobs", required_argument, 0, O_JOBS},
        {"plot", required_argument, 0, O_PLOT}, {"dry-run", no_argument, 0, O_DRY},
        {"max-memory", required_argument, 0, O_MAXMEM}, {"threads", required_argument, 0, O_THREADS},
        {"help", no_argument, 0, 'h'}};
    static struct option all[128];
    if (all[0].name) return all;
    int n = (int)(sizeof own / sizeof *own);
    memcpy(all, own, sizeof own);
    const char *f;
    for (int i = 0; (f = train_model_flag_name(i)) && n < 127; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++) seen |= !strcmp(all[j].name, f);
        if (!seen) all[n++] = (struct option){f, required_argument, 0, O_AXIS};
    }
    return all;
}

/* One option into c / a; 0, -1 (--help) or 2. */
static int cli_option(int ch, const char *name, const char *arg, sweep_cfg *c, cli_args *a, char **argv)
{
    long v;
    switch (ch) {
    case 'h': return -1;
    case O_AXIS:
        if (a->naxes == MAXAXES) return bad("too many swept flags (at most %d)", MAXAXES);
        a->axes[a->naxes].flag = name; a->axes[a->naxes++].vals = arg;
        return 0;
    case O_PRESET: a->preset = arg; return 0;
    case O_TASK: c->task = arg; a->freeform = 1; return 0;
    case O_DATA: c->data = arg; return 0;
    case O_MODELS: a->models = arg; a->freeform = 1; return 0;
    case O_SIZES: a->sizes = arg; a->freeform = 1; return 0;
    case O_LPC: a->lpc = arg; return 0;
    case O_FRAC: a->frac = arg; return 0;
    case O_PLANETOID: a->planetoid = 1; a->freeform = 1; return 0;
    case O_SEEDS: a->seeds = arg; return 0;
    case O_EPOCHS:
        if (parse_int(arg, 1, MAXEPOCHS, &v)) return bad("--epochs: '%s' is not an integer in 1..%d", arg, MAXEPOCHS);
        a->epochs = (int)v; return 0;
    case O_CSV: c->csv = arg; return 0;
    case O_JOBS:
        if (parse_int(arg, 1, MAXJOBS, &v)) return bad("--jobs: '%s' is not an integer in 1..%d", arg, MAXJOBS);
        c->jobs = (int)v; return 0;
    case O_PLOT: c->plot_out = arg; return 0;
    case O_MAXMEM: if (cli_max_memory("sweep", arg)) return 2; c->max_memory = arg; return 0;
    case O_THREADS: return cli_threads("sweep", arg, &c->threads) ? 2 : 0;
    case O_DRY: c->dry_run = 1; return 0;
    default: return bad("unknown or incomplete option '%s' (see attnlab sweep --help)", argv[optind - 1]);
    }
}

/* --task ... --models ...: one stage from the command line; 0 or 2. */
static int freeform(sweep_cfg *c, cli_args *a)
{
    stage *s = &c->stages[0];
    c->nstages = 1;
    if (!c->task) return bad("give --preset NAME or --task image|graph|sequence|speech|molecule (see attnlab sweep --help)");
    a->freeform |= a->lpc || a->frac;
    c->taskid = task_find(c->task);
    if (c->taskid < 0) return bad("--task: unknown task '%s' (expected image, graph, sequence, speech or molecule)", c->task);
    s->task = c->taskid; s->name = ""; s->from = -1;
    if (!a->models) return bad("--models is required");
    s->nmodels = split_list("--models", a->models, s->models, MAXLIST, &s->models_buf);
    if (s->nmodels < 0) return 2;
    for (int i = 0; i < s->nmodels; i++) {
        char list[256];
        if (!trained_model(c->taskid, s->models[i]))
            return bad("--models: unknown %s model '%s' (expected %s)", c->task, s->models[i],
                       task_model_list(c->taskid, list, sizeof list));
        for (int j = 0; j < i; j++)
            if (!strcmp(s->models[i], s->models[j])) return bad("--models: '%s' appears twice", s->models[i]);
    }
    const int t = c->taskid;
    if (t == AL_TASK_GRAPH) {
        if (a->sizes) return bad("--train-sizes is for --task image, sequence and speech; graphs take --labels-per-class / --train-frac");
        if (!a->lpc && !a->frac && !a->planetoid) return bad("--task graph needs --labels-per-class LIST, --train-frac LIST or --planetoid");
        if ((a->lpc && add_splits("--labels-per-class", a->lpc, SPLIT_LPC, c, s->use)) || (a->frac && add_splits("--train-frac", a->frac, SPLIT_FRAC, c, s->use)))
            return 2;
        if (a->planetoid) { s->use[c->nsplits] = 1; c->splits[c->nsplits++] = (split){SPLIT_PLANETOID, 0, 0}; }
    } else {
        if (a->lpc || a->planetoid || (a->frac && t != AL_TASK_MOLECULE))
            return bad("--labels-per-class and --planetoid are for --task graph, --train-frac for graph and molecule");
        if (a->sizes && t == AL_TASK_MOLECULE) return bad("--train-sizes is not for --task molecule (--train-frac F,...)");
        if (!a->sizes && (t == AL_TASK_IMAGE || t == AL_TASK_SEQUENCE)) return bad("--task %s needs --train-sizes LIST", c->task);
        if ((a->sizes && add_splits("--train-sizes", a->sizes, SPLIT_SIZE, c, s->use)) || (a->frac && add_splits("--train-frac", a->frac, SPLIT_FRAC, c, s->use)))
            return 2;
        if (!c->nsplits) { s->use[0] = 1; c->splits[c->nsplits++] = (split){SPLIT_ALL, 0, 0}; }
    }
    if (!a->seeds) return bad("--seeds is required (e.g. --seeds 1-3)");
    if (!c->csv) return bad("--csv FILE is required");
    return 0;
}

/* The command line's model flags into every stage whose models take them; 0 or 2. */
static int cli_axes(sweep_cfg *c, const cli_args *a)
{
    for (int i = 0; i < a->naxes; i++) {
        int placed = 0;
        for (int k = 0; k < c->nstages; k++) {
            stage *s = &c->stages[k];
            int used = 0;
            for (int m = 0; m < s->nmodels; m++) used |= train_model_flag(c->taskid, a->axes[i].flag, s->models[m]) == 1;
            if (c->nstages > 1 && !used) continue;            /* one stage: check_axes says why */
            if (add_axis(s, a->axes[i].flag, a->axes[i].vals, NULL, NULL)) return 2;
            placed = 1;
        }
        if (!placed && !train_model_flag_need(c->taskid, a->axes[i].flag))
            return bad("--%s is not a model flag of --task %s", a->axes[i].flag, c->task);
        if (!placed) return bad("--%s applies to none of the models of this sweep", a->axes[i].flag);
    }
    return 0;
}

/* A preset with the command line's restrictions: seeds, splits, epochs, datasets; 0 or 2. */
static int preset_with_cli(sweep_cfg *c, const cli_args *a)
{
    static char csv_default[PATH_MAX], plot_default[PATH_MAX];
    if (a->freeform)
        return bad("--preset %s sets task, models and sizes; use --csv, --seeds, --epochs, --jobs, --threads only (graph "
                   "presets: also --labels-per-class / --train-frac to restrict their splits)", a->preset);
    const char *user_data = c->data, *user_csv = c->csv;
    c->data = NULL;
    if (preset_apply(c, a->preset)) return 2;
    if (user_csv) c->csv = user_csv;
    if (user_data && c->data) return bad("--preset %s sets its datasets; --data is not for it", a->preset);
    if (user_data) c->data = user_data;
    if ((a->lpc || a->frac) && preset_subset(c, a->lpc, a->frac)) return 2;
    if (!c->csv) { snprintf(csv_default, sizeof csv_default, "results/%s.csv", c->preset); c->csv = csv_default; }
    if (c->nplots && !c->plot_out) { snprintf(plot_default, sizeof plot_default, "results/%s.png", c->preset); c->plot_out = plot_default; }
    return 0;
}

/* ---------------- the size of the plan ---------------- */
/* The factors of the grid's size, in the order a refusal looks at them: models, splits, seeds, datasets,
 * then each swept flag (once, in however many stages). */
enum { F_MODELS, F_SPLITS, F_SEEDS, F_DATA, F_AXES };
#define MAXFLAGS (MAXSTAGES * MAXAXES)

static int grid_flags(const sweep_cfg *c, const char **flags)
{
    int n = 0;
    for (int k = 0; k < c->nstages; k++)
        for (int i = 0; i < c->stages[k].naxes; i++) {
            int j = 0;
            while (j < n && strcmp(flags[j], c->stages[k].axes[i].flag)) j++;
            if (j == n && n < MAXFLAGS) flags[n++] = c->stages[k].axes[i].flag;
        }
    return n;
}

/* The runs of the grid with its first `on` factors counted in full and each later one as a single
 * value (a list of models as its largest model); every product and sum saturating (al_size_mul,
 * al_size_add), never overflowing. on = F_AXES + nflags: the plan's runs. */
static uint64_t grid_runs(const sweep_cfg *c, const char *const *flags, int nflags, int on)
{
    uint64_t total = 0;
    for (int k = 0; k < c->nstages; k++) {
        const stage *s = &c->stages[k];
        uint64_t nsp = 0, points = 0;
        for (int j = 0; j < c->nsplits; j++) nsp += s->use[j];
        if (on <= F_SPLITS && nsp > 1) nsp = 1;
        for (int m = 0; m < s->nmodels; m++) {
            uint64_t p = 1;
            for (int i = 0; i < s->naxes; i++) {
                int f = 0;
                while (f < nflags && strcmp(flags[f], s->axes[i].flag)) f++;
                if (F_AXES + f < on && axis_applies(s->task, &s->axes[i], s->models[m])) p = al_size_mul(p, (uint64_t)s->axes[i].nvals);
            }
            points = on > F_MODELS ? al_size_add(points, p) : p > points ? p : points;
        }
        uint64_t per = al_size_mul(nsp, points);
        if (on > F_SEEDS) per = al_size_mul(per, (uint64_t)c->nseeds);
        if (on > F_DATA) per = al_size_mul(per, (uint64_t)c->ndata);
        total = al_size_add(total, per);
    }
    return total;
}

uint64_t sweep_runs(const sweep_cfg *c)
{
    const char *flags[MAXFLAGS];
    const int nf = grid_flags(c, flags);
    return grid_runs(c, flags, nf, F_AXES + nf);
}

/* Factor f as "--heads (400 values)" into buf. */
static void factor_name(const sweep_cfg *c, const char *const *flags, int f, char *buf, size_t n)
{
    static const char *const split_opt[] = {"--train-sizes", "--labels-per-class", "--train-frac", "--planetoid", "--train-sizes"};
    const char *opt = f == F_MODELS ? "--models" : f == F_SPLITS ? split_opt[c->splits[0].kind] : f == F_SEEDS ? "--seeds" : "--data";
    long vals = f == F_SPLITS ? c->nsplits : f == F_SEEDS ? c->nseeds : f == F_DATA ? c->ndata : 0;
    for (int k = 0; f == F_MODELS && k < c->nstages; k++) if (c->stages[k].nmodels > vals) vals = c->stages[k].nmodels;
    for (int k = 0; f >= F_AXES && k < c->nstages; k++)
        for (int i = 0; i < c->stages[k].naxes; i++)
            if (!strcmp(c->stages[k].axes[i].flag, flags[f - F_AXES]) && c->stages[k].axes[i].nvals > vals) vals = c->stages[k].axes[i].nvals;
    if (f >= F_AXES) snprintf(buf, n, "--%s (%ld values)", flags[f - F_AXES], vals);
    else snprintf(buf, n, "%s (%ld value%s)", opt, vals, vals == 1 ? "" : "s");
}

/* At most MAXRUNS runs, each of at most MAXEPOCHS epochs; else one line naming the flag (the first factor
 * that takes the grid past MAXRUNS) or the epoch rule. 0 or 2. */
static int check_plan(const sweep_cfg *c)
{
    const char *flags[MAXFLAGS];
    const int nf = grid_flags(c, flags);
    const uint64_t total = grid_runs(c, flags, nf, F_AXES + nf);
    if (total > MAXRUNS) {
        int f = 0;
        while (f + 1 < F_AXES + nf && grid_runs(c, flags, nf, f + 1) <= MAXRUNS) f++;
        char name[96], all[32];
        factor_name(c, flags, f, name, sizeof name);
        if (total == UINT64_MAX) snprintf(all, sizeof all, "more than 2^64");
        else snprintf(all, sizeof all, "%llu", (unsigned long long)total);
        return bad("%s: the grid has more than %d runs (%s in all)", name, MAXRUNS, all);
    }
    for (int k = 0; k < c->nstages; k++)
        for (int j = 0; j < c->nsplits; j++)
            for (int m = 0; c->stages[k].use[j] && m < c->stages[k].nmodels; m++) {
                const long e = epochs_for(c, &c->stages[k], c->stages[k].models[m], &c->splits[j]);
                if (e <= MAXEPOCHS) continue;
                char sp[48];
                split_str(&c->splits[j], sp, sizeof sp);
                return bad("epochs = steps N: %s at %s gets %ld epochs, more than %d", c->stages[k].models[m], sp, e, MAXEPOCHS);
            }
    return 0;
}

/* Every dataset of the --data list once, the defaults, the size of the plan; 0 or 2. */
static int finish(sweep_cfg *c)
{
    if (!c->data) c->data = al_task_at(c->taskid)->default_data;
    if (!c->data) return bad("--task speech needs --data CORPUS (make one: attnlab data speech-digits --out CORPUS)");
    c->ndata = split_list("--data", c->data, c->datas, MAXLIST, &c->data_buf);   /* a list: each dataset a grid point */
    if (c->ndata < 0) return 2;
    for (int i = 0; i < c->ndata; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(c->datas[i], c->datas[j])) return bad("--data: '%s' appears twice", c->datas[i]);
    if (!*c->csv) return bad("--csv: empty file name");
    for (int k = 0; k < c->nstages; k++) if (!c->stages[k].evals) c->stages[k].evals = EVALS;
    return check_plan(c);
}

int parse_args(int argc, char **argv, sweep_cfg *c)
{
    const struct option *opts = sweep_options();
    cli_args a;
    memset(&a, 0, sizeof a);
    c->jobs = 1;
    optind = 0; opterr = 0;
    int li, ch, rc;
    while ((ch = getopt_long(argc, argv, "h", opts, &li)) != -1)
        if ((rc = cli_option(ch, opts[li].name, optarg, c, &a, argv))) return rc;
    if (optind < argc) return bad("unexpected argument '%s' (see attnlab sweep --help)", argv[optind]);
    if (a.preset ? preset_with_cli(c, &a) : freeform(c, &a)) return 2;
    if (a.epochs)
        for (int k = 0; k < c->nstages; k++) { c->stages[k].epochs = (epoch_rule){ER_FIXED, a.epochs, 0}; c->stages[k].nover = 0; }
    if (a.seeds && parse_seeds("--seeds", a.seeds, c)) return 2;
    if (cli_axes(c, &a)) return 2;
    for (int k = 0; k < c->nstages; k++) if (check_axes(c->taskid, &c->stages[k])) return 2;
    return finish(c);
}

void free_cfg(sweep_cfg *c)
{
    for (int k = 0; k < c->nstages; k++) {
        free(c->stages[k].models_buf);
        for (int i = 0; i < c->stages[k].naxes; i++) free(c->stages[k].axes[i].buf);
    }
    free(c->data_buf);
    free(c->plots_buf);
    preset_release();
}
