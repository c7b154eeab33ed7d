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

/* The digit string of a frame labelling: runs of one label merged, silence dropped ("0417"); out holds n + 1. */
void al_speech_decode(const uint8_t *lab, int64_t n, char *out);

#endif
