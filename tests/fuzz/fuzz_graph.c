/* fuzz_graph.c — the graph text reader (al_graph_load) and what is built from a loaded graph (splits,
 * adjacency, GCN matrix, a model's init). Input: features FZ_SEP edges FZ_SEP train FZ_SEP val FZ_SEP test. */
#include "fuzz_common.h"
#include "attnlab/graph.h"
#include "attnlab/gnn.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    static const char *const files[5] = {"features.libsvm", "edges.txt", "train.idx", "val.idx", "test.idx"};
    const uint8_t *part[5]; size_t len[5];
    int k = fz_split(d, n, part, len, 5);
    for (int i = 0; i < 5; i++) fz_write(fz_path(files[i]), i < k ? part[i] : (const uint8_t *)"", i < k ? len[i] : 0, 0);
    al_graph g; al_error e = {{0}};
    if (al_graph_load(&g, fz_dir(), n & 1, &e) != AL_OK) {
        if (!e.msg[0]) abort();
        al_graph_free(&g);
        return 0;
    }
    if (g.n < 1 || g.nfeat < 1 || g.nclass < 1) abort();
    al_csr a; al_error e2 = {{0}};
    if (al_graph_gcn_norm(&g, &a, &e2) == AL_OK) al_csr_free(&a);
    al_gnn_config cfg; al_gnn_config_default(&cfg, al_gnn_kind_name((al_gnn_kind)(n % 4)), NULL);
    cfg.hidden = 2; cfg.heads = 1;
    al_gnn m; al_error e3 = {{0}};
    if (al_gnn_init(&m, &cfg, &g, 1, &e3) == AL_OK) al_gnn_free(&m);
    al_error e4 = {{0}};
    al_graph_split_per_class(&g, 1, 1, &e4);
    al_graph_free(&g);
    return 0;
}
