/* main.c — bin/attnlab: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>
#include "attnlab/kernels.h"
#include "attnlab/version.h"
#include "cli.h"
#include "app_mpi.h"

static const struct { const char *name; int (*fn)(int, char **); const char *help; } cmds[] = {
    {"train", cmd_train, "train a model (image, graph, sequence, molecule or speech task), write CSV and a checkpoint"},
    {"eval", cmd_eval, "evaluate a saved checkpoint on a test set (image, graph or molecule)"},
    {"predict", cmd_predict, "classify image files or molecules with a saved checkpoint (CSV)"},
    {"sweep", cmd_sweep, "run models x data sizes x seeds, resumable, one CSV"},
    {"summarize", cmd_summarize, "table of final test accuracy (mean +- std) per model and size"},
    {"plot", cmd_plot, "plot a results CSV with gnuplot"},
    {"attnmap", cmd_attnmap, "draw attention maps of a saved model as a PNG"},
    {"bench", cmd_bench, "benchmarks: gemm, attention, train, graph"},
    {"tag", cmd_tag, "POS-tag tokenised text with a sequence checkpoint, print CoNLL-U"},
    {"data", cmd_data, "import a graph (LINQS, OGB); synthesise the spoken-digit corpus; check an audio folder"},
};
#define NCMDS (int)(sizeof cmds / sizeof cmds[0])

static void usage(FILE *f)
{
    cli_usage(f, "usage: attnlab COMMAND [OPTIONS]   (attnlab COMMAND --help for its options)\n"
               "       attnlab --version              (version, kernels and what the build includes)\n"
#ifdef AL_MPI
               "       mpirun -np N attnlab train|sweep ...   (this build has MPI: data-parallel training, distributed\n"
               "                                      sweeps; docs/scale-out.md)\n"
#else
               "       (no MPI in this build: make MPI=1 builds one for mpirun; docs/scale-out.md)\n"
#endif
               "\ncommands:\n");
    for (int i = 0; i < NCMDS; i++) cli_usage(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
}

/* attnlab --version: the version and what this build has in it. */
static int version(void)
{
#ifdef _OPENMP
    const char *omp = "yes";
#else
    const char *omp = "no";
#endif
#ifdef AL_MPI
    char mpi[160];
    snprintf(mpi, sizeof mpi, "yes, %s: mpirun -np N attnlab train|sweep", app_mpi_library());
#else
    const char *mpi = "no";
#endif
    printf("attnlab %s (kernels %s, OpenMP %s, MPI %s)\n", AL_VERSION_STRING, al_gemm_isa(), omp, mpi);
    return 0;
}

/* The commands that use MPI ranks (app_mpi.h); the others run on one. */
static int uses_ranks(const char *cmd) { return !strcmp(cmd, "train") || !strcmp(cmd, "sweep"); }

static int dispatch(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) return app_mpi_rank() ? 0 : version();
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) { if (!app_mpi_rank()) usage(stdout); return 0; }
    for (int i = 0; i < NCMDS; i++)
        if (!strcmp(argv[1], cmds[i].name)) {
            if (app_mpi_size() > 1 && !uses_ranks(argv[1])) {
                if (!app_mpi_rank()) fprintf(stderr, "attnlab %s: runs on one process; only train and sweep use MPI ranks (run it without mpirun)\n", argv[1]);
                return 2;
            }
            return cmds[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "attnlab: unknown command '%s' (see attnlab --help)\n", argv[1]);
    return 2;
}

int main(int argc, char **argv)
{
    if (app_mpi_init(&argc, &argv)) { fprintf(stderr, "attnlab: MPI_Init failed\n"); return 1; }
    return app_mpi_finish(dispatch(argc, argv));
}
