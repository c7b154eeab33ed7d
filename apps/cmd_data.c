/* cmd_data.c — attnlab data: `import` converts a graph from LINQS (.content/.cites) or OGB CSV files
 * into an attnlab graph directory (parse → al_graph_import → report); `speech-digits` synthesises the
 * spoken-digit corpus (al_speech_digits_generate); `audio-stats` loads an audio folder through the
 * reader and the front end and reports what a speech run would see. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/io.h"
#include "attnlab/graph_import.h"
#include "attnlab/audio.h"
#include "attnlab/fbank.h"
#include "attnlab/speechgen.h"

typedef struct data_opts {
    const char *format, *in, *out, *name, *split;
    long seed;
} data_opts;

static void usage(FILE *f)
{
    cli_usage(f,
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

/* ---------------------------------------------------------------- speech-digits */
static void digits_usage(FILE *f)
{
    al_digits_opts d = al_digits_defaults();
    cli_usage(f,
        "usage: attnlab data speech-digits --out DIR [--speakers N] [--repeats R] [--sequences M] [--seed S]\n"
        "                                  [--test-fraction F] [--jobs J]\n\n"
        "Synthesises a spoken-digit corpus with libespeak-ng (no download): every speaker a distinct\n"
        "espeak-ng voice (8 English variants x 24 voice variants, own pitch, range, speed, amplitude,\n"
        "pauses), seeded background noise, 16-bit mono 16 kHz WAV files (docs/speech.md):\n"
        "  DIR/digits/{train,test}/D/sNNN_K.wav   one digit D, for digit (N-to-1) classification\n"
        "  DIR/sequences/{train,test}/sNNN_K.wav  3 to 7 digits with pauses, for frame labelling (N-to-N)\n"
        "  DIR/manifest.tsv                       per file: speaker, voice, SNR, digits, spans, frame labels\n"
        "Test speakers are held out whole. DIR must not exist or be empty; the corpus is written into\n"
        "DIR.tmp.HOST.PID and renamed to DIR when complete. The same options give byte-identical files.\n\n"
        "  --out DIR            the corpus directory\n"
        "  --speakers N         speakers (voices), 2 to %d (default %d)\n"
        "  --repeats R          isolated takes of each digit per speaker (default %d)\n"
        "  --sequences M        digit sequences per speaker (default %d)\n"
        "  --seed S             (default %llu)\n"
        "  --test-fraction F    speakers held out for test (default %g)\n"
        "  --jobs J             speakers synthesised at once, one process each (default: the CPUs);\n"
        "                       the files do not depend on it\n",
        AL_DIGITS_MAX_SPEAKERS, d.speakers, d.repeats, d.sequences, (unsigned long long)d.seed, d.test_frac);
}

static int data_speech_digits(int argc, char **argv)
{
    static const struct option lo[] = {{"out", 1, 0, 'o'}, {"speakers", 1, 0, 'n'}, {"repeats", 1, 0, 'r'},
                                       {"sequences", 1, 0, 'q'}, {"seed", 1, 0, 's'}, {"test-fraction", 1, 0, 't'},
                                       {"jobs", 1, 0, 'j'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *cmd = "data speech-digits";
    al_digits_opts o = al_digits_defaults();
    long seed = (long)o.seed;
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'h': digits_usage(stdout); return 0;
        case 'o': o.out = optarg; break;
        case 'n': if (cli_int32(cmd, "--speakers", optarg, 2, AL_DIGITS_MAX_SPEAKERS, &o.speakers)) return 2; break;
        case 'r': if (cli_int32(cmd, "--repeats", optarg, 0, 1000, &o.repeats)) return 2; break;
        case 'q': if (cli_int32(cmd, "--sequences", optarg, 0, 100000, &o.sequences)) return 2; break;
        case 's': if (cli_int(cmd, "--seed", optarg, 0, CLI_NOMAX, &seed)) return 2; break;
        case 't': if (cli_num(cmd, "--test-fraction", optarg, 0.001, 0.999, &o.test_frac)) return 2; break;
        case 'j': if (cli_int32(cmd, "--jobs", optarg, 1, 64, &o.jobs)) return 2; break;
        default: return cli_bad_option(cmd, argv);
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab %s: unexpected argument '%s'\n", cmd, argv[optind]); return 2; }
    if (!o.out) { fprintf(stderr, "attnlab %s: --out DIR is required\n", cmd); return 2; }
    if (o.repeats + o.sequences == 0) { fprintf(stderr, "attnlab %s: --repeats and --sequences are both 0: nothing to say\n", cmd); return 2; }
    if (cli_output_dir(cmd, "--out", o.out)) return 2;
    o.seed = (uint64_t)seed;
    al_digits_stats st; al_error err = {{0}};
    double t0 = al_time();
    if (al_speech_digits_generate(&o, &st, &err) != AL_OK) { fprintf(stderr, "attnlab %s: %s\n", cmd, err.msg[0] ? err.msg : "failed"); return 1; }
    printf("wrote %d utterances (%d isolated digits, %d sequences, %.0f s of audio) from %d voices (%d train speaker%s, "
           "%d test) into %s in %.1f s\n", st.utterances, st.isolated, st.sequences, st.audio_seconds, st.voices,
           st.train_speakers, st.train_speakers == 1 ? "" : "s", st.test_speakers, o.out, al_time() - t0);
    return 0;
}

/* ---------------------------------------------------------------- audio-stats */
static void audio_stats_usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab data audio-stats --in DIR [--max-seconds S] [--features mfcc|fbank] [--cmvn] [--seed S]\n"
        "                                [--max-memory SIZE]\n\n"
        "Loads an audio folder as a speech run would (DIR/CLASS/FILE or DIR/{train,test}/CLASS/FILE; WAV,\n"
        "FLAC, OGG; mono, 16 kHz, padded or cut to --max-seconds; held-out speakers when file names are\n"
        "SPEAKER_REST), computes every clip's features and prints the splits, classes, speakers, frames\n"
        "and the features' range. Unreadable files are skipped with a warning naming them.\n\n"
        "  --in DIR             the audio folder\n"
        "  --max-seconds S      clip length (default 0: each file's own length)\n"
        "  --features mfcc|fbank  39 MFCC + deltas, or 80 log-mel energies (default mfcc)\n"
        "  --cmvn               per-utterance mean and variance normalisation\n"
        "  --seed S             seed of the held-out split (default 0)\n"
        CLI_MAX_MEMORY_HELP);
}

