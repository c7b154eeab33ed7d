/* attnlab/text.h — sequence-labelling data: CoNLL-U treebanks (UPOS tags) and token features.
 *
 * A treebank file becomes one flat array of word forms plus a tag per word and sentence offsets:
 *
 *   al_conllu d; al_error e = {{0}};
 *   if (al_conllu_read("train.conllu.gz", NULL, &d, &e)) { fprintf(stderr, "%s\n", e.msg); ... }
 *   for (int s = 0; s < d.nsent; s++)
 *       for (int i = d.sent_start[s]; i < d.sent_start[s + 1]; i++)
 *           printf("%s/%s ", d.form[i], al_upos_name(d.tag[i]));
 *   al_conllu_free(&d);
 *
 * Features follow the PyTorch reference (torch_pos.py, class Featurizer) exactly for ASCII
 * text: word id of the lower-cased form, suffix id of its last 3 characters (code points), 4 shape
 * bits. Ids: 0 = padding, 1 = <unk>, 2… = strings seen >= 2 times in train, in byte-wise (= code point)
 * sorted order. Lower-casing and character classes beyond ASCII use a small table (see al_text_lower).
 *
 * Nothing here prints: errors come back in al_error as "FILE:LINE: what is wrong".
 */
#ifndef ATTNLAB_TEXT_H
#define ATTNLAB_TEXT_H
#include <stdint.h>
#include "tensor.h"

/* ---------- UPOS tags ---------- */
#define AL_UPOS_N 17
/* "ADJ" … "X" for 0 … 16 (alphabetical, as torch_pos.py's TAGS); "_" for -1; NULL otherwise. */
const char *al_upos_name(int tag);
/* Index of a tag name (exact, case-sensitive), or -1. */
int al_upos_index(const char *name);

/* ---------- CoNLL-U reading ---------- */
#define AL_CONLLU_MAX_LINE 65536   /* bytes in one line (without the newline); longer is an error */
#define AL_CONLLU_MAX_LEN 512      /* default limit on words per sentence */

typedef struct al_conllu_opts {
    int max_len;          /* words per sentence; 0: AL_CONLLU_MAX_LEN */
    int allow_untagged;   /* 1: UPOS '_' allowed, giving tag -1 (text to tag); 0: every word needs a tag */
} al_conllu_opts;

/* A treebank: syntactic words only (multi-word-token ranges "3-4" and empty nodes "8.1" are skipped).
 * Owns all its memory. */
typedef struct al_conllu {
    int nsent, ntok;
    int *sent_start;      /* (nsent + 1): words of sentence s are [sent_start[s], sent_start[s + 1]) */
    long *sent_line;      /* (nsent): line number (1-based) of the sentence's first line */
    const char **form;    /* (ntok): word forms, UTF-8, NUL-terminated, pointing into text */
    int *tag;             /* (ntok): UPOS 0 … 16, or -1 for '_' (only with allow_untagged) */
    char *text;           /* all forms back to back */
    int max_sent_len;     /* words in the longest sentence */
} al_conllu;

/* Reads a CoNLL-U file, gzip-compressed or plain (decided from its content). opts NULL = defaults.
 * Checks: UTF-8 (the error gives the byte column), 10 tab-separated fields per word line, ID continuing
 * 1, 2, 3 … within the sentence, a known UPOS tag, a non-empty FORM, at most max_len words per sentence
 * (the error names the sentence's first line), lines up to AL_CONLLU_MAX_LINE bytes, at least one
 * sentence, a complete gzip stream. A trailing '\r' is stripped; a final sentence without a blank line
 * after it is kept. On error out is left empty (nothing to free). */
al_status al_conllu_read(const char *path, const al_conllu_opts *opts, al_conllu *out, al_error *err);
void al_conllu_free(al_conllu *d);   /* frees the arrays and zeroes the struct */

