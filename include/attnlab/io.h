/* attnlab/io.h — the I/O floor (src/io/), below every reader and model: atomic writes (fileio.c),
 * every input opened and read within the memory budget (input.c), the results CSV and run ids (csv.c), JSON metadata look-ups (json.c), safetensors
 * (safetensors.c), PNG (png.c), the memory budget and checked sizes (membudget.c).
 *
 * Every file attnlab writes whole goes through al_atomic_begin/al_atomic_commit (al_write_atomic):
 * a temporary beside it, renamed over it, so an interrupted run never leaves a half-written file. The
 * results CSV is append-only: one write(2) per row; al_csv_append() first cuts a torn last line left
 * by a killed process, and an append that fails cuts the file back to its size before it.
 */
#ifndef ATTNLAB_IO_H
#define ATTNLAB_IO_H
#include <stdint.h>
#include <stddef.h>
#include "tensor.h"

/* The results CSV: one row per epoch. `config` (the run's variant: its canonical key=value;...
 * description without task, data, model, size, seed and epochs, see al_run_config) and `status`
 * ("done" on the final row of a run that finished, empty otherwise) were added at the end in
 * attnlab 0.4; `unseen_acc` and `ambig_acc` (sequence runs: test token accuracy on words unseen in
 * train, and on words that took two or more tags in train; empty for other tasks) in 0.5. Files with
 * an older header (AL_CSV_HEADER_V1: 14 columns, AL_CSV_HEADER_V2: 16) still read, and appends to such
 * a file keep its columns. */
#define AL_CSV_HEADER_V1 "run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,epoch_seconds,samples_per_second,params"
#define AL_CSV_HEADER_V2 AL_CSV_HEADER_V1 ",config,status"
/* 0.5: unseen_acc, ambig_acc (sequence task: words unseen in training, ambiguous words) and test_rmse,
 * test_mae (regression: --task molecule) appended at the end; empty where a task does not report them.
 * Files with the 16-column header (AL_CSV_HEADER_V2) still read, and appends keep their 16 columns. */
#define AL_CSV_HEADER AL_CSV_HEADER_V2 ",unseen_acc,ambig_acc,test_rmse,test_mae"

/* One CSV row; a NaN double (or NULL string) is written as an empty field. */
typedef struct al_csv_row {
    const char *run_id, *task, *dataset, *model;
    long train_size, seed;
    int epoch;
    double train_loss, train_acc, val_acc, test_acc, epoch_seconds, samples_per_second;
    long params;
    const char *config;   /* al_run_config of the run, or NULL */
    const char *status;   /* "done" on a finished run's final row, else NULL */
    /* unseen_acc and ambig_acc are written only when word_scores is set (sequence runs); a row zeroed
     * with memset (image, graph) leaves both columns empty. NaN is an empty field as elsewhere. */
    int word_scores;
    double unseen_acc, ambig_acc;
    int regression;       /* 1: test_rmse and test_mae are written (else those fields are empty) */
    double test_rmse, test_mae;
} al_csv_row;
/* Append one row (writing the header first if the file is new or empty); repairs a torn last line.
 * If the write or its fsync fails (a full disk, the file-size limit, an I/O error), the file is cut
 * back to its size before the append, so no reader sees a torn row; the error names the file and the
 * reason ("r.csv: writing a CSV row failed: File too large"). */
al_status al_csv_append(const char *path, const al_csv_row *r, al_error *err);
/* Resuming a run (trainstate.h): *n = the rows of run_id in the CSV at path (a missing file has none),
 * *n_done = how many of them come up to and including its last row marked done (0: none). */
al_status al_csv_run_rows(const char *path, const char *run_id, int *n, int *n_done, al_error *err);
/* Keep the first `keep` rows of run_id and remove its later ones (*removed says how many): by
 * truncation when they are the file's tail, else by an atomic rewrite; under the lock appends take. */
al_status al_csv_keep_run_rows(const char *path, const char *run_id, int keep, int *removed, al_error *err);
/* Before any work: can al_csv_append append to path? An existing file (or the file a symbolic link
 * leads to) must be a regular file that opens for writing and starts with attnlab's results header
 * (either version) or is empty; a new one must be creatable (al_output_check). */
al_status al_csv_check(const char *path, al_error *err);
/* Format the row (no newline) into buf; returns length. */
int al_csv_format(char *buf, size_t n, const al_csv_row *r);

