/* app_mpi.h — bin/attnlab across MPI ranks. With `make MPI=1` (AL_MPI) apps/mpi_dist.c implements these
 * with Open MPI; otherwise they are the one-process stubs below and no MPI symbol is linked.
 *
 * MPI is started only when a launcher started us (mpirun / srun set OMPI_COMM_WORLD_SIZE, PMIX_RANK
 * or PMI_RANK), so a plain `attnlab train` of an MPI build runs exactly as a non-MPI build does.
 * Only train (image, sequence: data-parallel) and sweep (runs handed out by rank 0) use the ranks;
 * every other command refuses more than one rank. docs/scale-out.md has the whole story. */
#ifndef ATTNLAB_APP_MPI_H
#define ATTNLAB_APP_MPI_H
#include "attnlab/dist.h"

/* The lines of train --help (image, sequence) about mpirun. */
#define APP_MPI_TRAIN_HELP \
    "MPI (a make MPI=1 build): mpirun -np N attnlab train ... trains data-parallel, --batch the global batch,\n" \
    "  the same bits for any N; rank 0 writes the outputs (docs/scale-out.md)\n"
#define APP_NO_MPI_ENV "ATTNLAB_NO_MPI"   /* set in the sweep's child trainers: they are single processes */

/* apps/train_dist.c: `train` under a launcher. *dist = the loop's al_dist (NULL: one process, nothing
 * changes); ranks other than 0 get csv = save = NULL, quiet and stdout on /dev/null; with several ranks
 * on a node and no --threads / OMP_NUM_THREADS, *threads = cores / ranks there. states: --checkpoint,
 * --checkpoint-every or --resume given (refused with > 1 rank). Returns 0 or 2 (one line printed). */
int app_train_dist(int states, const char **csv, const char **save, int *quiet, int *threads, const al_dist **dist);

#ifdef AL_MPI
int            app_mpi_init(int *argc, char ***argv);   /* MPI_Init when launched by mpirun/srun; 0 or -1 */
int            app_mpi_finish(int rc);                  /* MPI_Finalize, or MPI_Abort when rc is a failure of one rank; returns rc */
int            app_mpi_rank(void);                      /* 0 without MPI */
int            app_mpi_size(void);                      /* 1 without MPI */
int            app_mpi_local_size(void);                /* ranks on this node */
const al_dist *app_mpi_dist(void);                      /* the train loops' allreduce; NULL when MPI is not running */
const char    *app_mpi_library(void);                   /* "Open MPI v4.1.4, ..." (first line) */
/* The worst exit status of any rank (the maximum of rc over the ranks), on every rank. */
int            app_mpi_agree(int rc);
/* Every rank is past its last message: app_mpi_finish ends with MPI_Finalize whatever the status. */
void           app_mpi_settled(void);
#else
static inline int app_mpi_init(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }
static inline int app_mpi_finish(int rc) { return rc; }
static inline int app_mpi_rank(void) { return 0; }
static inline int app_mpi_size(void) { return 1; }
static inline int app_mpi_local_size(void) { return 1; }
static inline const al_dist *app_mpi_dist(void) { return NULL; }
static inline int app_mpi_agree(int rc) { return rc; }
static inline void app_mpi_settled(void) {}
#endif
#endif
