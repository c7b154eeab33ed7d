/* train_flags.c — the applicability table of `attnlab train`'s flags (train_flags.h) and its check. */
#include <stdio.h>
#include <string.h>
#include "train_flags.h"
#include "attnlab/gnn.h"
#include "attnlab/models.h"
#include "attnlab/molnet.h"
#include "attnlab/seq.h"

#define TF_ROW(id, nm, arg, img, gr) [TF_##id] = {nm, arg, img, gr},
const train_flag train_flags[TF_NFLAGS] = { TRAIN_FLAGS(TF_ROW) };
#undef TF_ROW

const struct option *train_flags_options(void)
{
    static struct option lo[TF_NFLAGS + 1];
    for (int i = 0; i < TF_NFLAGS; i++)
        lo[i] = (struct option){train_flags[i].name, train_flags[i].has_arg, 0, TF_BASE + i};
    return lo;
}

static unsigned image_props(const al_model_kind *k)
{
    return AP_ANY | (k->trainable ? AP_TRAINABLE : 0u) | (k->attention ? AP_ATTENTION : 0u) |
           (k->windowed ? AP_WINDOWED : 0u);
}
static unsigned graph_props(const al_gnn_model *k)
{
    return AP_ANY | (k->attention ? AP_ATTENTION : 0u) | (k->capture ? AP_ATTNMAP : 0u);
}

const char *const task_names[TASK_COUNT] = {"image", "graph", "sequence", "speech", "molecule"};

int task_find(const char *name)
{
    for (int t = 0; name && t < TASK_COUNT; t++) if (!strcmp(name, task_names[t])) return t;
    return -1;
}

unsigned train_model_props(int task, const char *model)
{
    if (task == TASK_IMAGE) {
        const al_model_kind *k = al_model_kind_find(model);
        return k ? image_props(k) : 0;
    }
    if (task == TASK_SEQUENCE || task == TASK_SPEECH) {
        const al_seq_kind *k = al_seq_kind_find(model);
        return k ? AP_ANY | (k->attention ? AP_ATTENTION : 0u) | (k->windowed ? AP_WINDOWED : 0u) |
                   (k->recurrent ? AP_RECURRENT : 0u) : 0;
    }
    if (task == TASK_MOLECULE) {
        const al_mol_model *k = al_mol_model_find(model);
        return k ? AP_ANY | (k->attention ? AP_ATTENTION : 0u) | (k->layers ? AP_LAYERS : 0u) : 0;
    }
    const al_gnn_model *k = al_gnn_model_find(model);
    return k ? graph_props(k) : 0;
}

/* ---- model flags (what a sweep may set per run) ---- */
typedef struct seq_model_flag { const char *name; unsigned need[3]; } seq_model_flag;   /* sequence, speech, molecule */
#define SMF_ROW(nm, sq, sp, mo) {nm, {sq, sp, mo}},
static const seq_model_flag seq_model_flags[] = { SEQ_MODEL_FLAGS(SMF_ROW) };
#undef SMF_ROW
#define NSEQFLAGS (int)(sizeof seq_model_flags / sizeof seq_model_flags[0])

/* Image and graph flags that are not model flags: the run's own, set by whoever runs it, and those that
 * depend on the data or the split rather than the model. */
static int run_level(int f)
{
    static const int own[] = {TF_TASK, TF_MODEL, TF_DATA, TF_TRAIN_SIZE, TF_EPOCHS, TF_SEED, TF_SEEDS, TF_THREADS,
                              TF_MAX_MEMORY, TF_INIT_FROM, TF_SPLIT, TF_EVAL_EVERY, TF_WEIGHT_DECAY, TF_CHECKPOINT_EVERY,
                              TF_CHECKPOINT, TF_CSV, TF_SAVE, TF_HELP};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) if (own[i] == f) return 1;
    const unsigned data = AP_FOLDER | AP_IDX | AP_PERCLASS | AP_FRAC | AP_SEEDS | AP_ATTNMAP;
    return !train_flags[f].has_arg || ((train_flags[f].image | train_flags[f].graph) & data);
}

