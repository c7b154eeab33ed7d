/* cmd_eval.c — attnlab eval: rebuild an image model from a checkpoint and report test accuracy. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/images.h"
#include "attnlab/checkpoint.h"
#include "attnlab/train.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab eval --load FILE [--data fashion-mnist|DIR] [OPTIONS]\n\n"
        "Rebuilds the model saved by `attnlab train --save FILE` from the checkpoint's metadata\n"
        "(model, shape, hyperparameters, normalisation) and prints its accuracy on the whole test split.\n\n"
        "  --load FILE          safetensors checkpoint written by attnlab train --save\n"
        "  --data NAME|DIR      fashion-mnist (default) or an image folder (resized to the model's input)\n"
        "  --data-dir DIR       where the Fashion-MNIST files are (default: $ATTNLAB_FASHION_MNIST, $ATTNLAB_DATA/fashion-mnist,\n"
        "                       datasets/fashion-mnist, " AL_DATADIR "/fashion-mnist, then " AL_FASHION_MNIST_DIR ")\n"
        "  --model M            refuse the checkpoint unless it holds model M\n"
        "  --batch N            evaluation batch size (default 256)\n"
        "  --threads N          OpenMP threads\n");
}

static void warn_skip(void *ud, const char *msg) { (void)ud; fprintf(stderr, "attnlab: warning: %s\n", msg); }

int cmd_eval(int argc, char **argv)
{
    const char *load = NULL, *data = "fashion-mnist", *data_dir = NULL, *want_model = NULL;
    int batch = 256, threads = 0;
    enum { O_LOAD = 256, O_DATA, O_DATADIR, O_MODEL, O_BATCH, O_THREADS, O_HELP };
    static const struct option lo[] = {
        {"load", 1, 0, O_LOAD}, {"data", 1, 0, O_DATA}, {"data-dir", 1, 0, O_DATADIR}, {"model", 1, 0, O_MODEL},
        {"batch", 1, 0, O_BATCH}, {"threads", 1, 0, O_THREADS}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        char *end;
        switch (ch) {
        case O_LOAD: load = optarg; break;
        case O_DATA: data = optarg; break;
        case O_DATADIR: data_dir = optarg; break;
        case O_MODEL: want_model = optarg; break;
        case O_BATCH: case O_THREADS: {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 1 << 20) { fprintf(stderr, "attnlab eval: --%s expects a positive integer, got '%s'\n", ch == O_BATCH ? "batch" : "threads", optarg); return 2; }
            if (ch == O_BATCH) batch = (int)v; else threads = (int)v;
            break;
        }
        case 'h': case O_HELP: usage(stdout); return 0;
        default: return cli_bad_option("eval", argv);
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab eval: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!load) { fprintf(stderr, "attnlab eval: --load FILE is required\n"); usage(stderr); return 2; }
    if (threads > 0) al_set_threads(threads);
    fprintf(stderr, "attnlab eval: %d threads\n", al_threads());

    al_error err = {{0}};
    al_model m;
    float mean[4], std[4];
    if (al_model_load(load, &m, mean, std, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab eval: %s\n", err.msg); return 1; }
    int rc = 1;
    al_image_split D;
    memset(&D, 0, sizeof D);
    if (want_model && strcmp(want_model, m.cfg.name)) {
        fprintf(stderr, "attnlab eval: %s holds a '%s' model, not '%s'\n", load, m.cfg.name, want_model);
        rc = 2; goto out;
    }
    al_status st = al_image_data_load(data, data_dir, m.cfg.channels, m.cfg.height, m.cfg.width, warn_skip, NULL, &D, &err);
    if (st != AL_OK) { fprintf(stderr, "attnlab eval: %s\n", err.msg); goto out; }
    if (D.test.c != m.cfg.channels || D.test.h != m.cfg.height || D.test.w != m.cfg.width) {
        fprintf(stderr, "attnlab eval: %s expects %dx%dx%d images but %s has %dx%dx%d\n", load, m.cfg.channels,
                m.cfg.height, m.cfg.width, data, D.test.c, D.test.h, D.test.w);
        rc = 2; goto out;
    }
    if (D.test.classes > m.cfg.classes) {
        fprintf(stderr, "attnlab eval: %s has %d classes but %s has %d\n", load, m.cfg.classes, data, D.test.classes);
        rc = 2; goto out;
    }
    double acc, t0 = al_time();
    if (al_eval_image(&m, &D.test, mean, std, batch, &acc, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab eval: %s\n", err.msg); goto out; }
    printf("model %s checkpoint %s data %s test_images %d test_acc %.4f seconds %.2f\n", m.cfg.name, load, data,
           D.test.n, acc, al_time() - t0);
    rc = 0;
out:
    al_image_split_free(&D);
    al_model_free(&m);
    return rc;
}