/* The variant part of a run's canonical description: its key=value pairs without task, data/dataset,
 * model, train_size, seed, epochs, the input shape (channels, height, width, classes), the vocabulary
 * sizes (nwords, nsuffixes: they follow from the training sentences) and optim,
 * and with a split's count cut off ("per-class:20" -> "per-class"), so runs that differ only in
 * seed, size or epochs share it. Returns the length written to buf (n bytes). */
int al_run_config(char *buf, size_t n, const char *canonical);
/* 16 hex digits of a 64-bit FNV-1a hash of a canonical description of a run. */
void al_run_id(char out[17], const char *canonical);

/* ---------- files written whole: one safe path ----------
 * The destination PATH must not exist, or be a regular file, or be a symbolic link that leads to a
 * regular file. Anything else is refused with one message naming it: "PATH: is a directory, expected
 * a file name", "PATH: is a FIFO, not a regular file" (likewise a socket, a block device, and a
 * character device such as /dev/null: never written in place), "PATH: is a symbolic link that leads
 * to no file: ...". A symbolic link stays a link: the regular file it leads to (DEST, the link
 * resolved) is the one replaced, and its temporary is made in DEST's directory.
 *   The temporary is DEST.tmp.HOST.PID (HOST: gethostname with every byte outside [A-Za-z0-9-] made
 * '-'), or DEST.tmp.HOST.PID.N (N = 1, 2, ...) while that name is taken, created in DEST's directory
 * with O_CREAT|O_EXCL|O_NOFOLLOW (mode 0644 less the umask): a link planted under its name is never
 * followed. It is fsynced, renamed over DEST, and the directory fsynced; on any failure it is removed.
 * Before it is made, DEST's temporaries that processes of this host left and that no longer run
 * (their PID gone: kill(PID, 0) fails with ESRCH) are removed; another host's are never touched.
 *
 *   al_atomic a;
 *   if (al_atomic_begin(&a, path, err)) return AL_ERR;
 *   if (write_it(a.fd) != 0) { al_seterr(err, ...); al_atomic_abort(&a); return AL_ERR; }
 *   return al_atomic_commit(&a, err);
 */
typedef struct al_atomic {
    int fd;       /* the temporary, open for writing */
    char *path;   /* the caller's path (messages name it) */
    char *dest;   /* what the rename replaces: path, or the file the link at path leads to */
    char *tmp;    /* the temporary's name */
} al_atomic;
/* Check the destination, remove stale temporaries, create the temporary. On error nothing is left. */
al_status al_atomic_begin(al_atomic *a, const char *path, al_error *err);
/* fsync, close, rename over the destination, fsync its directory; frees a. On error the temporary is
 * removed and the destination is as it was. */
al_status al_atomic_commit(al_atomic *a, al_error *err);
/* Close and remove the temporary; frees a. */
void      al_atomic_abort(al_atomic *a);
/* Write bytes to path through the path above. */
al_status al_write_atomic(const char *path, const void *data, size_t n, al_error *err);
/* A new directory named as a temporary of path (PATH.tmp.HOST.PID[.N], made exclusively with mkdir),
 * for a tree that is renamed over path when complete; *tmp receives its malloc'd name. */
al_status al_tmp_dir(const char *path, char **tmp, al_error *err);
/* suffix: what follows a destination's name in a directory entry. 1 if it is ".tmp.HOST.PID" or
 * ".tmp.HOST.PID.N" with HOST this host and PID a process that no longer runs: a temporary that a
 * killed process left and nobody will finish. 0 for anything else (another host's, a live one's). */
int       al_tmp_stale(const char *suffix);
/* fsync the directory that holds path (best effort): what makes a rename into it durable. */
void      al_fsync_parent(const char *path);
/* Before any work: can path be written as al_write_atomic writes it? path must not be empty or end in
 * '/', the destination must be one the path above accepts, and its directory must exist and take a
 * new file (a temporary is created and removed to make sure). Messages start with the path:
 * "out/m.st: directory 'out' does not exist", "/dev/null: is a character device, not a regular file". */
al_status al_output_check(const char *path, al_error *err);
/* Read a whole file into a malloc'd NUL-terminated buffer (*len bytes; input.c: a regular file, stdin
 * "-" or an inherited pipe, within the memory budget). Caller frees. */
al_status al_read_file(const char *path, char **data, size_t *len, al_error *err);

