/* test_data_speechgen.c — the spoken-digit generator on a small corpus: byte-identical files for one
 * seed, other files for another, speaker-disjoint splits that the audio reader loads, manifest frame
 * labels that agree with the audio (digit frames loud, silence frames quiet), the command with one
 * and two jobs writing the same bytes, refused options and outputs, no temporary directory left. */
#include "testutil.h"
#include "attnlab/speechgen.h"
#include "attnlab/audio.h"
#include "attnlab/fbank.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int setup(void **st) { (void)st; return tu_tmpdir_make("speechgen"); }
static int teardown(void **st) { (void)st; return tu_tmpdir_remove(); }

static al_digits_opts small(const char *out, uint64_t seed)
{
    al_digits_opts o = al_digits_defaults();
    o.out = out; o.speakers = 3; o.repeats = 1; o.sequences = 2; o.seed = seed;
    return o;
}
static void generate(const al_digits_opts *o, al_digits_stats *s)
{
    al_error e = {{0}};
    if (al_speech_digits_generate(o, s, &e)) fail_msg("%s", e.msg);
}
static int same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_slurp_n(a, &na), *y = tu_slurp_n(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x); free(y);
    return same;
}

static void test_same_seed_same_bytes(void **st)
{
    (void)st;
    al_digits_opts o1 = small(tu_tpath("a"), 5), o2 = small(tu_tpath("b"), 5), o3 = small(tu_tpath("c"), 6);
    al_digits_stats s;
    generate(&o1, &s);
    assert_int_equal(s.utterances, 3 * (10 + 2)); assert_int_equal(s.isolated, 30); assert_int_equal(s.sequences, 6);
    assert_int_equal(s.voices, 3); assert_int_equal(s.test_speakers, 1); assert_int_equal(s.train_speakers, 2);
    generate(&o2, &s);
    generate(&o3, &s);
    /* every file of the manifest: the same bytes for seed 5 twice, other bytes for seed 6 */
    char *man = tu_slurp(tu_tpath("a/manifest.tsv"));
    assert_non_null(man);
    assert_true(same_file(tu_tpath("a/manifest.tsv"), tu_tpath("b/manifest.tsv")));
    int files = 0, differ = 0;
    for (char *l = strchr(man, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        char rel[128];
        assert_int_equal(sscanf(l, "%127s", rel), 1);
        if (!same_file(tu_tpath("a/%s", rel), tu_tpath("b/%s", rel))) fail_msg("%s differs between two runs of one seed", rel);
        differ += !same_file(tu_tpath("a/%s", rel), tu_tpath("c/%s", rel));
        files++;
    }
    assert_int_equal(files, 36);
    assert_true(differ > 30);
    free(man);
    /* nothing but the corpus next to it: the temporary directory was renamed */
    DIR *d = opendir(tu_tmpdir());
    struct dirent *e;
    while ((e = readdir(d))) assert_null(strstr(e->d_name, ".tmp."));
    closedir(d);
}

/* The frame labels of one manifest line against its audio: one per frame, and the mean log energy
 * (log Σ of the 80 mel energies) of digit frames above that of silence frames, and the loudest frame
 * a digit frame (the SNR can be as low as 10 dB: the margin is small in the quietest files). */
static void check_labels(const char *dir, const char *line, const al_fbank *fb)
{
    char rel[128], labels[4096];
    /* path split speaker voice pitch range rate volume snr digits spans labels */
    if (sscanf(line, "%127s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %4095s", rel, labels) != 2) fail_msg("bad manifest line: %.80s", line);
    float *x; int64_t n, nreal; al_error e = {{0}};
    char path[600]; snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (al_audio_file_load(path, 0, &x, &n, &nreal, &e)) fail_msg("%s", e.msg);
    const int64_t T = al_fbank_frames(&fb->cfg, n);
    assert_int_equal((int64_t)strlen(labels), T);
    float *mel = malloc((size_t)T * 80 * sizeof *mel);
    if (al_fbank_logmel(fb, x, n, mel, &e)) fail_msg("%s", e.msg);
    double sil = 0, dig = 0, loudest = -1e30; int ns = 0, nd = 0, loud_label = 0;
    for (int64_t t = 0; t < T; t++) {
        double m = 0;
        for (int k = 0; k < 80; k++) m += exp(mel[t * 80 + k]);
        m = log(m);
        if (m > loudest) { loudest = m; loud_label = labels[t]; }
        if (labels[t] == '-') { sil += m; ns++; } else { dig += m; nd++; }
    }
    assert_true(ns > 0 && nd > 0);
    assert_int_not_equal(loud_label, '-');
    if (!(dig / nd > sil / ns + 0.3)) fail_msg("%s: digit frames %.2f, silence frames %.2f (log energy)", rel, dig / nd, sil / ns);
    free(x); free(mel);
}

static void test_splits_and_labels(void **st)
{
    (void)st;
    /* the digits load as a folder with train/ and test/: speakers never in both */
    al_audio_split d; al_error e = {{0}};
    if (al_audio_folder_load(tu_tpath("a/digits"), NULL, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.train.classes, 10); assert_int_equal(d.train.n, 20); assert_int_equal(d.test.n, 10);
    assert_int_equal(d.skipped, 0); assert_int_equal(d.train.nspeakers, 3);
    for (int i = 0; i < d.train.n; i++)
        for (int j = 0; j < d.test.n; j++) assert_int_not_equal(d.train.speaker[i], d.test.speaker[j]);
    for (int i = 0; i < d.train.n; i++) assert_true(al_audio_len(&d.train, i) >= 16000);   /* isolated clips: >= 1 s */
    al_audio_split_free(&d);
    /* frame labels: as many as the clip has frames, digit frames louder than silence */
    al_fbank fb;
    if (al_fbank_init(&fb, NULL, &e)) fail_msg("%s", e.msg);
    char *man = tu_slurp(tu_tpath("a/manifest.tsv"));
    int seqs = 0;
    for (char *l = strchr(man, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        check_labels(tu_tpath("a"), l, &fb);
        seqs += !strncmp(l, "sequences/", 10);
    }
    assert_int_equal(seqs, 6);
    free(man);
    al_fbank_free(&fb);
}

/* The sequences through al_frame_set_load: per split, clips in manifest order, labels per frame whose
 * runs (silence dropped) spell the digit string; broken manifests name their line. */
static void test_frame_sets(void **st)
{
    (void)st;
    al_frame_set tr, te; al_error e = {{0}};
    if (al_frame_set_load(tu_tpath("a"), "train", &tr, &e) || al_frame_set_load(tu_tpath("a"), "test", &te, &e)) fail_msg("%s", e.msg);
    assert_int_equal(tr.a.n, 4); assert_int_equal(te.a.n, 2);   /* 2 train speakers × 2, 1 test speaker × 2 */
    assert_int_equal(tr.a.nspeakers, 2); assert_int_equal(te.a.nspeakers, 1);
    al_fbank_cfg c = al_fbank_defaults();
    for (int i = 0; i < tr.a.n; i++) {
        const int64_t T = tr.foff[i + 1] - tr.foff[i];
        assert_int_equal(T, al_fbank_frames(&c, al_audio_len(&tr.a, i)));
        char spelled[16]; int k = 0, prev = AL_FRAME_SILENCE;
        for (int64_t t = 0; t < T; t++) {
            int l = tr.flab[tr.foff[i] + t];
            if (l != AL_FRAME_SILENCE && l != prev && k < 15) spelled[k++] = (char)('0' + l);
            prev = l;
        }
        spelled[k] = 0;
        int nd = (int)strlen(tr.digits[i]);
        assert_true(nd >= 3 && nd <= 7);
        /* a repeated digit after a pause spells twice; back-to-back spans cannot merge (pauses >= 15 ms) */
        assert_string_equal(spelled, tr.digits[i]);
    }
    al_frame_set_free(&tr); al_frame_set_free(&te);
    /* broken manifests: a label count off by one, a bad label, no such split, no manifest */
    char *man = tu_slurp(tu_tpath("a/manifest.tsv"));
    char *seq = strstr(man, "\nsequences/") + 1, *eol = strchr(seq, '\n');
    tu_mkdirs(tu_tpath("broken"));
    size_t head = (size_t)(seq - man);
    char *b = malloc(strlen(man) + 8);
    memcpy(b, man, head); memcpy(b + head, seq, (size_t)(eol - seq)); strcpy(b + head + (eol - seq), "-\n");
    tu_spit(tu_tpath("broken/manifest.tsv"), b, strlen(b));
    tu_mkdirs(tu_tpath("broken/sequences"));
    symlink(tu_tpath("a/sequences/train"), tu_tpath("broken/sequences/train"));
    symlink(tu_tpath("a/sequences/test"), tu_tpath("broken/sequences/test"));
    const char *split = strstr(seq, "\ttest\t") && strstr(seq, "\ttest\t") < eol ? "test" : "train";
    e.msg[0] = 0;
    assert_int_equal(al_frame_set_load(tu_tpath("broken"), split, &tr, &e), AL_ERR);
    int line = 1;
    for (size_t i = 0; i < head; i++) line += man[i] == '\n';
    char want[64];
    snprintf(want, sizeof want, "manifest.tsv:%d: ", line);
    if (!strstr(e.msg, want) || !strstr(e.msg, "frame labels for sequences/")) fail_msg("%s (want %s)", e.msg, want);
    b[head + (eol - seq)] = 'x';
    tu_spit(tu_tpath("broken/manifest.tsv"), b, strlen(b));
    e.msg[0] = 0;
    assert_int_equal(al_frame_set_load(tu_tpath("broken"), split, &tr, &e), AL_ERR);
    snprintf(want, sizeof want, "manifest.tsv:%d: frame label 'x'", line);
    if (!strstr(e.msg, want)) fail_msg("%s (want %s)", e.msg, want);
    e.msg[0] = 0;
    assert_int_equal(al_frame_set_load(tu_tpath("a"), "valid", &tr, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no sequences/ line of split 'valid'"));
    e.msg[0] = 0;
    assert_int_equal(al_frame_set_load(tu_tpath("a/digits"), "train", &tr, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no manifest.tsv"));
    free(b); free(man);
}

/* Two processes of the command, one and two jobs: the same tree, file by file. */
static void test_cli_jobs_same_bytes(void **st)
{
    (void)st;
    char args[1024];
    for (int j = 1; j <= 2; j++) {
        snprintf(args, sizeof args, "data speech-digits --out %s --speakers 4 --repeats 1 --sequences 1 --seed 9 --jobs %d",
                 tu_tpath("cli%d", j), j);
        if (tu_run_cli(tu_tmpdir(), args) != 0) fail_msg("attnlab %s failed: %s", args, tu_slurp(tu_tpath("err.txt")));
    }
    char *out = tu_slurp(tu_tpath("out.txt"));
    assert_non_null(strstr(out, "wrote 44 utterances (40 isolated digits, 4 sequences"));
    assert_non_null(strstr(out, "from 4 voices (3 train speakers, 1 test)"));
    free(out);
    char *man = tu_slurp(tu_tpath("cli1/manifest.tsv"));
    assert_true(same_file(tu_tpath("cli1/manifest.tsv"), tu_tpath("cli2/manifest.tsv")));
    int files = 0;
    for (char *l = strchr(man, '\n') + 1; *l; l = strchr(l, '\n') + 1, files++) {
        char rel[128];
        assert_int_equal(sscanf(l, "%127s", rel), 1);
        if (!same_file(tu_tpath("cli1/%s", rel), tu_tpath("cli2/%s", rel))) fail_msg("%s differs between --jobs 1 and 2", rel);
    }
    assert_int_equal(files, 44);
    free(man);
}

static void test_refused(void **st)
{
    (void)st;
    al_digits_stats s; al_error e = {{0}};
    al_digits_opts o = small(tu_tpath("a"), 5);   /* exists, not empty */
    assert_int_equal(al_speech_digits_generate(&o, &s, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "exists and is not empty"));
    o = small(tu_tpath("x"), 5); o.speakers = 1; e.msg[0] = 0;
    assert_int_equal(al_speech_digits_generate(&o, &s, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "1 speakers"));
    o = small(tu_tpath("no/such/dir"), 5); e.msg[0] = 0;
    assert_int_equal(al_speech_digits_generate(&o, &s, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "cannot create"));
    /* an empty directory is replaced by the corpus */
    tu_mkdirs(tu_tpath("empty"));
    o = small(tu_tpath("empty"), 5); o.sequences = 0; o.repeats = 1;
    generate(&o, &s);
    assert_int_equal(s.utterances, 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_splits_and_labels),
        cmocka_unit_test(test_frame_sets),
        cmocka_unit_test(test_cli_jobs_same_bytes),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
