/* molbatch.c — what the molecule models read from a set of molecules: packed batches (features,
 * the block-diagonal bond CSR with its bond kinds and GCN values, the full-within-each-molecule
 * CSR of al_csr_segments with shortest-path distances, targets) and Morgan-style fingerprints.
 * Everything is built in one pass over the batch's atoms and bonds, into the context's arena. */
#include "attnlab/molecule.h"
#include "attnlab/attention.h"   /* al_csr_segments_arena: the block-diagonal "full" pattern */
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- fingerprints ---------------- */
static uint64_t fnv(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) { h ^= (v >> (8 * i)) & 0xff; h *= 0x100000001b3ULL; }
    return h;
}
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void al_mol_fingerprint(const al_molset *ms, int m, float *bits)
{
    const int64_t a0 = ms->atom_start[m], b0 = ms->bond_start[m];
    const int na = (int)(ms->atom_start[m + 1] - a0), nb = (int)(ms->bond_start[m + 1] - b0);
    memset(bits, 0, AL_MOL_FP_BITS * sizeof *bits);
    uint64_t id[2][AL_MOL_MAX_ATOMS], env[7];   /* degree <= 6 (the reader's check) */
    for (int a = 0; a < na; a++) {
        uint64_t h = 0xcbf29ce484222325ULL;
        h = fnv(h, ms->elem[a0 + a]); h = fnv(h, ms->degree[a0 + a]); h = fnv(h, ms->hs[a0 + a]);
        h = fnv(h, (uint64_t)(ms->charge[a0 + a] + 8)); h = fnv(h, ms->ring[a0 + a]); h = fnv(h, ms->arom[a0 + a]);
        id[0][a] = h;
        bits[h % AL_MOL_FP_BITS] = 1.f;
    }
    for (int r = 1; r <= 2; r++) {
        const uint64_t *prev = id[(r - 1) & 1];
        uint64_t *cur = id[r & 1];
        for (int a = 0; a < na; a++) {
            int k = 0;
            for (int e = 0; e < nb && k < 7; e++) {
                int i = ms->bond_i[b0 + e], j = ms->bond_j[b0 + e];
                if (i != a && j != a) continue;
                env[k++] = fnv(ms->bond_type[b0 + e], prev[i == a ? j : i]);
            }
            qsort(env, (size_t)k, sizeof *env, cmp_u64);
            uint64_t h = fnv(fnv(0xcbf29ce484222325ULL, (uint64_t)r), prev[a]);
            for (int q = 0; q < k; q++) h = fnv(h, env[q]);
            cur[a] = h;
            bits[h % AL_MOL_FP_BITS] = 1.f;
        }
    }
}

/* ---------------- batches ---------------- */
/* Row i of the bond CSR: i itself (kind 0) and its bonded atoms (kind = bond type), sorted by column. */
static void bond_rows(const al_molset *ms, int m, int off, al_csr *A, int *kind, int64_t *fill)
{
    const int64_t a0 = ms->atom_start[m], b0 = ms->bond_start[m];
    const int na = (int)(ms->atom_start[m + 1] - a0), nb = (int)(ms->bond_start[m + 1] - b0);
    for (int a = 0; a < na; a++) {
        int64_t s = A->rowptr[off + a];
        A->col[s] = off + a; kind[s] = 0; fill[a] = s + 1;
    }
    for (int e = 0; e < nb; e++) {
        int i = ms->bond_i[b0 + e], j = ms->bond_j[b0 + e], t = ms->bond_type[b0 + e];
        A->col[fill[i]] = off + j; kind[fill[i]++] = t;
        A->col[fill[j]] = off + i; kind[fill[j]++] = t;
    }
    for (int a = 0; a < na; a++)   /* insertion sort: a row has at most 7 entries */
        for (int64_t s = A->rowptr[off + a] + 1; s < A->rowptr[off + a + 1]; s++)
            for (int64_t q = s; q > A->rowptr[off + a] && A->col[q - 1] > A->col[q]; q--) {
                int tc = A->col[q]; A->col[q] = A->col[q - 1]; A->col[q - 1] = tc;
                int tk = kind[q]; kind[q] = kind[q - 1]; kind[q - 1] = tk;
            }
}

/* Shortest-path distance buckets of molecule s's block of the full CSR, by breadth-first search from
 * every atom over the bond CSR. */
static void full_dist(const al_csr *A, const al_csr *F, int start, int len, int *dist, int *queue, int *d)
{
    for (int a = 0; a < len; a++) {
        for (int q = 0; q < len; q++) d[q] = -1;
        int head = 0, tail = 0;
        d[a] = 0; queue[tail++] = a;
        while (head < tail) {
            int u = queue[head++];
            for (int64_t s = A->rowptr[start + u]; s < A->rowptr[start + u + 1]; s++) {
                int v = A->col[s] - start;
                if (d[v] < 0) { d[v] = d[u] + 1; queue[tail++] = v; }
            }
        }
        int64_t row = F->rowptr[start + a];
        for (int q = 0; q < len; q++)   /* the full row of atom a lists its molecule's atoms in order */
            dist[row + q] = d[q] < 0 ? AL_MOL_SPD_MAX + 1 : d[q] >= AL_MOL_SPD_MAX ? AL_MOL_SPD_MAX : d[q];
    }
}

