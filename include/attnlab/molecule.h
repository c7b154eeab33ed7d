/* attnlab/molecule.h — many small graphs with one value each (molecules): the text format reader,
 * atom features, Morgan-style fingerprints and packed batches (block-diagonal CSRs). The models and
 * their training loop are molnet.h.
 *
 * A dataset is a directory with molecules.txt (written by scripts/smiles_to_graphs.py; format in
 * datasets/README.md, "Molecules") and train.idx, val.idx, test.idx (0-based molecule numbers).
 * Every malformed line is reported as "FILE:LINE: what is wrong" through al_error, and the sizes a
 * file declares are compared with the memory budget (io.h) before anything is allocated.
 *
 *   al_molset ms; al_error err = {{0}};
 *   if (al_molset_load(&ms, "datasets/esol", &err)) ...;       // ms.nmol, ms.atom_start, ...
 *   al_mol_batch b; al_mol_batch_build(c, &ms, ids, 32, &b);  // arena memory of c
 *   ... al_molset_free(&ms);
 */
#ifndef ATTNLAB_MOLECULE_H
#define ATTNLAB_MOLECULE_H
#include <stdint.h>
#include "tensor.h"

/* Reader limits (datasets/README.md lists them with the checks). */
#define AL_MOL_MAX_ELEMENTS 64
#define AL_MOL_MAX_TARGETS 16
#define AL_MOL_MAX_ATOMS 1000      /* per molecule */
#define AL_MOL_MAX_BONDS 4000      /* per molecule */
#define AL_MOL_BOND_TYPES 4        /* 1 single, 2 double, 3 triple, 4 aromatic */
#define AL_MOL_FP_BITS 2048        /* al_mol_fingerprint: Morgan-style, radius 2 */

typedef struct al_molset {
    int nmol, nelem, ntarget;
    char elements[AL_MOL_MAX_ELEMENTS][4];         /* symbols in file order: one-hot index */
    char targets[AL_MOL_MAX_TARGETS][64];          /* target names */
    int64_t natoms, nbonds;                        /* totals */
    int64_t *atom_start, *bond_start;              /* (nmol + 1): molecule m owns atoms
                                                    * [atom_start[m], atom_start[m+1]) and bonds likewise */
    uint8_t *elem, *degree, *hs, *arom, *ring;     /* (natoms) */
    int8_t *charge;                                /* (natoms) */
    int *bond_i, *bond_j;                          /* (nbonds) atom numbers within the molecule, i < j */
    uint8_t *bond_type;                            /* (nbonds) 1..4 */
    float *y;                                      /* (nmol, ntarget); NaN = missing */
    uint8_t binary[AL_MOL_MAX_TARGETS];            /* 1: the column holds only 0 and 1 (a class label) */
    int *train, *val, *test;                       /* molecule numbers; owned */
    int ntrain, nval, ntest;
    char name[64];                                 /* last path component of the directory */
    /* optional (dir/coords.txt, al_molset_read_coords): names and 2-D depiction coordinates; NULL without */
    char *names;                                   /* nmol NUL-terminated names back to back */
    int64_t *name_at;                              /* (nmol) where molecule m's name starts in names */
    float *xy;                                     /* (natoms, 2) atom coordinates (RDKit's depiction) */
} al_molset;

/* Read dir/molecules.txt and dir/{train,val,test}.idx, and dir/coords.txt when it exists. Caller
 * frees with al_molset_free (also safe after a failed load). */
al_status al_molset_load(al_molset *ms, const char *dir, al_error *err);
/* Only the molecule file (no splits): for tests, the fuzz harness and predict. */
al_status al_molset_read(al_molset *ms, const char *path, al_error *err);
/* A coordinates file (scripts/smiles_to_graphs.py --coords; datasets/README.md) for the molecules of
 * ms: a name and an X Y line per atom, molecule and atom counts equal to ms's; every failure is
 * FILE:LINE. Fills ms->names, name_at, xy (replacing earlier ones); ms unchanged on error. */
