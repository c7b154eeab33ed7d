/* attnlab/attnlab.h — every public header of libattnlab, floor by floor (src/floors.txt):
 *
 *   #include <attnlab/attnlab.h>      // then link with `pkg-config --libs attnlab`
 *
 * core (tensors, arena, tape, parameters, RNG, FLOP counter) · io (files, CSV, JSON, safetensors,
 * PNG, memory budget) · kernels (GEMM, convolution, norms) · attention (the operator and its
 * patterns) · ops (differentiable ops) · data (readers and generators) · models (model tables,
 * forwards, checkpoints) · train (training loops, optimisers, training states) · report (attention
 * maps). */
#ifndef ATTNLAB_ATTNLAB_H
#define ATTNLAB_ATTNLAB_H
#include "version.h"
#include "tensor.h"
#include "io.h"
#include "results.h"
#include "kernels.h"
#include "attention.h"
#include "ops.h"
#include "rnn.h"
#include "datadir.h"
#include "images.h"
#include "data.h"
#include "graph.h"
#include "graph_import.h"
#include "text.h"
#include "molecule.h"
#include "audio.h"
#include "fbank.h"
#include "speechgen.h"
#include "speech.h"
#include "models.h"
#include "checkpoint.h"
#include "gnn.h"
#include "seq.h"
#include "molnet.h"
#include "task.h"
#include "optim.h"
#include "trainstate.h"
#include "dist.h"
#include "train.h"
#include "attnmap.h"
#endif
