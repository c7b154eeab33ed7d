/* train_flags.h — every option of `attnlab train` in one table: its name, whether it takes a value,
 * and, in one column per task, to which models and data of that task it applies (0: it is not an
 * option of the task). A flag given where it does not apply is an error (exit 2, one line naming the
 * flag and why), never silently ignored. Every task's parser takes its getopt table from it
 * (train_flags_options) and asks it whether the model takes the flags given (train_flags_check for
 * image and graph, which refuse each other's flags with the reason; train_flags_check_model for
 * sequence, speech and molecule). sweep reads the same table (train_model_flag). */
#ifndef ATTNLAB_TRAIN_FLAGS_H
#define ATTNLAB_TRAIN_FLAGS_H
#include <getopt.h>
#include "attnlab/task.h"

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

/*        id                name                has_arg image            graph            sequence         speech           molecule */
#define TRAIN_FLAGS(X) \
    X(TASK,             "task",              1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(MODEL,            "model",             1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(DATA,             "data",              1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(DATA_DIR,         "data-dir",          1, AP_IDX,          0,               0,               0,               0) \
    X(TRAIN_SIZE,       "train-size",        1, AP_TRAINABLE,    0,               AP_ANY,          AP_ANY,          0) \
    X(TEST_SIZE,        "test-size",         1, AP_ANY,          0,               0,               0,               0) \
    X(PERMUTE,          "permute-pixels",    1, AP_ANY,          0,               0,               0,               0) \
    X(AUGMENT,          "augment",           1, AP_TRAINABLE,    0,               0,               0,               0) \
    X(IMAGE_SIZE,       "image-size",        1, AP_FOLDER,       0,               0,               0,               0) \
    X(CHANNELS,         "channels",          1, AP_FOLDER,       0,               0,               0,               0) \
    X(EPOCHS,           "epochs",            1, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(LR,               "lr",                1, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(WD,               "wd",                1, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(WEIGHT_DECAY,     "weight-decay",      1, AP_TRAINABLE,    AP_ANY,          0,               0,               AP_ANY) \
    X(BATCH,            "batch",             1, AP_TRAINABLE,    0,               AP_ANY,          AP_ANY,          AP_ANY) \
    X(EVAL_EVERY,       "eval-every",        1, AP_TRAINABLE,    0,               0,               0,               0) \
    X(EVAL_BATCH,       "eval-batch",        1, AP_ANY,          0,               AP_ANY,          AP_ANY,          0) \
    X(SEED,             "seed",              1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(SEEDS,            "seeds",             1, 0,               AP_ANY,          0,               0,               AP_ANY) \
    X(THREADS,          "threads",           1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(MAX_MEMORY,       "max-memory",        1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(SEQUENTIAL,       "sequential",        0, 0,               AP_SEEDS,        0,               0,               0) \
    X(DIM,              "dim",               1, AP_ATTENTION,    0,               0,               0,               AP_LAYERS) \
    X(DEPTH,            "depth",             1, AP_ATTENTION,    0,               AP_ATTENTION,    AP_ATTENTION,    AP_LAYERS) \
    X(HEADS,            "heads",             1, AP_ATTENTION,    AP_ATTENTION,    AP_ATTENTION,    AP_ATTENTION,    AP_ATTENTION) \
    X(PATCH,            "patch",             1, AP_ATTENTION,    0,               0,               0,               0) \
    X(WINDOW,           "window",            1, AP_WINDOWED,     0,               AP_WINDOWED,     AP_WINDOWED,     0) \
    X(POS,              "pos",               1, AP_ATTENTION,    0,               AP_ATTENTION,    AP_ATTENTION,    0) \
    X(SCORE,            "score",             1, AP_ATTENTION,    0,               AP_ATTENTION,    AP_ATTENTION,    0) \
    X(NORM,             "norm",              1, AP_ATTENTION,    0,               AP_ATTENTION,    AP_ATTENTION,    0) \
    X(INIT_FROM,        "init-from",         1, AP_ANY,          0,               0,               0,               0) \
    X(SPLIT,            "split",             1, 0,               AP_ANY,          0,               0,               0) \
    X(LPC,              "labels-per-class",  1, 0,               AP_PERCLASS,     0,               0,               0) \
    X(FRAC,             "train-frac",        1, 0,               AP_FRAC,         0,               0,               AP_ANY) \
    X(NO_NORMALIZE,     "no-normalize",      0, 0,               AP_ANY,          0,               0,               0) \
    X(HIDDEN,           "hidden",            1, 0,               AP_ANY,          0,               0,               AP_ANY) \
    X(DROPOUT,          "dropout",           1, 0,               AP_ANY,          0,               0,               AP_ANY) \
    X(ATTN_DROPOUT,     "attn-dropout",      1, 0,               AP_ATTENTION,    0,               0,               0) \
    X(PATIENCE,         "patience",          1, AP_TRAINABLE,    AP_ANY,          0,               0,               0) \
    X(VAL_SIZE,         "val-size",          1, AP_TRAINABLE,    0,               0,               0,               0) \
    X(ATTENTION,        "attention",         1, 0,               AP_ATTNMAP,      0,               0,               0) \
    X(CHECKPOINT_EVERY, "checkpoint-every",  1, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(CHECKPOINT,       "checkpoint",        1, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(RESUME,           "resume",            0, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(CSV,              "csv",               1, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(SAVE,             "save",              1, AP_TRAINABLE,    AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(QUIET,            "quiet",             0, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY) \
    X(RNN,              "rnn",               1, 0,               0,               AP_RECURRENT,    AP_RECURRENT,    0) \
    X(MAX_LEN,          "max-len",           1, 0,               0,               AP_ANY,          0,               0) \
    X(READOUT,          "readout",           1, 0,               0,               0,               0,               AP_LAYERS) \
    X(TARGET,           "target",            1, 0,               0,               0,               AP_ANY,          AP_ANY) \
    X(FEATURES,         "features",          1, 0,               0,               0,               AP_ANY,          0) \
    X(CMVN,             "cmvn",              1, 0,               0,               0,               AP_ANY,          0) \
    X(MAX_SECONDS,      "max-seconds",       1, 0,               0,               0,               AP_ANY,          0) \
    X(TRAIN_SPEAKERS,   "train-speakers",    1, 0,               0,               0,               AP_ANY,          0) \
    X(SUBSAMPLE,        "subsample",         1, 0,               0,               0,               AP_ANY,          0) \
    X(HELP,             "help",              0, AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY,          AP_ANY)

#define TF_ENUM(id, name, arg, img, gr, sq, sp, mo) TF_##id,
enum { TRAIN_FLAGS(TF_ENUM) TF_NFLAGS };
#undef TF_ENUM
#define TF_BASE 256     /* getopt_long returns TF_BASE + the flag's id */

/* One column per task of the library's task table (attnlab/task.h: AL_TASK_IMAGE, ...). */
typedef struct train_flag { const char *name; int has_arg; unsigned need[AL_TASK_COUNT]; } train_flag;
extern const train_flag train_flags[TF_NFLAGS];

/* The getopt_long table of the flags of task (static storage): those with a non-zero column (image and
 * graph: in either column, as they refuse each other's flags with the reason). getopt_long returns
 * TF_BASE + the flag's id; a flag of no column of the task is an unknown option to it. */
const struct option *train_flags_options(int task);

/* The AL_TASK_* of a --task name ("image", ..., "molecule": al_task_find), or -1. */
int task_find(const char *name);
/* What the flags are checked against. */
typedef struct flag_ctx {
    int task;                   /* TASK_* */
    const char *model;          /* the --model name (known to the task's model table) */
    unsigned props;             /* AP_* that hold: the model's properties and the data / split / seeds */
} flag_ctx;
/* The AP_* properties of a model from the library tables (image: al_model_arch; graph: al_gnn_arch;
 * sequence, speech: al_seq_arch; molecule: al_molnet_arch); 0 for an unknown model. */
unsigned train_model_props(int task, const char *model);
/* Image and graph: 0 if every flag in seen[0..TF_NFLAGS) applies; else prints "attnlab train: --FLAG ..."
 * (why) and returns 2. */
int train_flags_check(const flag_ctx *fc, const unsigned char *seen);
/* Sequence, speech, molecule: 0 if every model flag in seen[0..TF_NFLAGS) fits the model (the flags that
 * are not options of the task were refused while parsing); else prints why and returns 2. */
int train_flags_check_model(int task, const char *model, const unsigned char *seen);

/* Model flags: the flags of `attnlab train --task T` that choose the model or its training (what a
 * sweep may set per run, as a grid axis); not the run's own flags (--model, --data, --train-size, --epochs,
 * --seed, --csv, --checkpoint, ...), which the sweep sets itself. 1: --flag applies to model; 0: it is a
 * model flag of the task that model does not take; -1: not a model flag of the task. */
int train_model_flag(int task, const char *flag, const char *model);
/* What model flag --flag of the task needs (AP_*; AP_ANY: every model), 0 when it is not one. */
unsigned train_model_flag_need(int task, const char *flag);
/* The i-th name of the model flags of any task, NULL past the last. */
const char *train_model_flag_name(int i);
#endif
