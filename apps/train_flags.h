/* train_flags.h — every option of `attnlab train` in one table: its name, whether it takes a value,
 * and to which task, model and data it applies. A flag given where it does not apply is an error
 * (exit 2, one line naming the flag and why), never silently ignored. Both task parsers use the
 * same getopt table (train_flags_options), so a flag of the other task is recognised and refused
 * with the reason rather than as "unknown". --task molecule has its own option table and checks them
 * against the molecule model table (al_mol_model: attention → --heads, graph layers → --depth, --dim,
 * --readout; apps/cmd_train_mol.c). */
#ifndef ATTNLAB_TRAIN_FLAGS_H
#define ATTNLAB_TRAIN_FLAGS_H
#include <getopt.h>

/* What a flag needs (AP_*: where it applies), per task (0 in a task's column: the flag is not an option of that task). */
enum {
    AP_ANY = 1,             /* every model of the task */
    AP_TRAINABLE = 2,       /* image models that are trained (not conv-attn) */
    AP_ATTENTION = 4,       /* models with attention (image: transformers; graph: gat, gat-full, gatv2, gt, gt-full) */
    AP_WINDOWED = 8,        /* windowed attention (local) */
    AP_FOLDER = 16,         /* --data is an image folder */
    AP_IDX = 32,            /* --data is fashion-mnist */
    AP_PERCLASS = 64,       /* --split per-class */
    AP_FRAC = 128,          /* --split frac */
    AP_SEEDS = 256,         /* several --seeds */
    AP_ATTNMAP = 512,       /* graph models whose attention weights --attention writes (gat, gat-full) */
    AP_RECURRENT = 1024,    /* sequence and speech: the recurrent model (rnn) */
    AP_LAYERS = 2048        /* molecule models with graph layers (not fingerprint, mlp) */
};

/*        id           name                has_arg  image                        graph */
#define TRAIN_FLAGS(X) \
    X(TASK,          "task",              1, AP_ANY,                      AP_ANY) \
    X(MODEL,         "model",             1, AP_ANY,                      AP_ANY) \
    X(DATA,          "data",              1, AP_ANY,                      AP_ANY) \
    X(DATA_DIR,      "data-dir",          1, AP_IDX,                      0) \
    X(TRAIN_SIZE,    "train-size",        1, AP_TRAINABLE,                0) \
    X(TEST_SIZE,     "test-size",         1, AP_ANY,                      0) \
    X(PERMUTE,       "permute-pixels",    1, AP_ANY,                      0) \
    X(AUGMENT,       "augment",           1, AP_TRAINABLE,                0) \
    X(IMAGE_SIZE,    "image-size",        1, AP_FOLDER,                   0) \
    X(CHANNELS,      "channels",          1, AP_FOLDER,                   0) \
    X(EPOCHS,        "epochs",            1, AP_TRAINABLE,                AP_ANY) \
    X(LR,            "lr",                1, AP_TRAINABLE,                AP_ANY) \
    X(WD,            "wd",                1, AP_TRAINABLE,                AP_ANY) \
    X(WEIGHT_DECAY,  "weight-decay",      1, AP_TRAINABLE,                AP_ANY) \
    X(BATCH,         "batch",             1, AP_TRAINABLE,                0) \
    X(EVAL_EVERY,    "eval-every",        1, AP_TRAINABLE,                0) \
    X(EVAL_BATCH,    "eval-batch",        1, AP_ANY,                      0) \
    X(SEED,          "seed",              1, AP_ANY,                      AP_ANY) \
    X(SEEDS,         "seeds",             1, 0,                           AP_ANY) \
    X(THREADS,       "threads",           1, AP_ANY,                      AP_ANY) \
    X(MAX_MEMORY,    "max-memory",        1, AP_ANY,                      AP_ANY) \
    X(SEQUENTIAL,    "sequential",        0, 0,                           AP_SEEDS) \
    X(DIM,           "dim",               1, AP_ATTENTION,                0) \
    X(DEPTH,         "depth",             1, AP_ATTENTION,                0) \
    X(HEADS,         "heads",             1, AP_ATTENTION,                AP_ATTENTION) \
    X(PATCH,         "patch",             1, AP_ATTENTION,                0) \
    X(WINDOW,        "window",            1, AP_WINDOWED,                 0) \
    X(POS,           "pos",               1, AP_ATTENTION,                0) \
    X(SCORE,         "score",             1, AP_ATTENTION,                0) \
    X(NORM,          "norm",              1, AP_ATTENTION,                0) \
    X(INIT_FROM,     "init-from",         1, AP_ANY,                      0) \
    X(SPLIT,         "split",             1, 0,                           AP_ANY) \
    X(LPC,           "labels-per-class",  1, 0,                           AP_PERCLASS) \
    X(FRAC,          "train-frac",        1, 0,                           AP_FRAC) \
    X(NO_NORMALIZE,  "no-normalize",      0, 0,                           AP_ANY) \
    X(HIDDEN,        "hidden",            1, 0,                           AP_ANY) \
    X(DROPOUT,       "dropout",           1, 0,                           AP_ANY) \
    X(ATTN_DROPOUT,  "attn-dropout",      1, 0,                           AP_ATTENTION) \
    X(PATIENCE,      "patience",          1, 0,                           AP_ANY) \
    X(ATTENTION,     "attention",         1, 0,                           AP_ATTNMAP) \
    X(CHECKPOINT_EVERY, "checkpoint-every", 1, AP_TRAINABLE,               AP_ANY) \
    X(CHECKPOINT,    "checkpoint",        1, AP_TRAINABLE,                AP_ANY) \
    X(RESUME,        "resume",            0, AP_TRAINABLE,                AP_ANY) \
    X(CSV,           "csv",               1, AP_ANY,                      AP_ANY) \
    X(SAVE,          "save",              1, AP_TRAINABLE,                AP_ANY) \
    X(QUIET,         "quiet",             0, AP_ANY,                      AP_ANY) \
    X(HELP,          "help",              0, AP_ANY,                      AP_ANY)

