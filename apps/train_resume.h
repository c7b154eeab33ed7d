/* train_resume.h — --checkpoint-every N, --checkpoint PATH and --resume of the three `attnlab train`
 * tasks: where the training state goes, reading it back (refusing another configuration), making the
 * results CSV hold exactly the rows the state has seen, and writing the state as training goes.
 *
 *   app_resume ar; app_resume_init(&ar, every, resume, checkpoint_path, save_path);
 *   rc = app_resume_start(&ar, csv, run_id, canonical, &model.params, &err);   // loads the weights too
 *   tc.resume = app_resume_loop(&ar);      // NULL when neither flag was given
 *   ... after each CSV row of the run: app_resume_row(&ar); values the summary needs: app_resume_note
 *   app_resume_free(&ar);
 *
 * The rows of a run in the CSV are counted from the start of its attempt: the state records how many
 * rows of the run id were there before the attempt began (earlier complete runs) and how many the
 * attempt had written when the state was taken (rows are written before the state of their epoch).
 * Resuming keeps those and removes the run's later rows, so the finished CSV is the uninterrupted one.
 */
#ifndef ATTNLAB_TRAIN_RESUME_H
#define ATTNLAB_TRAIN_RESUME_H
#include <stddef.h>
#include "attnlab/trainstate.h"

#define APP_RESUME_NOTES 4
typedef struct app_resume {
    int every, resume;                /* --checkpoint-every (0: no states), --resume */
    const char *path_opt, *save;      /* --checkpoint, --save (the default path is SAVE.train) */
    char path[4200];                  /* the state file */
    const char *csv, *run_id, *canon; /* the run */
    const al_params *params;
    int rows_before, rows;            /* rows of the run id before this attempt; rows it wrote */
    int saved_epoch;                  /* epoch of the last state written (-1: none yet) */
    al_train_state state; int have_state;
    char *meta;                       /* the metadata of the state --resume read */
    al_resume rs;
    int nnote; char note_key[APP_RESUME_NOTES][24], note_val[APP_RESUME_NOTES][40];
    al_error *err;
} app_resume;

void app_resume_init(app_resume *r, int every, int resume, const char *path_opt, const char *save);
/* Chooses the path (--checkpoint, else SAVE.train, else attnlab-RUNID.train), then with --resume
 * reads the state there (weights into p) or says that there is none, and trims the CSV's rows of the
 * run: at once without a state, else only when the training loop has checked the state against the run
 * (al_resume.resumed), so a state that is not the run's leaves the CSV as it was. Returns an exit status: 0, 1 (I/O, a CSV that lacks rows the state saw), 2 (the state is of
 * another configuration, --checkpoint without --checkpoint-every or --resume); err says why. */
int  app_resume_start(app_resume *r, const char *csv, const char *run_id, const char *canon, al_params *p, al_error *err);
const al_resume *app_resume_loop(app_resume *r);   /* for the training loop; NULL without the flags */
void app_resume_row(app_resume *r);                 /* one more CSV row of this run was written */
void app_resume_note(app_resume *r, const char *key, double v);   /* kept with the next states */
double app_resume_noted(const app_resume *r, const char *key);    /* from the state read; NaN if none */
/* After a failure: "; the training state of epoch E in PATH is kept" appended to err when one was written. */
void app_resume_fail_note(const app_resume *r, al_error *err);
void app_resume_free(app_resume *r);
#endif