/* Path of one split in a treebank directory: the first of DIR/SPLIT.conllu.gz, DIR/SPLIT.conllu, then
 * the UD release names DIR/ *-ud-SPLIT.conllu.gz, DIR/ *-ud-SPLIT.conllu (an error if that pattern matches
 * more than one file). split is "train", "dev" or "test". */
al_status al_conllu_find(const char *dir, const char *split, char *out, size_t n, al_error *err);

/* train, dev and test of a treebank directory; has_dev = 0 (and dev empty) when the directory has no
 * dev file (some UD treebanks have none). */
typedef struct al_conllu_set { al_conllu train, dev, test; int has_dev; } al_conllu_set;
al_status al_conllu_load_dir(const char *dir, const al_conllu_opts *opts, al_conllu_set *out, al_error *err);
void al_conllu_set_free(al_conllu_set *s);

/* One sentence of n words as CoNLL-U text: per word ID, FORM, '_', UPOS (al_upos_name(tags[i]), '_' for
 * -1; tags NULL: all '_'), then six '_' fields, and a closing blank line; al_conllu_read reads it back.
 * *out is malloc'd (caller frees), NUL-terminated, *len its length. A form that is empty or holds a tab,
 * newline or carriage return, or a tag outside -1 … 16, is an error (*out NULL). */
al_status al_conllu_format(int n, const char *const *forms, const int *tags, char **out, size_t *len,
                           al_error *err);

/* ---------- token features (torch_pos.py's Featurizer) ---------- */
/* Lower-cases UTF-8 s into out (size n; NUL-terminated). ASCII exactly as Python's str.lower(); beyond
 * ASCII a table: Latin-1 Supplement, Latin Extended-A (İ becomes "i̇" as in Python), Greek (without the
 * final-sigma rule) and Cyrillic; every other code point is left unchanged. Returns the length, or -1 if
 * out is too small (lower-casing can grow a string: size 3·strlen(s) + 1 always suffices). */
int al_text_lower(const char *s, char *out, size_t n);
/* The 4 shape bits of a word as Python computes them: [0] first character is upper case, [1] the word has
 * a cased character and all of them are upper case (str.isupper), [2] has a digit, [3] has no letter or
 * digit (not any isalnum). Character classes beyond ASCII by the same table as al_text_lower, plus the
 * Latin-1 digits ¹²³, numbers ¼½¾ and letters ªºµ; other scripts count as letters, general punctuation
 * and symbol blocks (U+2000–U+2BFF, U+3000–U+303F) as neither. */
void al_text_shape(const char *word, float bits[4]);

/* A sorted set of distinct strings; string i has id i + 2 (0 = padding, 1 = <unk>). */
typedef struct al_vocab { int n; char **s; char *pool; } al_vocab;   /* s[i] point into pool */
/* Id of s (>= 2), or 1 (<unk>) when absent. Binary search. */
int al_vocab_id(const al_vocab *v, const char *s);

typedef struct al_featurizer {
    al_vocab words;        /* lower-cased train words seen >= 2 times */
    al_vocab suffixes;     /* last 3 code points of lower-cased train words seen >= 2 times */
    al_vocab train_words;  /* every lower-cased train word (for the "unseen in train" flags) */
    al_vocab ambiguous;    /* lower-cased train words seen with >= 2 distinct UPOS tags ("saw": NOUN, VERB),
                            * for the "ambiguous in train" flags; empty when loaded from a version 1 text */
} al_featurizer;
/* Builds the vocabularies from a training treebank (min_count 2, as the reference; ambiguous from
 * its tags, untagged words ignored). */
