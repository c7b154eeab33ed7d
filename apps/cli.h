/* cli.h — subcommands of bin/attnlab. Each returns the process exit status (0 ok, 1 runtime error,
 * 2 usage error). Only apps/ print and exit. */
#ifndef ATTNLAB_CLI_H
#define ATTNLAB_CLI_H
#include <getopt.h>
#include <stdio.h>

/* One-line error for an option getopt_long rejected (call with opterr = 0); returns exit status 2. */
static inline int cli_bad_option(const char *cmd, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    fprintf(stderr, "attnlab %s: unknown option or missing value: '%s' (see attnlab %s --help)\n", cmd, arg, cmd);
    return 2;
}
/* ---- shared parsers (cli.c): print one line "attnlab CMD: FLAG ..." and return -1 on bad input ---- */
#define CLI_NOMAX 1000000000L          /* hi of an integer without a real upper bound */
#define CLI_MAX_THREADS 1024           /* and never more than 4 threads per online core */
int  cli_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out);
int  cli_int32(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out);
int  cli_num(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);
/* "1-10", "3", "1,2,5-7": up to max distinct non-negative seeds in seeds[0..*n) */
int  cli_seeds(const char *cmd, const char *s, long *seeds, int max, int *n);
/* FILE → FILE-seedS.ext (out, n bytes) when several seeds write the same output; FILE as is otherwise. */
void cli_seed_path(char *out, size_t n, const char *path, long seed, int several);
int  cli_max_threads(void);
int  cli_threads(const char *cmd, const char *s, int *out);    /* --threads: 1 .. cli_max_threads() */
int  cli_check_env_threads(const char *cmd);                   /* OMP_NUM_THREADS sane, or -1 */
/* --max-memory SIZE (al_mem_parse: 512M, 2G, ...): sets the memory budget (al_mem_budget_set) that every
 * loader and model allocation is checked against; call it while parsing, before anything is loaded. */
int  cli_max_memory(const char *cmd, const char *s);
#define CLI_MAX_MEMORY_HELP "  --max-memory SIZE    memory budget for data and models, e.g. 512M or 4G (default: $ATTNLAB_MEM_BUDGET,\n" \
                            "                       else half of the physical memory); a file that needs more is refused\n"
/* An output file given by flag, checked before any work: csv = 1 for a results CSV appended to
 * (al_csv_check), 0 for a file written atomically (al_output_check). NULL path: nothing to check.
 * Prints "attnlab CMD: FLAG PATH: why" and returns -1 if it cannot be written. */
int  cli_output(const char *cmd, const char *flag, const char *path, int csv);
/* An output directory that will be created (mkdir -p) if missing: dir is not a file, and its nearest
 * existing ancestor is a directory that takes new entries. Same message and return as cli_output. */
int  cli_output_dir(const char *cmd, const char *flag, const char *dir);
void cli_warn(void *ud, const char *msg);
/* A command's help text (printf-style) wrapped at CLI_HELP_WIDTH columns: a longer line is refilled
 * with the lines that go on under it (an option's description, a synopsis's options), under its text. */
#define CLI_HELP_WIDTH 100
void cli_usage(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The CSV's dataset column for --data: a NAME as it is, a directory's last path component; CSV
 * specials (comma, quote, newline) become '_'. */
void cli_dataset_name(const char *data, char *name, size_t n);                       /* an al_warn_fn: "attnlab: warning: MSG" */

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_attnmap(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_data(int argc, char **argv);           /* apps/cmd_data.c: data import */
/* Task- and benchmark-specific entry points, one file each (argv[0] is the subcommand name). */
int train_image_main(int argc, char **argv);   /* apps/cmd_train_image.c */
int train_graph_main(int argc, char **argv);   /* apps/cmd_train_graph.c */
int train_seq_main(int argc, char **argv);     /* apps/cmd_train_seq.c */
int train_mol_main(int argc, char **argv);     /* apps/cmd_train_mol.c */
int train_speech_main(int argc, char **argv);  /* apps/cmd_train_speech.c */
int cmd_tag(int argc, char **argv);            /* apps/cmd_tag.c */
/* apps/attnmap_words.c: attnmap of a sequence checkpoint, after cmd_attnmap parsed and checked the
 * flags (sentence xor conllu; block 0 = every block; cell 8..64). Returns the exit status. */
typedef struct attnmap_words_opts { const char *load, *out, *sentence, *conllu; int index, block, cell, quiet; } attnmap_words_opts;
int attnmap_words_run(const attnmap_words_opts *o);
/* apps/attnmap_mol.c: attnmap of a molecule checkpoint (its attention pooling readout over the atoms of
 * one molecule), after cmd_attnmap parsed and checked the flags (data NULL: the checkpoint's dataset). */
typedef struct attnmap_mol_opts { const char *load, *out, *molecule, *data; int quiet; } attnmap_mol_opts;
int attnmap_mol_run(const attnmap_mol_opts *o);
/* apps/attnmap_speech.c: attnmap of a speech checkpoint (block 0 = the last; cell = pixels per frame, 0 = 2). */
typedef struct attnmap_speech_opts { const char *load, *out, *data; int index, block, cell, quiet; } attnmap_speech_opts;
int attnmap_speech_run(const attnmap_speech_opts *o);
int bench_gemm_main(int argc, char **argv);    /* apps/bench_gemm.c */
int bench_attention_main(int argc, char **argv); /* apps/bench_attention.c */
int bench_train_main(int argc, char **argv);   /* apps/bench_train.c */
int bench_graph_main(int argc, char **argv);   /* apps/bench_graph.c */
int bench_seq_main(int argc, char **argv);     /* apps/bench_seq.c */
int bench_speech_main(int argc, char **argv);  /* apps/bench_speech.c */
#endif