/* Features of every clip of a: frames in all, their mean, min and max. */
static int feature_stats(const al_fbank *fb, const al_audio *a, int mfcc, int cmvn, const char *name)
{
    const int D = mfcc ? AL_MFCC_DIM : AL_FBANK_MELS;
    int64_t frames = 0; double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < a->n; i++) {
        const int64_t T = al_fbank_frames(&fb->cfg, al_audio_len(a, i));
        float *f = malloc((size_t)(T ? T : 1) * D * sizeof *f);
        al_error e = {{0}};
        if (!f) { fprintf(stderr, "attnlab data audio-stats: out of memory\n"); return 1; }
        if ((mfcc ? al_fbank_mfcc : al_fbank_logmel)(fb, al_audio_clip(a, i), al_audio_len(a, i), f, &e)) {
            fprintf(stderr, "attnlab data audio-stats: %s: %s\n", a->paths[i], e.msg); free(f); return 1;
        }
        if (cmvn) al_feat_cmvn(f, T, D);
        for (int64_t k = 0; k < T * D; k++) { sum += f[k]; lo = fmin(lo, f[k]); hi = fmax(hi, f[k]); }
        frames += T;
        free(f);
    }
    printf("%s: %d clips, %lld frames of %d %s, mean %.3f, range %.3f .. %.3f\n", name, a->n, (long long)frames, D,
           mfcc ? "MFCC" : "log-mel", frames ? sum / ((double)frames * D) : 0.0, frames ? lo : 0.0, frames ? hi : 0.0);
    return 0;
}

static int data_audio_stats(int argc, char **argv)
{
    static const struct option lo[] = {{"in", 1, 0, 'i'}, {"max-seconds", 1, 0, 's'}, {"features", 1, 0, 'f'},
                                       {"cmvn", 0, 0, 'c'}, {"seed", 1, 0, 'e'}, {"max-memory", 1, 0, 'm'},
                                       {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *cmd = "data audio-stats", *in = NULL, *feat = "mfcc";
    al_audio_opts o = {0};
    int cmvn = 0; long seed = 0;
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'h': audio_stats_usage(stdout); return 0;
        case 'i': in = optarg; break;
        case 's': if (cli_num(cmd, "--max-seconds", optarg, 0, AL_AUDIO_MAX_SECONDS, &o.max_seconds)) return 2; break;
        case 'f': feat = optarg; break;
        case 'c': cmvn = 1; break;
        case 'e': if (cli_int(cmd, "--seed", optarg, 0, CLI_NOMAX, &seed)) return 2; break;
        case 'm': if (cli_max_memory(cmd, optarg)) return 2; break;
        default: return cli_bad_option(cmd, argv);
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab %s: unexpected argument '%s'\n", cmd, argv[optind]); return 2; }
    if (!in) { fprintf(stderr, "attnlab %s: --in DIR is required\n", cmd); return 2; }
    if (strcmp(feat, "mfcc") && strcmp(feat, "fbank")) { fprintf(stderr, "attnlab %s: --features expects mfcc or fbank, got '%s'\n", cmd, feat); return 2; }
    o.split_seed = (uint64_t)seed; o.warn = cli_warn;
    al_audio_split d; al_fbank fb; al_error err = {{0}};
    if (al_audio_folder_load(in, &o, &d, &err)) { fprintf(stderr, "attnlab %s: %s\n", cmd, err.msg); return 1; }
    if (al_fbank_init(&fb, NULL, &err)) { fprintf(stderr, "attnlab %s: %s\n", cmd, err.msg); al_audio_split_free(&d); return 1; }
    printf("%s: %d classes, %d speakers, split %s, %d files skipped\n", in, d.train.classes, d.train.nspeakers,
           d.by_speaker ? "by speaker" : "by file or given", d.skipped);
    int rc = feature_stats(&fb, &d.train, !strcmp(feat, "mfcc"), cmvn, "train");
    if (!rc) rc = feature_stats(&fb, &d.test, !strcmp(feat, "mfcc"), cmvn, "test");
    al_fbank_free(&fb); al_audio_split_free(&d);
    return rc;
}

int cmd_data(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "import")) return data_import(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "speech-digits")) return data_speech_digits(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "audio-stats")) return data_audio_stats(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? stdout : stderr;
    if (f == stderr) fprintf(stderr, "attnlab data: unknown or missing subcommand '%s'\n", argc >= 2 ? argv[1] : "");
    fprintf(f, "usage: attnlab data import --format linqs|ogb --in DIR --out DIR [OPTIONS]\n"
               "       attnlab data speech-digits --out DIR [OPTIONS]\n"
               "       attnlab data audio-stats --in DIR [OPTIONS]\n"
               "  (attnlab data SUBCOMMAND --help: the options of each)\n");
    return f == stdout ? 0 : 2;
}
