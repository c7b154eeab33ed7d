/* attnlab/audio.h — audio folders DIR/CLASS/FILE (WAV, FLAC, OGG, ... through libsndfile), mixed to
 * mono, resampled to 16 kHz (libsamplerate), padded or cut to a fixed length, split by speaker.
 *
 *   al_audio_opts o = {.max_seconds = 1.0, .warn = my_warn};
 *   al_audio_split d; al_error e = {{0}};
 *   if (al_audio_folder_load("speech/digits", &o, &d, &e)) { fprintf(stderr, "%s\n", e.msg); ... }
 *   for (int i = 0; i < d.train.n; i++) { const float *x = al_audio_clip(&d.train, i); int64_t n = al_audio_len(&d.train, i); ... }
 *   al_audio_split_free(&d);
 *
 * Layout: DIR/train/CLASS/FILE and DIR/test/CLASS/FILE are the splits when both exist; otherwise
 * DIR/CLASS/FILE is split here. Speakers: a file named SPEAKER_REST (a non-empty SPEAKER before the first
 * '_', anything after it: Speech Commands' "0a7c2a8d_nohash_0.wav", the generator's "s017_3.wav")
 * names its speaker. When every usable file names one (and there are at least two speakers), the held-out
 * split takes round(test_frac · speakers) whole speakers, seeded, so no speaker is in both splits;
 * otherwise round(test_frac · n) files of each class, seeded.
 *
 * Every file is checked before it is read: libsndfile must open it, its header must claim 1 to
 * AL_AUDIO_MAX_CHANNELS channels, a rate of AL_AUDIO_MIN_RATE to AL_AUDIO_MAX_RATE Hz, at least one
 * frame and at most AL_AUDIO_MAX_SECONDS seconds, and no more than AL_AUDIO_MAX_RATIO decoded bytes per
 * byte of file; the whole load is budgeted (al_mem_check, io.h) before any sample is decoded. A file
 * that fails a check or does not decode (fewer frames than its header claims, a NaN sample, or a
 * mono sample beyond +-AL_AUDIO_MAX_AMPLITUDE: float files hold +-1, or +-32768 when written at
 * 16-bit scale; a larger value makes the front end's spectrum overflow float) is
 * skipped with a warning naming it; a class left with no usable file, or a folder with none, is an
 * error. Nothing here prints.
 */
#ifndef ATTNLAB_AUDIO_H
#define ATTNLAB_AUDIO_H
#include <stdint.h>
#include "tensor.h"
#include "datadir.h"

#define AL_AUDIO_RATE 16000             /* every clip is resampled to this rate */
#define AL_AUDIO_MAX_SECONDS 600        /* a header claiming longer is refused (10 minutes) */
#define AL_AUDIO_MAX_CHANNELS 64
#define AL_AUDIO_MAX_AMPLITUDE 1e6      /* a decoded sample beyond +-this is refused */
#define AL_AUDIO_MIN_RATE 1000
#define AL_AUDIO_MAX_RATE 768000
/* Decoded 16-bit bytes per byte of file above which (and above AL_AUDIO_FREE_BYTES in all) a header is
 * taken to be forged or the file truncated: FLAC's densest case, digital silence, stays near 550:1. */
#define AL_AUDIO_MAX_RATIO 4096
#define AL_AUDIO_FREE_BYTES ((uint64_t)1 << 22)

/* A set of labelled mono clips at `rate` Hz, stored back to back. Owns all its memory. */
typedef struct al_audio {
    int n, classes, nspeakers, rate;
    int64_t *off;           /* (n + 1): clip i is x[off[i] .. off[i+1]) */
    float *x;               /* (off[n]) samples, nominally in [-1, 1] */
    int64_t *nreal;         /* (n) samples of clip i that come from its file (the rest is zero padding) */
    int *labels;            /* (n) each in [0, classes) */
    int *speaker;           /* (n) index into speaker_names, or -1 when the file name carries none */
    char **class_names;     /* (classes) */
    char **speaker_names;   /* (nspeakers), sorted; the same list in both splits of a load */
    char **paths;           /* (n) the files */
} al_audio;
/* skipped: files the load skipped; by_speaker: 1 if the held-out split was made by speaker. */
typedef struct al_audio_split { al_audio train, test; int skipped, by_speaker; } al_audio_split;

void al_audio_free(al_audio *a);              /* frees the arrays and zeroes the struct */
void al_audio_split_free(al_audio_split *s);
static inline const float *al_audio_clip(const al_audio *a, int i) { return a->x + a->off[i]; }
static inline int64_t al_audio_len(const al_audio *a, int i) { return a->off[i + 1] - a->off[i]; }

typedef struct al_audio_opts {
    double max_seconds;     /* > 0: every clip zero-padded or cut to round(max_seconds · 16000) samples;
                             * 0: each clip keeps its own (resampled) length */
    double test_frac;       /* held out when DIR has no train/ and test/; 0: 0.2 */
    uint64_t split_seed;    /* seed of that split (stream AL_RNG_DATA) */
    al_warn_fn warn;        /* called once per skipped file with a message naming it; may be NULL */
    void *warn_ud;
} al_audio_opts;
/* Loads DIR/CLASS/FILE (classes and files sorted by name) as described at the top. opts may be NULL
 * (all defaults: own lengths, 20 %, seed 0, no warnings). */
al_status al_audio_folder_load(const char *dir, const al_audio_opts *opts, al_audio_split *out, al_error *err);

/* ---------- frame-labelled utterances (the N-to-N task) ---------- */
#define AL_FRAME_SILENCE 10   /* the frame label of silence; digits are 0-9 */
/* The utterances of one split of a speech-digits corpus (speechgen.h) with a label per front-end frame. */
typedef struct al_frame_set {
    al_audio a;             /* the clips at their own lengths (labels 0, classes 0: there is no clip class) */
    int64_t *foff;          /* (n + 1): clip i's frame labels are flab[foff[i] .. foff[i+1]) */
    uint8_t *flab;          /* 0-9 the digit spoken at the frame's centre, AL_FRAME_SILENCE otherwise */
    char **digits;          /* (n) the digit string of each clip ("0417") */
} al_frame_set;
void al_frame_set_free(al_frame_set *f);
/* Reads DIR/manifest.tsv (speechgen.h: path, split, speaker, voice, pitch, range, rate, volume, SNR, digits,
 * spans, frame labels) and loads every sequences/ file of `split` ("train" or "test") through
 * al_audio_file_load, in manifest order, speakers by the file-name rule. The clips' total size is
 * budgeted from the files' sizes before any is read. Errors name the manifest and its line: a missing
 * column, a label that is neither a digit nor '-', a label count other than the clip's frame count
 * 1 + (n − 400) / 160, a file that does not load; no line of that split is an error too. */
al_status al_frame_set_load(const char *dir, const char *split, al_frame_set *out, al_error *err);

/* One file, through the same checks: *x (malloc'd, caller frees) receives *n mono samples at 16 kHz
 * (round(max_seconds · 16000) when max_seconds > 0, padded or cut), *nreal of them from the file. */
al_status al_audio_file_load(const char *path, double max_seconds, float **x, int64_t *n, int64_t *nreal, al_error *err);
#endif