#define TF_ENUM(id, name, arg, img, gr) TF_##id,
enum { TRAIN_FLAGS(TF_ENUM) TF_NFLAGS };
#undef TF_ENUM
#define TF_BASE 256     /* getopt_long returns TF_BASE + the flag's id */

typedef struct train_flag { const char *name; int has_arg; unsigned image, graph; } train_flag;
extern const train_flag train_flags[TF_NFLAGS];

/* The getopt_long table of every train flag (static storage). */
const struct option *train_flags_options(void);

enum { TASK_IMAGE, TASK_GRAPH, TASK_SEQUENCE, TASK_SPEECH, TASK_MOLECULE, TASK_COUNT };
/* The task of a --task name ("image", ..., "molecule"), or -1. */
int task_find(const char *name);
extern const char *const task_names[TASK_COUNT];
/* What the flags are checked against. */
typedef struct flag_ctx {
    int task;                   /* TASK_IMAGE or TASK_GRAPH */
    const char *model;          /* the --model name (known to the task's model table) */
    unsigned props;             /* TF_* that hold: the model's properties and the data / split / seeds */
} flag_ctx;
/* The TF_* properties of a model from the library tables (image: al_model_kind; graph: al_gnn_model). */
unsigned train_model_props(int task, const char *model);
/* 0 if every flag in seen[0..TF_NFLAGS) applies; else prints "attnlab train: --FLAG ..." (why) and
 * returns 2. */
int train_flags_check(const flag_ctx *fc, const unsigned char *seen);

/* The model flags of the sequence, speech and molecule trainers, which parse their own option tables
 * (seq_opts.h, cmd_train_speech.c, cmd_train_mol.c, and check them there): where each applies. */
/*             name              sequence       speech         molecule */
#define SEQ_MODEL_FLAGS(X) \
    X("lr",             AP_ANY,        AP_ANY,        AP_ANY) \
    X("wd",             AP_ANY,        AP_ANY,        AP_ANY) \
    X("batch",          AP_ANY,        AP_ANY,        AP_ANY) \
    X("eval-batch",     AP_ANY,        AP_ANY,        0) \
    X("window",         AP_WINDOWED,   AP_WINDOWED,   0) \
    X("rnn",            AP_RECURRENT,  AP_RECURRENT,  0) \
    X("pos",            AP_ATTENTION,  AP_ATTENTION,  0) \
    X("score",          AP_ATTENTION,  AP_ATTENTION,  0) \
    X("norm",           AP_ATTENTION,  AP_ATTENTION,  0) \
    X("heads",          AP_ATTENTION,  AP_ATTENTION,  AP_ATTENTION) \
    X("depth",          AP_ATTENTION,  AP_ATTENTION,  AP_LAYERS) \
    X("max-len",        AP_ANY,        0,             0) \
    X("target",         0,             AP_ANY,        AP_ANY) \
    X("features",       0,             AP_ANY,        0) \
    X("cmvn",           0,             AP_ANY,        0) \
    X("max-seconds",    0,             AP_ANY,        0) \
    X("train-speakers", 0,             AP_ANY,        0) \
    X("subsample",      0,             AP_ANY,        0) \
    X("dim",            0,             0,             AP_LAYERS) \
    X("readout",        0,             0,             AP_LAYERS) \
    X("hidden",         0,             0,             AP_ANY) \
    X("dropout",        0,             0,             AP_ANY)

/* Model flags: the flags of `attnlab train --task T` that choose the model or its training (what a
 * sweep may set per run, as a grid axis); not the run's own flags (--model, --data, --train-size, --epochs,
 * --seed, --csv, --checkpoint, ...), which the sweep sets itself. 1: --flag applies to model; 0: it is a
 * model flag of the task that model does not take; -1: not a model flag of the task. */
int train_model_flag(int task, const char *flag, const char *model);
/* What model flag --flag of the task needs (AP_*; AP_ANY: every model), 0 when it is not one. */
unsigned train_model_flag_need(int task, const char *flag);
/* The i-th name of every task's model flags together (duplicates included), NULL past the last. */
const char *train_model_flag_name(int i);
#endif
