/* attnlab/graph_import.h — convert graphs from the formats they are distributed in into attnlab's graph
 * directory (graph.h; datasets/README.md, "Importing graphs"):
 *
 *   LINQS  (Cora, Citeseer as distributed by LINQS): NAME.content lines "PAPER_ID w1 .. wF CLASS"
 *          (tab or space separated), NAME.cites lines "CITED_ID CITING_ID". Paper ids are mapped to
 *          0..N-1 in file order, class strings to 0..C-1 in byte order (written to classes.txt),
 *          citations naming a paper missing from .content are dropped and counted.
 *   OGB    (node property prediction, CSV as in an OGB raw/ directory): node-feat.csv (one row of
 *          comma-separated floats per node), node-label.csv (one integer per row, a class below
 *          AL_GRAPH_MAX_CLASSES; -1, "nan" or an empty row = unlabelled), edge.csv ("src,dst", 0-based), train.csv / valid.csv / test.csv
 *          (one node id per row). Each file may be gzip-compressed (FILE.gz is tried after FILE) and
 *          may sit in DIR or DIR/raw; the split files in DIR, DIR/split/NAME or the single DIR/split/X/.
 *
 * Edges are symmetrised, self-loops and duplicates removed, sorted. Every input error is reported
 * as "FILE:LINE: what". Sizes are checked before allocating (AL_IMPORT_MAX_ENTRIES). This header
 * reads (src/data/graph_import.c); writing the directory atomically is al_graph_import
 * (src/data/graph_write.c), which also reads the result back with al_graph_load. */
#ifndef ATTNLAB_GRAPH_IMPORT_H
#define ATTNLAB_GRAPH_IMPORT_H
#include <stdint.h>
#include "graph.h"

#define AL_IMPORT_MAX_ENTRIES (1LL << 28)   /* nodes × features, and directed edges after symmetrising */

typedef enum { AL_IMPORT_LINQS, AL_IMPORT_OGB } al_import_format;
typedef enum { AL_SPLIT_GIVEN, AL_SPLIT_RANDOM } al_import_split;

/* Random split (Planetoid counts): per class AL_IMPORT_PER_CLASS training nodes, then AL_IMPORT_VAL
 * validation and AL_IMPORT_TEST test nodes drawn from the remaining labelled nodes. */
#define AL_IMPORT_PER_CLASS 20
#define AL_IMPORT_VAL 500
#define AL_IMPORT_TEST 1000

typedef struct al_import_opts {
    al_import_format format;
    const char *in, *out;
    const char *name;        /* LINQS: the file prefix (default: the one NAME.content in `in`);
                              * OGB: the split directory under split/ (default: the only one) */
    al_import_split split;   /* LINQS ships no split: AL_SPLIT_RANDOM only */
    uint64_t seed;           /* AL_SPLIT_RANDOM */
} al_import_opts;

typedef struct al_import_stats {
    int n, nfeat, nclass, ntrain, nval, ntest;
    int64_t edges_in;         /* rows of the edge file */
    int64_t edges_missing;    /* LINQS: citations naming a paper that is not in .content (dropped) */
    int64_t self_loops;       /* rows with src == dst (dropped) */
    int64_t edges_out;        /* lines of edges.txt (both directions) */
    int clamped;              /* random split: fewer than the Planetoid counts (graph too small) */
    char features_file[4200]; /* the main input file read (for messages) */
} al_import_stats;

/* Read the input (o->out is not used) into g (features unnormalised; caller frees with al_graph_free,
 * also after a failure) and, for LINQS, the nclass class names into *classes (NULL for OGB; free with
 * al_import_classes_free). Writing the directory is al_graph_import / al_graph_write (below). */
al_status al_graph_import_read(const al_import_opts *o, al_graph *g, char ***classes, al_import_stats *st,
                               al_error *err);
void      al_import_classes_free(char **classes, int nclass);

/* Graph directories (src/data/graph_write.c). al_graph_write: g as features.libsvm (non-zero values with %.9g,
 * exact for floats), edges.txt (g->adj must be symmetric), train/val/test.idx and, if classes is
 * non-NULL, classes.txt (g->nclass names); every file atomic; dir must exist.
 * al_graph_import: al_graph_import_read (graph_import.h), create o->out if missing, al_graph_write,
 * then al_graph_load the result as a check. */
al_status al_graph_write(const al_graph *g, const char *dir, const char *const *classes, al_error *err);
al_status al_graph_import(const al_import_opts *o, al_import_stats *st, al_error *err);

#endif