al_status al_mol_batch_build(al_ctx *c, const al_molset *ms, const int *ids, int n, int target, int want_full,
                             int want_fp, al_mol_batch *b)
{
    memset(b, 0, sizeof *b);
    if (!al_ok(c)) return AL_ERR;
    if (n < 1 || !ids || target < 0 || target >= ms->ntarget) { al_fail(c, "molecule batch: %d molecules, target %d", n, target); return AL_ERR; }
    al_arena *ar = &c->arena;
    b->nmol = n; b->ids = ids; b->nfeat = al_mol_nfeat(ms);
    b->len = al_arena_alloc(ar, (size_t)n * sizeof(int));
    b->start = al_arena_alloc(ar, (size_t)(n + 1) * sizeof(int));
    b->y = al_arena_alloc(ar, (size_t)n * sizeof(float));
    if (!b->len || !b->start || !b->y) goto oom;
    int64_t N = 0, E = 0;
    for (int s = 0; s < n; s++) {
        int m = ids[s];
        if (m < 0 || m >= ms->nmol) { al_fail(c, "molecule batch: molecule %d outside [0, %d)", m, ms->nmol); return AL_ERR; }
        b->start[s] = (int)N; b->len[s] = (int)(ms->atom_start[m + 1] - ms->atom_start[m]);
        N += b->len[s]; E += 2 * (ms->bond_start[m + 1] - ms->bond_start[m]);
        b->y[s] = ms->y[(int64_t)m * ms->ntarget + target];
        if (N > 0x7fffffff / 8) { al_fail(c, "molecule batch: too many atoms"); return AL_ERR; }
    }
    b->start[n] = (int)N; b->natoms = (int)N;
    E += N;
    b->x = al_arena_alloc(ar, (size_t)N * (size_t)b->nfeat * sizeof(float));
    b->bonds.rowptr = al_arena_alloc(ar, (size_t)(N + 1) * sizeof(int64_t));
    b->bonds.col = al_arena_alloc(ar, (size_t)E * sizeof(int));
    b->bond_kind = al_arena_alloc(ar, (size_t)E * sizeof(int));
    b->gcn = b->bonds;
    b->gcn.val = al_arena_alloc(ar, (size_t)E * sizeof(float));
    int64_t *fill = al_arena_alloc(ar, AL_MOL_MAX_ATOMS * sizeof(int64_t));
    if (!b->x || !b->bonds.rowptr || !b->bonds.col || !b->bond_kind || !b->gcn.val || !fill) goto oom;
    b->bonds.rows = b->bonds.cols = (int)N; b->bonds.nnz = E; b->bonds.val = NULL;
    b->gcn.rows = b->gcn.cols = (int)N; b->gcn.nnz = E; b->gcn.rowptr = b->bonds.rowptr; b->gcn.col = b->bonds.col;
    int64_t i = 0;
    b->bonds.rowptr[0] = 0;
    for (int s = 0; s < n; s++) {
        int m = ids[s];
        for (int64_t a = ms->atom_start[m]; a < ms->atom_start[m + 1]; a++, i++) {
            al_mol_atom_features(ms, a, b->x + i * b->nfeat);
            b->bonds.rowptr[i + 1] = b->bonds.rowptr[i] + 1 + ms->degree[a];
        }
        bond_rows(ms, m, b->start[s], &b->bonds, b->bond_kind, fill);
    }
    for (int64_t r = 0; r < N; r++)   /* D^-1/2 (A + I) D^-1/2: a row's length is its degree + 1 */
        for (int64_t s = b->bonds.rowptr[r]; s < b->bonds.rowptr[r + 1]; s++) {
            int64_t j = b->bonds.col[s];
            double di = (double)(b->bonds.rowptr[r + 1] - b->bonds.rowptr[r]), dj = (double)(b->bonds.rowptr[j + 1] - b->bonds.rowptr[j]);
            b->gcn.val[s] = (float)(1.0 / sqrt(di * dj));
        }
    if (want_full) {
        b->full = al_csr_segments_arena(c, b->len, n, -1);
        if (!b->full) return AL_ERR;
        b->full_dist = al_arena_alloc(ar, (size_t)(b->full->nnz > 0 ? b->full->nnz : 1) * sizeof(int));
        int *queue = al_arena_alloc(ar, 2 * AL_MOL_MAX_ATOMS * sizeof(int));
        if (!b->full_dist || !queue) goto oom;
        for (int s = 0; s < n; s++) full_dist(&b->bonds, b->full, b->start[s], b->len[s], b->full_dist, queue, queue + AL_MOL_MAX_ATOMS);
    }
    if (want_fp) {
        b->fp = al_arena_alloc(ar, (size_t)n * AL_MOL_FP_BITS * sizeof(float));
        if (!b->fp) goto oom;
        for (int s = 0; s < n; s++) al_mol_fingerprint(ms, ids[s], b->fp + (int64_t)s * AL_MOL_FP_BITS);
    }
    return AL_OK;
oom:
    al_fail(c, "molecule batch: out of memory (arena)");
    return AL_ERR;
}
