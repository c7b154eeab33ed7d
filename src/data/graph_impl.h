/* data/graph_impl.h — internals of the graph floor shared by graph.c and graph_import.c (not part of
 * the public API). */
#ifndef AL_DATA_GRAPH_IMPL_H
#define AL_DATA_GRAPH_IMPL_H
#include <stdint.h>
#include "attnlab/tensor.h"

/* CSR with row = dst, columns = the sorted distinct sources of the m edges (src[e], dst[e]),
 * self-loops dropped. */
al_status al_graph_build_adj(int n, const int *src /* (m) */, const int *dst /* (m) */, int64_t m, al_csr *adj,
                             al_error *err);

/* What the reader (graph.c) asks the memory budget for before it allocates, and what an import checks
 * before it writes (graph_write.c): a node's label and row pointer, a feature entry's column and value;
 * a first layer over nfeat features (16 hidden units, with gradients and AdamW moments). */
uint64_t al__graph_feat_bytes(int64_t nodes, int64_t entries);
uint64_t al__graph_layer_bytes(int64_t nfeat);

/* ---- text files: read whole (gzip or plain), then line by line; every message names path:line ---- */
typedef struct al_text { char *buf; size_t len, pos; long line; char path[4200]; } al_text;
al_status   al_text_open(al_text *t, const char *dir, const char *file, al_error *err);   /* dir/file */
al_status   al_text_open_path(al_text *t, const char *path, al_error *err);
int64_t     al_text_count_lines(const al_text *t);   /* lines, a last one without '\n' included */
char       *al_text_line(al_text *t);   /* next line, NUL-terminated in place, '\r' cut; NULL at the end */
void        al_text_close(al_text *t);
char       *al_text_skip_ws(char *p);   /* past spaces and tabs */
/* A decimal int token at *pp ending at whitespace, end of line or the character `sep` (0: none);
 * 1 and *pp past it, or 0. */
int         al_text_int(char **pp, long *out, int sep);
const char *al_text_tok(const char *p, char *buf, size_t n);   /* the token at p, for messages */
#endif