/* ---------- inputs (input.c) ----------
 * Every file attnlab reads is opened by al_input_open: O_RDONLY|O_NONBLOCK (a named FIFO without a
 * writer cannot block the open), then fstat. A regular file is read as it is (O_NONBLOCK cleared).
 * With AL_IN_STREAM, stdin ("-") and the pipes, sockets and terminals a process inherits, named
 * /dev/stdin, /dev/fd/N or /proc/self/fd/N (a shell's `<(zcat f.gz)`; /dev/null there too), are read
 * as well: their size is unknown, so al_input_read_all counts the bytes against the memory budget while
 * it reads and stops an endless stream with "NAME: more than the memory budget of N". Anything else is
 * one line before any read: a directory ("is a directory, expected a KIND"), a named FIFO (refused
 * outright: it may have no writer), a device (/dev/zero) or a socket ("PATH: is a FIFO, not a regular
 * file", worded as for outputs). Readers that need random access (safetensors) leave out AL_IN_STREAM:
 * a pipe is then refused too.
 *
 *   al_input in;
 *   if (al_input_open(&in, path, AL_IN_STREAM, NULL, err)) return AL_ERR;
 *   gzFile f = gzdopen(in.fd, "rb");           // gzclose closes in.fd
 */
#define AL_IN_STREAM 1
typedef struct al_input {
    int fd;              /* -1 when closed */
    int stream;          /* 1: stdin or an inherited pipe, socket or terminal (size unknown) */
    uint64_t size;       /* a regular file's size at the open */
    char name[240];      /* for messages: "stdin" for "-", else the path (al_path_short, AL_PATH_SHORT bytes) */
} al_input;
/* Open path as above. kind names what the file should be ("checkpoint", "IDX file"; NULL: "file") in
 * "PATH: cannot open KIND: REASON" and "PATH: is a directory, expected a KIND". */
al_status al_input_open(al_input *in, const char *path, int flags, const char *kind, al_error *err);
void      al_input_close(al_input *in);
/* al_input_open and close: for a library that opens path itself (stb_image, libsndfile). */
al_status al_input_check(const char *path, int flags, const char *kind, al_error *err);
/* The rest of in (not closed) into a malloc'd NUL-terminated buffer of *len bytes: a regular file's size
 * is checked against the budget before it is read, a stream's bytes while they are read. */
al_status al_input_read_all(al_input *in, char **data, size_t *len, al_error *err);
/* al_input_open, al_input_read_all, al_input_close. al_read_file is al_input_read(path, AL_IN_STREAM, NULL, ...). */
al_status al_input_read(const char *path, int flags, const char *kind, char **data, size_t *len, al_error *err);
/* al_input_read through zlib: a gzip file decompressed (a plain one read as it is: a regular file's
 * size checked first, as al_input_read_all does), the decompressed bytes counted against the budget; a
 * damaged or cut stream is an error that says after how many bytes. */
al_status al_input_read_gz(const char *path, int flags, const char *kind, char **data, size_t *len, al_error *err);
/* "stdin" for "-", else al_path_short(path). */
const char *al_input_name(const char *path);
/* A buffer that grows within the memory budget, for readers that decompress into memory:
 * al_inbuf_room makes room for at least one more byte and the NUL (want: a first size, 0 for 64 KiB)
 * and fails with "NAME: more than the memory budget of N" once b->n exceeds the budget; call it
 * before every read, read at most b->cap - b->n - 1 bytes, free b->p when done. */
typedef struct al_inbuf { char *p; size_t n, cap; } al_inbuf;
al_status al_inbuf_room(al_inbuf *b, size_t want, const char *name, al_error *err);
/* zlib's gzerror() text without the "<fd:N>: " it puts in front for a gzdopen'ed descriptor. */
const char *al_input_zmsg(const char *zmsg);

/* safetensors: all parameters as F32 under their names; metadata as string pairs kv[0..2·nkv). */
al_status al_safetensors_save(const char *path, const al_params *p, const char *const *kv, int nkv, al_error *err);
/* Load into already-registered parameters (names and shapes must match exactly; every value finite:
 * a NaN or infinity is refused with the tensor's name and the byte offset).
 * If meta is non-NULL it receives a malloc'd copy of the __metadata__ JSON object text. */
al_status al_safetensors_load(const char *path, al_params *p, char **meta, al_error *err);
/* Read only the header of a safetensors file (its 8-byte length, then the JSON, through the same
 * reader as al_safetensors_load) and return a malloc'd copy of its __metadata__ object text in *meta.
 * A file without __metadata__ is an error. */
