/* compat.c — the public names of 0.5 that 0.6 renamed (one naming scheme across the model families:
 * al_<family>_arch, _config, _config_default, _init, _forward, _train, _evaluate, _save, _load).
 * Each old name calls its new one; they stay exported from libattnlab.so.0 through 0.6.x and go with
 * soname libattnlab.so.1. */
#include "attnlab/models.h"
#include "attnlab/gnn.h"
#include "attnlab/seq.h"
#include "attnlab/molnet.h"
#include "attnlab/train.h"

const al_model_arch *al_model_kind_find(const char *name) { return al_model_arch_find(name); }
int al_model_kind_count(void) { return al_model_arch_count(); }
const al_model_arch *al_model_kind_at(int i) { return al_model_arch_at(i); }
const char *al_model_names(void) { return al_model_arch_names(); }

const al_gnn_arch *al_gnn_model_find(const char *name) { return al_gnn_arch_find(name); }
int al_gnn_model_count(void) { return al_gnn_arch_count(); }
const al_gnn_arch *al_gnn_model_at(int i) { return al_gnn_arch_at(i); }
const char *al_gnn_names(void) { return al_gnn_arch_names(); }
void al_gnn_defaults(al_gnn_config *cfg, al_gnn_kind kind) { al_gnn_config_default(cfg, al_gnn_kind_name(kind), NULL); }

const al_seq_arch *al_seq_kind_find(const char *name) { return al_seq_arch_find(name); }
int al_seq_kind_count(void) { return al_seq_arch_count(); }
const al_seq_arch *al_seq_kind_at(int i) { return al_seq_arch_at(i); }
const char *al_seq_names(void) { return al_seq_arch_names(); }

const al_molnet_arch *al_mol_model_find(const char *name) { return al_molnet_arch_find(name); }
int al_mol_model_count(void) { return al_molnet_arch_count(); }
const al_molnet_arch *al_mol_model_at(int i) { return al_molnet_arch_at(i); }
const char *al_mol_model_names(void) { return al_molnet_arch_names(); }
void al_molnet_defaults(al_molnet_config *cfg, const al_molnet_arch *kind)
{
    al_molnet_config_default(cfg, kind ? kind->name : NULL, NULL);
}

al_status al_train_image(al_model *m, const al_images *train, const al_images *test, const al_train_config *tc,
                         al_train_cb cb, void *ud, al_error *err)
{
    return al_model_train(m, train, test, tc, cb, ud, err);
}
al_status al_eval_image(al_model *m, const al_images *d, const float mean[4], const float std[4], int batch, double *acc,
                        int *pred, al_error *err)
{
    return al_model_evaluate(m, d, mean, std, batch, acc, pred, err);
}
al_status al_eval_image_ex(al_model *m, const al_images *d, const float mean[4], const float std[4], int batch,
                           double *acc, int *pred, float *logits, al_eval_progress_fn fn, void *ud, al_error *err)
{
    return al_model_evaluate_ex(m, d, mean, std, batch, acc, pred, logits, fn, ud, err);
}
al_status al_seq_eval(al_seq_model *m, const al_seq_data *d, int batch, double *acc, double *unseen_acc, int *pred,
                      al_error *err)
{
    return al_seq_evaluate(m, d, batch, acc, unseen_acc, pred, err);
}
al_status al_seq_eval_scores(al_seq_model *m, const al_seq_data *d, int batch, al_seq_scores *sc, int *pred,
                             al_error *err)
{
    return al_seq_evaluate_scores(m, d, batch, sc, pred, err);
}
al_status al_speech_eval(al_seq_model *m, const al_speech_data *d, int batch, al_speech_scores *sc, int *pred,
                         al_error *err)
{
    return al_speech_evaluate(m, d, batch, sc, pred, err);
}