al_status al_feat_build(const al_conllu *train, al_featurizer *fz, al_error *err);
void al_feat_free(al_featurizer *fz);
static inline int al_feat_nwords(const al_featurizer *fz) { return fz->words.n + 2; }     /* embedding rows */
static inline int al_feat_nsuffixes(const al_featurizer *fz) { return fz->suffixes.n + 2; }
/* Features of every word of d: word_id (ntok), suffix_id (ntok), shape (ntok, 4) floats 0/1, unseen
 * (ntok) 1 if the lower-cased word never occurs in train, ambiguous (ntok) 1 if it is in
 * fz->ambiguous (it took two or more tags in train); any output may be NULL. */
al_status al_feat_encode(const al_featurizer *fz, const al_conllu *d, int *word_id, int *suffix_id,
                         float *shape, uint8_t *unseen, uint8_t *ambiguous, al_error *err);
/* The vocabularies as one text (for checkpoints): "attnlab-vocab 2\n", then for each of words, suffixes,
 * train_words, ambiguous a line "NAME COUNT" and COUNT lines, one string each. *out is malloc'd (caller
 * frees), NUL-terminated, *len its length. */
al_status al_feat_save(const al_featurizer *fz, char **out, size_t *len, al_error *err);
/* Parses al_feat_save's text (len bytes) back; checks the header, counts, UTF-8 and strictly increasing
 * order, and reports the line of any problem. Version 1 texts ("attnlab-vocab 1": no ambiguous section)
 * load with fz->ambiguous empty. On error fz is left empty. */
al_status al_feat_load(const char *text, size_t len, al_featurizer *fz, al_error *err);
/* ---------- generated sequence tasks with unlimited data (the distance experiments) ----------
 * Sequences of `len` tokens as a treebank (al_conllu) whose tags are the labels, -1 where a token has
 * none (only the query tokens are labelled; tags 0 .. values-1 are class ids, not UPOS):
 *   recall:LEN   associative recall: `pairs` key-value pairs ("k7" then "v3") at random, non-overlapping
 *                places among fillers ("x"), then `queries` of the keys again at the end (each a key of
 *                the context, distinct), labelled with the value that followed that key far earlier;
 *   copy:LEN     selective copy: `pairs` value tokens at random places among fillers, then `queries`
 *                markers ("?"), the j-th labelled with the j-th value of the context.
 * The same (spec, n, seed) gives the same sequences; train and test come from different seeds. */
typedef struct al_gen_seq_cfg {
    int kind;             /* 0 recall, 1 selective copy */
    int len, pairs, queries, keys, values;   /* defaults: pairs 4, queries 4, keys 32, values 10 */
} al_gen_seq_cfg;
/* "recall:LEN" or "copy:LEN" (LEN 2·pairs + queries .. 100000) into *cfg with the defaults; 1 if s is
 * not such a spec at all (a treebank name), 0 on success, -1 (err set) for a bad one. */
int       al_gen_seq_parse(const char *s, al_gen_seq_cfg *cfg, al_error *err);
al_status al_gen_seq(const al_gen_seq_cfg *cfg, int n, uint64_t seed, al_conllu *out, al_error *err);
/* ---------------- encoded treebanks (src/data/seqdata.c) ---------------- */
/* A treebank's features, encoded once: sentence s owns tokens [start[s], start[s+1]). */
typedef struct al_seq_data {
    int nsent, ntok, max_len;
    int *start;                    /* (nsent + 1) */
    int *word, *suffix, *tag;      /* (ntok); tag −1 = untagged */
    float *shape;                  /* (ntok, 4) */
    uint8_t *unseen;               /* (ntok) 1 = lower-cased word not in train */
    uint8_t *ambiguous;            /* (ntok) 1 = lower-cased word took >= 2 tags in train; NULL = none */
} al_seq_data;
al_status al_seq_data_encode(const al_featurizer *fz, const al_conllu *d, al_seq_data *out, al_error *err);
void      al_seq_data_free(al_seq_data *d);
/* The sentences idx[0..n) of d, in that order, as a new treebank (copies). */
al_status al_conllu_subset(const al_conllu *d, const int *idx, int n, al_conllu *out, al_error *err);

#endif
