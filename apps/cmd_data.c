/* cmd_data.c — attnlab data import: convert a graph from LINQS (.content/.cites) or OGB CSV files into
 * an attnlab graph directory. parse → import (al_graph_import, the library) → report. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/io.h"

typedef struct data_opts {
    const char *format, *in, *out, *name, *split;
    long seed;
} data_opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab data import --format linqs|ogb --in DIR --out DIR [--name NAME] [--seed S]\n"
        "                           [--split planetoid|random] [--max-memory SIZE]\n\n"
        "Converts a graph into attnlab's graph directory (features.libsvm, edges.txt, train.idx, val.idx,\n"
        "test.idx; datasets/README.md) for `attnlab train --task graph --data DIR`. Edges are made\n"
        "symmetric, self-loops and duplicates dropped. Every file is written atomically.\n\n"
        "  --format linqs       NAME.content (PAPER_ID w1 .. wF CLASS) and NAME.cites (CITED CITING), as\n"
        "                       LINQS distributes Cora and Citeseer; classes numbered in sorted order\n"
        "                       (classes.txt); citations of papers not in .content are dropped and counted\n"
        "  --format ogb         node-feat.csv, node-label.csv, edge.csv (in DIR or DIR/raw, .gz allowed) and\n"
        "                       train.csv, valid.csv, test.csv (in DIR or DIR/split/NAME)\n"
        "  --in DIR             the input directory\n"
        "  --out DIR            the output directory (created if missing)\n"
        "  --name NAME          linqs: the file prefix (default: the only NAME.content in DIR);\n"
        "                       ogb: the split directory under DIR/split (default: the only one)\n"
        "  --split planetoid|random\n"
        "                       planetoid: keep the split the files give (ogb's default; LINQS files have\n"
        "                       none); random (linqs' default): 20 labelled nodes per class for training,\n"
        "                       500 for validation, 1000 for test, fewer (with a note) on a small graph\n"
        "  --seed S             seed of the random split (default 1)\n"
        CLI_MAX_MEMORY_HELP);
}

/* argv (after "import") → o. Returns -1 to go on, else the exit status. */
static int parse_data_opts(int argc, char **argv, data_opts *o)
{
    static const struct option lo[] = {{"format", 1, 0, 'f'}, {"in", 1, 0, 'i'}, {"out", 1, 0, 'o'}, {"name", 1, 0, 'n'},
                                       {"seed", 1, 0, 's'}, {"split", 1, 0, 'p'}, {"max-memory", 1, 0, 'm'},
                                       {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->seed = 1;
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return 0;
        case 'f': o->format = optarg; break;
        case 'i': o->in = optarg; break;
        case 'o': o->out = optarg; break;
        case 'n': o->name = optarg; break;
        case 'p': o->split = optarg; break;
        case 's': if (cli_int("data import", "--seed", optarg, 0, CLI_NOMAX, &o->seed)) return 2; break;
        case 'm': if (cli_max_memory("data import", optarg)) return 2; break;
        default: return cli_bad_option("data import", argv);
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab data import: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!o->format || (strcmp(o->format, "linqs") && strcmp(o->format, "ogb"))) {
        fprintf(stderr, "attnlab data import: --format expects linqs or ogb, got '%s'\n", o->format ? o->format : "(none)");
        return 2;
    }
    if (!o->in || !o->out) { fprintf(stderr, "attnlab data import: --in DIR and --out DIR are required\n"); return 2; }
    if (!o->split) o->split = !strcmp(o->format, "linqs") ? "random" : "planetoid";
    if (strcmp(o->split, "planetoid") && strcmp(o->split, "random")) {
        fprintf(stderr, "attnlab data import: --split expects planetoid or random, got '%s'\n", o->split);
        return 2;
    }
    if (!strcmp(o->format, "linqs") && !strcmp(o->split, "planetoid")) {
        fprintf(stderr, "attnlab data import: LINQS files carry no split: use --split random\n");
        return 2;
    }
    return cli_output_dir("data import", "--out", o->out) ? 2 : -1;   /* before the input is read */
}

static void report(const data_opts *o, const al_import_stats *st)
{
    if (st->edges_missing)
        fprintf(stderr, "attnlab data import: note: %lld of %lld citations name a paper not in %s; dropped\n",
                (long long)st->edges_missing, (long long)st->edges_in, st->features_file);
    if (st->self_loops) fprintf(stderr, "attnlab data import: note: %lld self-loops dropped\n", (long long)st->self_loops);
    if (st->clamped)
        fprintf(stderr, "attnlab data import: note: graph too small for 20 per class / 500 / 1000: split %d / %d / %d\n",
                st->ntrain, st->nval, st->ntest);
    printf("imported %s (%s) into %s: nodes %d features %d classes %d edges %lld (directed, both directions) "
           "train %d val %d test %d\n", o->in, o->format, o->out, st->n, st->nfeat, st->nclass, (long long)st->edges_out,
           st->ntrain, st->nval, st->ntest);
}

static int data_import(int argc, char **argv)
{
    data_opts o;
    int rc = parse_data_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    al_import_opts io = {!strcmp(o.format, "linqs") ? AL_IMPORT_LINQS : AL_IMPORT_OGB, o.in, o.out, o.name,
                         !strcmp(o.split, "random") ? AL_SPLIT_RANDOM : AL_SPLIT_GIVEN, (uint64_t)o.seed};
    al_import_stats st;
    al_error err = {{0}};
    if (al_graph_import(&io, &st, &err) != AL_OK) {
        fprintf(stderr, "attnlab data import: %s\n", err.msg[0] ? err.msg : "failed");
        return 1;
    }
    report(&o, &st);
    return 0;
}

int cmd_data(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "import")) return data_import(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? stdout : stderr;
    if (f == stderr) fprintf(stderr, "attnlab data: unknown or missing subcommand '%s'\n", argc >= 2 ? argv[1] : "");
    fprintf(f, "usage: attnlab data import --format linqs|ogb --in DIR --out DIR [OPTIONS]  (see attnlab data import --help)\n");
    return f == stdout ? 0 : 2;
}
