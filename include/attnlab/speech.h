/* attnlab/speech.h — speech on the sequence models: utterances as frame features (39 MFCC or 80 log-mel,
 * fbank.h), N-to-1 (one class per utterance: the digit, or the speaker) and N-to-N (a label per frame).
 *
 *   al_speech_opts so = {.features = AL_SPEECH_MFCC, .cmvn = 1};
 *   al_speech_data tr, te;
 *   al_speech_from_audio(&split.train, &so, AL_SPEECH_BY_CLASS, &tr, &err);   // N-to-1 (audio.h)
 *   al_speech_from_frames(&fs, &so, &tr, &err);                               // N-to-N (al_frame_set)
 *   al_seq_config cfg; al_speech_config(&cfg, "trunc", &tr, 1, &err);         // the model reads frames
 *   al_seq_init(&m, &cfg, seed, &err);
 *   al_speech_train(&m, &tr, &te, &tc, cb, ud, &err);
 *
 * The models are those of seq.h with feat_dim set: frames → linear → (subsampling) → sa | trunc |
 * window-fc | rnn → per-frame logits. N-to-1 takes the mean of an utterance's frame logits — for sa,
 * trunc and rnn, whose head is linear, exactly mean pooling of the last hidden states followed by the
 * head; for window-fc the mean of its per-frame predictions. With subsampling, frame t' of the output
 * stands for input frame subsample·t' (the centre of its kernels): training labels are read there, and
 * evaluation gives every input frame the prediction of the nearest output frame, so frame accuracy is
 * always counted at 100 frames per second. Library code: nothing prints.
 */
#ifndef ATTNLAB_SPEECH_H
#define ATTNLAB_SPEECH_H
#include <stdint.h>
#include "audio.h"
#include "seq.h"
#include "trainstate.h"

typedef enum { AL_SPEECH_MFCC, AL_SPEECH_FBANK } al_speech_features;
typedef enum { AL_SPEECH_BY_CLASS, AL_SPEECH_BY_SPEAKER } al_speech_target;
al_status   al_speech_features_parse(const char *s, al_speech_features *out, al_error *err);
const char *al_speech_features_name(al_speech_features f);

typedef struct al_speech_opts {
    al_speech_features features;   /* mfcc (39 per frame, default) or fbank (80) */
    int cmvn;                      /* 1: each utterance's dimensions to mean 0, variance 1 */
} al_speech_opts;

/* Utterances as frame features; owns its memory. */
typedef struct al_speech_data {
    int n, dim, classes;           /* utterances, features per frame, label classes */
    int framewise;                 /* 1: a label per frame (flab), 0: one per utterance (label) */
    int max_frames;                /* the longest utterance */
    int64_t *foff;                 /* (n + 1): utterance i owns frames foff[i] .. foff[i+1] */
    float *x;                      /* (foff[n], dim) */
    int *label;                    /* (n) N-to-1, else NULL */
    uint8_t *flab;                 /* (foff[n]) N-to-N (0-9 digits, AL_FRAME_SILENCE), else NULL */
    int *speaker;                  /* (n) speaker index or -1 */
    char **digits;                 /* (n) N-to-N: each utterance's digit string, else NULL */
    char **class_names;            /* (classes) */
} al_speech_data;
void al_speech_data_free(al_speech_data *d);

/* The clips of a (the split of an audio folder) as frames; label = their class (by_class) or their
 * speaker (by_speaker: classes = a->nspeakers, every clip must name one). Clips shorter than one frame are an error. */
al_status al_speech_from_audio(const al_audio *a, const al_speech_opts *o, al_speech_target target, al_speech_data *out, al_error *err);
/* The utterances of a frame set as frames, labels per frame (11 classes: digits, silence). */
al_status al_speech_from_frames(const al_frame_set *f, const al_speech_opts *o, al_speech_data *out, al_error *err);
/* Every utterance of f padded with silence (label AL_FRAME_SILENCE) or cut to round(seconds · 16000)
 * samples; the digit strings are re-read from the labels (a cut may drop or split a digit). */
