/* mpi_dist.c — Open MPI under bin/attnlab (app_mpi.h; built only with `make MPI=1`, which defines AL_MPI):
 * start-up and shut-down, the rank queries and the allreduce the data-parallel training loops call. */
#ifdef AL_MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "app_mpi.h"

static int g_on, g_rank, g_size = 1, g_local = 1, g_settled;
static al_dist g_dist;

static int launched(void)
{
    const char *no = getenv(APP_NO_MPI_ENV);
    if (no && *no && strcmp(no, "0")) return 0;
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

/* MPI_Allreduce of int64 in place; the counts are cut to fit an int. */
static int allreduce(void *ud, int64_t *buf, int64_t n, int op)
{
    (void)ud;
    for (int64_t o = 0; o < n;) {
        int k = n - o > (1 << 30) ? 1 << 30 : (int)(n - o);
        if (MPI_Allreduce(MPI_IN_PLACE, buf + o, k, MPI_INT64_T, op == AL_DIST_MAX ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
            return -1;
        o += k;
    }
    return 0;
}

int app_mpi_init(int *argc, char ***argv)
{
    if (!launched()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return -1;
    g_on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &g_local);
        MPI_Comm_free(&node);
    }
    g_dist.rank = g_rank; g_dist.size = g_size; g_dist.allreduce = allreduce; g_dist.ud = NULL;
    return 0;
}

int app_mpi_finish(int rc)
{
    if (!g_on) return rc;
    /* 0 and 2 (bad arguments: every rank parsed the same command line) end together; any other
     * failure may be one rank's alone while the others wait in a collective: end the whole job. */
    if (g_size > 1 && rc != 0 && rc != 2 && !g_settled) MPI_Abort(MPI_COMM_WORLD, rc);
    MPI_Finalize();
    g_on = 0;
    return rc;
}

void app_mpi_settled(void) { g_settled = 1; }
int app_mpi_rank(void) { return g_rank; }
int app_mpi_size(void) { return g_size; }
int app_mpi_local_size(void) { return g_local; }
const al_dist *app_mpi_dist(void) { return g_on ? &g_dist : NULL; }

int app_mpi_agree(int rc)
{
    if (!g_on || g_size == 1) return rc;
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

const char *app_mpi_library(void)
{
    static char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[strcspn(v, ",\n")] = 0;
    return v;
}
#else
typedef int app_mpi_dist_unused;   /* ISO C wants a declaration in every file */
#endif
