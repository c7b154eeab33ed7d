/* attnlab/speechgen.h — a spoken-digit corpus synthesised here with libespeak-ng, no download.
 *
 *   al_digits_opts o = al_digits_defaults();   // 50 speakers × (10 digits × 5 + 50 sequences) = 5000
 *   o.out = "speech"; o.seed = 1;
 *   al_digits_stats s; al_error e = {{0}};
 *   if (al_speech_digits_generate(&o, &s, &e)) { fprintf(stderr, "%s\n", e.msg); ... }
 *
 * Every speaker is a distinct espeak-ng voice: one of 8 English variants (en, en-us, en-gb-scotland,
 * en-gb-x-rp, en-gb-x-gbclan, en-gb-x-gbcwmd, en-029, en-us-nyc) with one of 24 voice variants (m1-m8,
 * f1-f5, klatt-klatt4, ...), no (language, variant) pair used twice until all 192 are taken, and its
 * own pitch, pitch range, speed, amplitude and pause length; each utterance jitters speed and pitch a
 * little and gets seeded background noise (white and low-passed, 10 to 40 dB below the speech).
 *
 * Each digit word is synthesised on its own (espeak-ng's synchronous mode, 22 050 Hz), its span is
 * where its 5-ms RMS envelope is within 40 dB of its peak, and it is resampled to 16 kHz with
 * libsamplerate; utterances are built from those spans and silences, so every boundary is known to
 * the sample. Frame t (samples 160t .. 160t + 400, the front end's frames) is labelled with the digit
 * whose span holds its centre 160t + 200, else '-' (silence).
 *
 * Layout of o.out (16-bit mono 16 kHz WAV, names SPEAKER_TAKE.wav, which audio.h's speaker rule reads):
 *   digits/{train,test}/D/sNNN_K.wav      one digit D (0-9), the N-to-1 task: al_audio_folder_load
 *   sequences/{train,test}/sNNN_K.wav     3 to 7 digits with pauses, the N-to-N task
 *   manifest.tsv                          one line per file: path, split, speaker, voice, its
 *                                         parameters, SNR, the digits, their sample spans, frame labels
 * The test split is round(test_frac · speakers) whole speakers (at least one), seeded: no speaker is in
 * both. The same options and seed give byte-identical files. The corpus is written into
 * OUT.tmp.HOST.PID/ (made exclusively: al_tmp_dir) and renamed to OUT when complete (OUT must not
 * exist, or be an empty directory), so a killed run never leaves a partial corpus under OUT.
 *
 * Each speaker is synthesised in a child process of its own (fork), up to `jobs` at once, with
 * libespeak-ng initialised afresh: espeak-ng's output depends on what it synthesised before (the same
 * word comes out a few samples longer or shorter after other words), and it keeps global state, so a
 * fresh process per speaker is what makes a speaker's files the same whatever ran before, in any
 * order and with any number of jobs. The calling process never initialises espeak-ng.
 */
#ifndef ATTNLAB_SPEECHGEN_H
#define ATTNLAB_SPEECHGEN_H
#include <stdint.h>
#include "tensor.h"

#define AL_DIGITS_MAX_SPEAKERS 999
typedef struct al_digits_opts {
    const char *out;       /* the corpus directory */
    int speakers;          /* 1 .. AL_DIGITS_MAX_SPEAKERS (50) */
    int repeats;           /* isolated takes of each digit per speaker (5) */
    int sequences;         /* connected-digit utterances per speaker (50) */
    double test_frac;      /* speakers held out (0.2) */
    uint64_t seed;         /* (1) */
    int jobs;              /* speakers synthesised at once, one process each; 0: the online CPUs */
} al_digits_opts;
al_digits_opts al_digits_defaults(void);

typedef struct al_digits_stats {
    int utterances, isolated, sequences;   /* files written */
    int voices;                            /* distinct (language, variant) pairs */
    int train_speakers, test_speakers;
    double audio_seconds;
} al_digits_stats;

al_status al_speech_digits_generate(const al_digits_opts *o, al_digits_stats *st, al_error *err);
#endif
