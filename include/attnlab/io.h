/* attnlab/io.h — files: atomic writes and whole-file reads (fileio.c), the results CSV and run ids
 * (csv.c), JSON metadata look-ups (json.c), safetensors checkpoints (safetensors.c), PNG (png.c).
 *
 * Every file attnlab writes goes to PATH.tmp.PID and is renamed over PATH, so an interrupted run
 * never leaves a half-written file. The results CSV is append-only: one write(2) per row, and
 * al_csv_append() first cuts a torn last line left by a killed process.
 */
#ifndef ATTNLAB_IO_H
#define ATTNLAB_IO_H
#include <stdint.h>
#include <stddef.h>
#include "tensor.h"
#include "graph_import.h"

/* The results CSV: one row per epoch. `config` (the run's variant: its canonical key=value;...
 * description without task, data, model, size, seed and epochs, see al_run_config) and `status`
 * ("done" on the final row of a run that finished, empty otherwise) were added at the end in
 * attnlab 0.4; files with the older 14-column header (AL_CSV_HEADER_V1) still read, and appends to
 * such a file keep its 14 columns. */
#define AL_CSV_HEADER_V1 "run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,epoch_seconds,samples_per_second,params"
#define AL_CSV_HEADER AL_CSV_HEADER_V1 ",config,status"

/* One CSV row; a NaN double (or NULL string) is written as an empty field. */
typedef struct al_csv_row {
    const char *run_id, *task, *dataset, *model;
    long train_size, seed;
    int epoch;
    double train_loss, train_acc, val_acc, test_acc, epoch_seconds, samples_per_second;
    long params;
    const char *config;   /* al_run_config of the run, or NULL */
    const char *status;   /* "done" on a finished run's final row, else NULL */
} al_csv_row;
/* Append one row (writing the header first if the file is new or empty); repairs a torn last line. */
al_status al_csv_append(const char *path, const al_csv_row *r, al_error *err);
/* Format the row (no newline) into buf; returns length. */
int al_csv_format(char *buf, size_t n, const al_csv_row *r);

/* The variant part of a run's canonical description: its key=value pairs without task, data/dataset,
 * model, train_size, seed, epochs, the input shape (channels, height, width, classes) and optim,
 * and with a split's count cut off ("per-class:20" -> "per-class"), so runs that differ only in
 * seed, size or epochs share it. Returns the length written to buf (n bytes). */
int al_run_config(char *buf, size_t n, const char *canonical);
/* 16 hex digits of a 64-bit FNV-1a hash of a canonical description of a run. */
void al_run_id(char out[17], const char *canonical);

/* Write bytes to path atomically (tmp file + fsync + rename). */
al_status al_write_atomic(const char *path, const void *data, size_t n, al_error *err);
/* Read a whole file into a malloc'd NUL-terminated buffer (*len bytes). Caller frees. */
al_status al_read_file(const char *path, char **data, size_t *len, al_error *err);

/* safetensors: all parameters as F32 under their names; metadata as string pairs kv[0..2·nkv). */
al_status al_safetensors_save(const char *path, const al_params *p, const char *const *kv, int nkv, al_error *err);
/* Load into already-registered parameters (names and shapes must match exactly).
 * If meta is non-NULL it receives a malloc'd copy of the __metadata__ JSON object text. */
al_status al_safetensors_load(const char *path, al_params *p, char **meta, al_error *err);
/* Read only the header of a safetensors file (its 8-byte length, then the JSON, through the same
 * reader as al_safetensors_load) and return a malloc'd copy of its __metadata__ object text in *meta.
 * A file without __metadata__ is an error. */
al_status al_safetensors_read_meta(const char *path, char **meta, al_error *err);
/* Read one metadata value (a string) from the JSON text returned above; NULL if absent. Caller frees. */
char *al_meta_get(const char *meta_json, const char *key);

/* Graph directories (graph_write.c). al_graph_write: g as features.libsvm (non-zero values with %.9g,
 * exact for floats), edges.txt (g->adj must be symmetric), train/val/test.idx and, if classes is
 * non-NULL, classes.txt (g->nclass names); every file atomic; dir must exist.
 * al_graph_import: al_graph_import_read (graph_import.h), create o->out if missing, al_graph_write,
 * then al_graph_load the result as a check. */
al_status al_graph_write(const al_graph *g, const char *dir, const char *const *classes, al_error *err);
al_status al_graph_import(const al_import_opts *o, al_import_stats *st, al_error *err);

/* 8-bit PNG, channels 1 (grey), 3 (RGB) or 4 (RGBA), rows top to bottom, via libpng, atomic. */
al_status al_png_write(const char *path, const uint8_t *pix /* (h, w, channels) */, int w, int h, int channels, al_error *err);
#endif