al_status al_safetensors_read_meta(const char *path, char **meta, al_error *err);
/* The same header read, then every tensor entry checked on its own (dtype F32, shape, data_offsets
 * inside the file, span = shape × 4): *tensor_bytes receives the sum of their spans, *ntensors their
 * count, *meta (if non-NULL; then a file without __metadata__ is an error) the metadata text. Reads no
 * tensor data: what a caller compares with the model a checkpoint's metadata describes BEFORE building it. */
al_status al_safetensors_read_info(const char *path, char **meta, uint64_t *tensor_bytes, int *ntensors, al_error *err);
/* Files that hold more than a model's parameters (training states, trainstate.h): named arrays of
 * F32 or I32 values, data borrowed from the caller. */
typedef enum { AL_ST_F32, AL_ST_I32 } al_st_dtype;
typedef struct al_st_array {
    const char *name;
    al_st_dtype dtype;
    int ndim;
    int64_t shape[AL_MAXDIM];
    void *data;                   /* (Π shape) 4-byte values */
} al_st_array;
/* Write the arrays a[0..na) and the metadata pairs kv[0..2·nkv) as a safetensors file (atomic). */
al_status al_safetensors_write(const char *path, const al_st_array *a, int na, const char *const *kv, int nkv, al_error *err);
/* The parameters of p as arrays (a has room for p->n); returns p->n. */
int       al_params_arrays(const al_params *p, al_st_array *a);
/* Read the arrays a[0..na) (name, dtype and shape set, data allocated by the caller) from a file that
 * holds exactly these tensors, with these dtypes and sizes; *meta (if non-NULL) receives the metadata
 * text. On error the arrays' data may be partly written. */
al_status al_safetensors_read(const char *path, al_st_array *a, int na, char **meta, al_error *err);
/* Read one metadata value (a string) from the JSON text returned above; NULL if absent. Caller frees. */
char *al_meta_get(const char *meta_json, const char *key);

/* ---------- memory budget and checked sizes (membudget.c) ----------
 * Every loader compares the memory a file asks for (declared counts × sizes, computed with the
 * saturating helpers below) with the budget BEFORE allocating, and refuses it with a message that
 * names the file, the size asked and the limit.
 *
 *   al_mem_budget_set((uint64_t)2 << 30);   // 2 GiB for everything a loader allocates at once
 *   if (al_mem_check(al_size_mul(n, per), err, "%s: %lld images", path, (long long)n)) return AL_ERR;
 */
/* The budget in bytes: the last al_mem_budget_set, else $ATTNLAB_MEM_BUDGET (bytes, optional K/M/G/T
 * suffix), else half of the physical memory. */
uint64_t  al_mem_budget(void);
void      al_mem_budget_set(uint64_t bytes);   /* 0: back to the default */
uint64_t  al_mem_budget_default(void);
/* A size as $ATTNLAB_MEM_BUDGET and --max-memory write it: a positive integer of bytes with an optional
 * K, M, G or T suffix (powers of 1024), then an optional B or iB ("512M", "2G", "2GB", "2GiB", "1048576"). Returns 0
 * with *bytes set; 1 if it does not fit in 64 bits (*bytes = UINT64_MAX); -1 if it is not a size. */
int       al_mem_parse(const char *s, uint64_t *bytes);
/* a·b and a+b, saturating at UINT64_MAX (which no budget admits). */
uint64_t  al_size_mul(uint64_t a, uint64_t b);
uint64_t  al_size_add(uint64_t a, uint64_t b);
/* AL_OK if bytes <= al_mem_budget(); else AL_ERR with "WHAT: needs N, more than the memory budget of
 * M (raise it with --max-memory or ATTNLAB_MEM_BUDGET)" (WHAT from fmt, shortened in its middle if long so the numbers always fit). */
al_status al_mem_check(uint64_t bytes, al_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "12.5 MiB" (buf of 32 bytes). */
const char *al_bytes_str(uint64_t n, char buf[32]);
/* path itself if it fits in n bytes, else its head and tail around "..." (n bytes with the NUL). For
 * messages that must keep their reason within AL_ERRLEN. */
const char *al_path_abbrev(const char *path, char *buf, size_t n);
/* The same into one of four rotating thread-local buffers of AL_PATH_SHORT bytes: for the file name
 * at the head of an error message, which then always has room for its reason. */
#define AL_PATH_SHORT 240
const char *al_path_short(const char *path);

/* 8-bit PNG, channels 1 (grey), 3 (RGB) or 4 (RGBA), rows top to bottom, via libpng, atomic. */
al_status al_png_write(const char *path, const uint8_t *pix /* (h, w, channels) */, int w, int h, int channels, al_error *err);
#endif