al_status al_molset_read_coords(al_molset *ms, const char *path, al_error *err);
const char *al_molset_name(const al_molset *ms, int m);   /* molecule m's name, NULL without coords */
/* The molecule named s (an exact name of coords.txt), else s as a 0-based number; -1 if neither. */
int         al_molset_find(const al_molset *ms, const char *s);
void      al_molset_free(al_molset *ms);
/* Keep the first round(frac · ntrain) (at least 1) of the training molecules shuffled with the
 * AL_RNG_DATA stream of seed; frac in (0, 1]. val and test stay as loaded. */
al_status al_molset_train_frac(al_molset *ms, double frac, uint64_t seed, al_error *err);
/* Renumber the atoms' elements to the vocabulary `list` ("Br C Cl ...": a model's one-hot order, space
 * separated); an element of some atom that list lacks is an error naming the molecule. ms unchanged
 * on error. */
al_status al_molset_use_elements(al_molset *ms, const char *list, al_error *err);
/* Find a dataset as al_graph_resolve does (datadir.h): an existing directory as is, else NAME looked up. */
al_status al_molset_resolve(const char *name, char *out, size_t n, al_error *err);

/* Features per atom: the element one-hot (nelem), degree/4, hydrogens/3, aromatic, ring, formal
 * charge (the PyTorch peer's order and scaling). */
static inline int al_mol_nfeat(const al_molset *ms) { return ms->nelem + 5; }
void al_mol_atom_features(const al_molset *ms, int64_t atom, float *out /* (nfeat) */);
/* Morgan-style (ECFP-like) bits of molecule m: atom invariants (element, degree, hydrogens, charge,
 * ring, aromatic) refined twice by the sorted (bond type, neighbour identifier) lists, every
 * identifier of radius 0, 1, 2 hashed (FNV-1a 64) to one of AL_MOL_FP_BITS bits. */
void al_mol_fingerprint(const al_molset *ms, int m, float *bits /* (AL_MOL_FP_BITS) 0/1 */);

/* ---------------- packed batches ---------------- */
/* Shortest-path distance buckets of the full pattern: 0 … AL_MOL_SPD_MAX − 1 exactly, then
 * "AL_MOL_SPD_MAX or more", then "not connected" (salts). */
#define AL_MOL_SPD_MAX 8
#define AL_MOL_SPD_BUCKETS (AL_MOL_SPD_MAX + 2)

/* S molecules packed back to back: N = Σ atoms rows, molecule s owning rows [start[s], start[s+1]).
 * All arrays are arena memory of the context that built the batch (valid until al_ctx_reset). */
typedef struct al_mol_batch {
    int nmol, natoms, nfeat;
    int *len, *start;           /* (nmol), (nmol + 1) */
    const int *ids;             /* (nmol) molecule numbers (the caller's array) */
    float *x;                   /* (N, nfeat) atom features */
    al_csr bonds;               /* (N, N) block-diagonal: row i = i itself and its bonded atoms, sorted */
    int *bond_kind;             /* (bonds.nnz) 0 = self, 1..4 = bond type */
    al_csr gcn;                 /* bonds with values D^-1/2 (A + I) D^-1/2, per molecule */
    const al_csr *full;         /* (N, N) every atom with every atom of its own molecule (al_csr_segments) */
    int *full_dist;             /* (full->nnz) shortest-path-distance bucket, 0 … AL_MOL_SPD_BUCKETS−1 */
    float *fp;                  /* (nmol, AL_MOL_FP_BITS) fingerprints, or NULL if not asked for */
    float *y;                   /* (nmol) target `target` of each molecule */
} al_mol_batch;
/* Build the batch of molecules ids[0..n) in one pass over their atoms and bonds (never N×N beyond
 * the full pattern, which is Σ atoms² by definition). want_full: the full pattern and distances;
 * want_fp: the fingerprints. AL_OK, or AL_ERR with the message in c. */
al_status al_mol_batch_build(al_ctx *c, const al_molset *ms, const int *ids, int n, int target, int want_full,
                             int want_fp, al_mol_batch *b);
#endif