unsigned train_model_flag_need(int task, const char *flag)
{
    unsigned need = 0;
    if (task == TASK_IMAGE || task == TASK_GRAPH) {
        for (int f = 0; f < TF_NFLAGS; f++)
            if (!strcmp(train_flags[f].name, flag) && !run_level(f))
                need = task == TASK_IMAGE ? train_flags[f].image : train_flags[f].graph;
    } else if (task >= TASK_SEQUENCE && task < TASK_COUNT) {
        for (int i = 0; i < NSEQFLAGS; i++)
            if (!strcmp(seq_model_flags[i].name, flag)) need = seq_model_flags[i].need[task - TASK_SEQUENCE];
    }
    return need;
}

int train_model_flag(int task, const char *flag, const char *model)
{
    unsigned need = train_model_flag_need(task, flag);
    return need ? (need & ~train_model_props(task, model)) == 0 : -1;
}

const char *train_model_flag_name(int i)
{
    for (int f = 0; f < TF_NFLAGS; f++)
        if (!run_level(f) && i-- == 0) return train_flags[f].name;
    return i < NSEQFLAGS ? seq_model_flags[i].name : NULL;
}

/* "sa, local": the task's models that have property p. */
static void models_with(int task, unsigned p, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    int count = task == TASK_IMAGE ? al_model_kind_count() : al_gnn_model_count();
    for (int i = 0; i < count; i++) {
        const char *name = task == TASK_IMAGE ? al_model_kind_at(i)->name : al_gnn_model_at(i)->name;
        unsigned props = task == TASK_IMAGE ? image_props(al_model_kind_at(i)) : graph_props(al_gnn_model_at(i));
        if ((props & p) && o < n) o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", name);
    }
}

/* Why flag f does not apply given the missing property p (one bit). */
static void why(const flag_ctx *fc, int f, unsigned p)
{
    const char *flag = train_flags[f].name, *task = fc->task == TASK_IMAGE ? "image" : "graph";
    char models[128];
    models_with(fc->task, p, models, sizeof models);
    switch (p) {
    case AP_TRAINABLE: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: it is not trained (it is built "
                               "from the --init-from checkpoint)\n", flag, fc->model); break;
    case AP_ATTENTION: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: it has no attention (only to %s)\n",
                               flag, fc->model, models); break;
    case AP_ATTNMAP: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: %s (only to %s)\n", flag, fc->model,
                             train_model_props(fc->task, fc->model) & AP_ATTENTION ? "its attention weights are not written"
                                                                                    : "it has no attention", models); break;
    case AP_WINDOWED: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: its attention is not windowed "
                              "(only to %s)\n", flag, fc->model, models); break;
    case AP_FOLDER: fprintf(stderr, "attnlab train: --%s applies to image folders only, not to --data fashion-mnist\n", flag); break;
    case AP_IDX: fprintf(stderr, "attnlab train: --%s locates the Fashion-MNIST files; it does not apply to an image "
                         "folder (--data DIR)\n", flag); break;
    case AP_PERCLASS: fprintf(stderr, "attnlab train: --%s applies to --split per-class only\n", flag); break;
    case AP_FRAC: fprintf(stderr, "attnlab train: --%s applies to --split frac only\n", flag); break;
    case AP_SEEDS: fprintf(stderr, "attnlab train: --%s applies only with several --seeds\n", flag); break;
    default: fprintf(stderr, "attnlab train: --%s is not an option of the %s task (it applies to --task %s only)\n",
                     flag, task, fc->task == TASK_IMAGE ? "graph" : "image");
    }
}

int train_flags_check(const flag_ctx *fc, const unsigned char *seen)
{
    for (int f = 0; f < TF_NFLAGS; f++) {
        if (!seen[f]) continue;
        unsigned need = fc->task == TASK_IMAGE ? train_flags[f].image : train_flags[f].graph;
        if (!need) { why(fc, f, 0); return 2; }
        unsigned missing = need & ~fc->props;
        if (missing) { why(fc, f, missing & -missing); return 2; }
    }
    return 0;
}
