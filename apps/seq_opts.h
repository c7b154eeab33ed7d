/* seq_opts.h — the options of train --task sequence that speech shares (model flags and training). */
#ifndef ATTNLAB_APPS_SEQ_OPTS_H
#define ATTNLAB_APPS_SEQ_OPTS_H
#include "attnlab/seq.h"

typedef struct sopts {
    const char *model, *data, *csv, *save, *pos, *score, *norm, *rnn, *checkpoint;
    int epochs, batch, eval_batch, threads, train_size, quiet, max_len, window, heads, depth, checkpoint_every, resume;
    const struct al_dist *dist;         /* under mpirun: this rank's share (app_mpi.h) */
    long seed;
    double lr, wd;
} sopts;

/* The options both tasks take, as getopt_long codes, and their table entries (end the caller's table
 * with its own options and {0, 0, 0, 0}). */
enum { SO_TASK = 256, SO_MODEL, SO_DATA, SO_TRAINSIZE, SO_EPOCHS, SO_LR, SO_WD, SO_BATCH, SO_SEED, SO_THREADS, SO_CSV, SO_SAVE,
       SO_QUIET, SO_WINDOW, SO_RNN, SO_POS, SO_SCORE, SO_NORM, SO_HEADS, SO_DEPTH, SO_MAXMEM, SO_HELP, SO_CKPT_EVERY, SO_CKPT,
       SO_RESUME, SO_EVAL_BATCH, SO_END };
#define SEQ_COMMON_LONGOPTS \
    {"task", 1, 0, SO_TASK}, {"model", 1, 0, SO_MODEL}, {"data", 1, 0, SO_DATA}, {"train-size", 1, 0, SO_TRAINSIZE}, \
    {"epochs", 1, 0, SO_EPOCHS}, {"lr", 1, 0, SO_LR}, {"wd", 1, 0, SO_WD}, {"batch", 1, 0, SO_BATCH}, \
    {"seed", 1, 0, SO_SEED}, {"threads", 1, 0, SO_THREADS}, {"csv", 1, 0, SO_CSV}, {"save", 1, 0, SO_SAVE}, \
    {"quiet", 0, 0, SO_QUIET}, {"window", 1, 0, SO_WINDOW}, {"rnn", 1, 0, SO_RNN}, \
    {"pos", 1, 0, SO_POS}, {"score", 1, 0, SO_SCORE}, {"norm", 1, 0, SO_NORM}, {"heads", 1, 0, SO_HEADS}, \
    {"depth", 1, 0, SO_DEPTH}, {"max-memory", 1, 0, SO_MAXMEM}, {"help", 0, 0, SO_HELP}, {"checkpoint-every", 1, 0, SO_CKPT_EVERY}, \
    {"checkpoint", 1, 0, SO_CKPT}, {"resume", 0, 0, SO_RESUME}, {"eval-batch", 1, 0, SO_EVAL_BATCH}
/* One shared option (ch in SO_TASK..SO_EVAL_BATCH except SO_HELP) into o; task is the caller's --task name.
 * 0 ok, non-zero bad (one line printed; 2 for --task: the caller returns 2). */
int seq_common_opt(sopts *o, const char *task, int ch, const char *arg);

/* The model configuration from the options (placeholder vocabulary sizes until the data is read);
 * a flag the model does not take is refused by the table's properties. 0 or the exit status 2. */
int build_seq_config(const sopts *o, al_seq_config *cfg, al_error *err);
#endif
