/* cmd_bench.c — attnlab bench WHAT: dispatch to one benchmark. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static const struct { const char *name; int (*fn)(int, char **); const char *help; } benches[] = {
    {"gemm", bench_gemm_main, "SGEMM GFLOP/s: square sizes and the models' shapes, 1 and 2 threads"},
    {"attention", bench_attention_main, "attention forward / forward+backward: time, GFLOP/s, peak memory"},
    {"train", bench_train_main, "image model training and inference img/s, peak memory"},
    {"graph", bench_graph_main, "graph models: ms per training epoch, peak memory"},
    {"seq", bench_seq_main, "sequence models (POS tagging): training tokens/s, whole epochs or length buckets"},
    {"speech", bench_speech_main, "speech models: training frames/s and peak memory against utterance length"},
};
#define NB (int)(sizeof benches / sizeof benches[0])

static void usage(FILE *f)
{
    cli_usage(f, "usage: attnlab bench WHAT [OPTIONS]   (attnlab bench WHAT --help)\n\n");
    for (int i = 0; i < NB; i++) cli_usage(f, "  %-10s %s\n", benches[i].name, benches[i].help);
}

int cmd_bench(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) { usage(stdout); return 0; }
    for (int i = 0; i < NB; i++)
        if (!strcmp(argv[1], benches[i].name)) return benches[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "attnlab bench: unknown benchmark '%s' (see attnlab bench --help)\n", argv[1]);
    return 2;
}