al_status al_frame_set_fit(al_frame_set *f, double seconds, al_error *err);
/* The folder of N-to-1 clips for --data DIR: DIR/digits when DIR is a speech-digits corpus, else DIR
 * itself (any DIR/CLASS/FILE folder); written to buf (n bytes), which is returned. */
const char *al_speech_clip_dir(const char *dir, char *buf, size_t n);
/* The utterances idx[0..k) of d, in that order, as a new set (copies). */
al_status al_speech_subset(const al_speech_data *d, const int *idx, int k, al_speech_data *out, al_error *err);

/* Defaults of sequence model `name` reading d's frames: feat_dim = d->dim, tags = d->classes,
 * max_len = the longest utterance of d after subsampling (at least 1). */
al_status al_speech_config(al_seq_config *cfg, const char *name, const al_speech_data *d, int subsample, al_error *err);

typedef struct al_speech_scores {
    double acc;                    /* N-to-1: utterance accuracy; N-to-N: frame accuracy (100 frames/s) */
    double ser;                    /* N-to-N: digit-string error rate (runs merged, silence dropped); else NaN */
    int64_t n;                     /* utterances (N-to-1) or frames (N-to-N) counted */
} al_speech_scores;

typedef struct al_speech_train_config {
    int epochs, batch, eval_batch; /* batch in utterances (16); eval_batch 64 */
    float lr, weight_decay;        /* AdamW 1e-3, 0.01 */
    uint64_t seed;
    int max_steps;                 /* > 0: stop after this many steps (tests) */
    const al_resume *resume;       /* as in al_seq_train */
} al_speech_train_config;

typedef struct al_speech_progress {
    int kind, epoch, epochs, step, steps_per_epoch;   /* kind 0 step, 1 epoch end */
    double loss, train_acc;        /* the step's; at the epoch end the epoch's (frame- or utterance-weighted) */
    al_speech_scores test;         /* at the epoch end */
    double epoch_seconds, frames_per_s, elapsed;
} al_speech_progress;
typedef int (*al_speech_cb)(void *ud, const al_speech_progress *p);

/* AdamW on mean cross-entropy (over the batch's frames, or its utterances); divergence stops with AL_ERR. */
al_status al_speech_train(al_seq_model *m, const al_speech_data *train, const al_speech_data *test,
                          const al_speech_train_config *tc, al_speech_cb cb, void *ud, al_error *err);
/* Scores of m on d; pred (may be NULL) receives per utterance (N-to-1) or per input frame (N-to-N) the argmax. */
al_status al_speech_eval(al_seq_model *m, const al_speech_data *d, int batch, al_speech_scores *sc, int *pred, al_error *err);
/* The digit string of a frame labelling: runs of one label merged, silence dropped ("0417"); out holds n + 1. */
void al_speech_decode(const uint8_t *lab, int64_t n, char *out);

/* Canonical description of a speech run (for al_run_id): "task=speech;" + what (the data's key=value
 * pairs) + the training settings + the model configuration. */
int al_speech_run_canonical(char *buf, size_t n, const al_seq_config *cfg, const char *what, long train_size,
                            int epochs, float lr, float wd, int batch, long seed);

/* safetensors, metadata format "attnlab-speech": the model configuration plus features, cmvn, framewise,
 * class names (joined by '\n') and the extra pairs. */
al_status al_speech_save(const char *path, const al_seq_model *m, const al_speech_opts *o, const al_speech_data *d,
                         const char *const *kv, int nkv, al_error *err);
/* Rebuilds the model; *o the front end it was trained on; *meta (may be NULL) a malloc'd copy of the metadata. */
al_status al_speech_load(const char *path, al_seq_model *m, al_speech_opts *o, char **meta, al_error *err);
#endif
