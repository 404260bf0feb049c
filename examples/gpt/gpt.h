/*
 * sn-gpt-train: a small llm.c-style GPT whose norms and residual streams go through
 * libsiamesenorm's placement layer (sn_net_*). This header declares the model (model.c), the
 * kernels it is built from (ops.c), the optimiser (optim.c), the data (data.c) and the trainer
 * that ties them together (train.c). Every buffer is allocated once, when the model is created.
 */
#ifndef SN_GPT_H
#define SN_GPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpt_limits.h"
#include "siamesenorm.h"

/* ---- kernels (ops.c) ---------------------------------------------------------------------- */

/* out [R x OC] = inp [R x C] @ w^T (w is OC x C) + bias (bias may be NULL). */
void matmul_forward(float *out, const float *inp, const float *w, const float *bias, int R, int C,
                    int OC);
/* dinp [R x C] = dout @ w (written); dw += dout^T @ inp; dbias += column sums of dout
 * (dbias may be NULL). */
void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                     const float *w, int R, int C, int OC);
/* Causal multi-head self-attention. qkv [B*T x 3D] holds q | k | v per row, head h uses
 * columns h*hs .. h*hs+hs-1 of each. att [B x NH x T x T] receives the softmax probabilities,
 * out [B*T x D] the heads' outputs side by side. */
void attention_forward(float *out, float *att, const float *qkv, int B, int T, int D, int NH);
/* dqkv written; scratch holds T floats. */
void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                        const float *att, int B, int T, int D, int NH);
/* GELU, tanh approximation (GPT-2). */
void gelu_forward(float *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
/* Softmax cross-entropy over V classes, in place: logits become probabilities. Rows whose
 * target is < 0 are masked out. Writes the per-row loss (0 when masked) and returns the number
 * of unmasked rows. */
int crossentropy_forward(float *logits, float *losses, const int *targets, int R, int V);
/* The index of the largest of p[0..V) (the first on ties): greedy decoding. */
int argmax(const float *p, int V);
/* probs -> dlogits in place: (p - onehot(target)) * scale, zero on masked rows. */
void crossentropy_backward(float *probs, const int *targets, int R, int V, float scale);
/* e [B*T x D] = wte[token] + wpe[position]; and its backward (accumulates). */
void encoder_forward(float *e, const int *tokens, const float *wte, const float *wpe, int B, int T,
                     int D);
void encoder_backward(float *dwte, float *dwpe, const float *de, const int *tokens, int B, int T,
                      int D);
/* 1 when the matrix products run through CBLAS in this build. */
int ops_have_blas(void);
/* Threads the BLAS may use (OpenBLAS only; no effect otherwise). */
void ops_set_blas_threads(int n);

/* ---- model (model.c) ---------------------------------------------------------------------- */

typedef struct gpt_config {
    int vocab;      /* V: 256 for bytes */
    int ctx;        /* T: positions per row */
    int layers;     /* L: transformer layers (2 sub-layers each) */
    int heads;      /* NH, divides width */
    int width;      /* D */
    int tied;       /* 1: the output head is wte */
    int placement;  /* sn_placement */
    int norm_kind;  /* sn_norm_kind */
    int qk_norm;    /* gpt_qk_norm: per-head norms inside attention (0: the placement's default) */
    int init;       /* gpt_init: the weight initialisation rule */
    float eps;      /* every norm's epsilon (the network's and the q/k/v norms) */
    int scale_rule; /* sn_scale_rule of the network (SiameseNorm's c_i, DeepNorm's alpha) */
    int no_input_norm; /* 1: SiameseNorm without its input norm N_in (the paper's "w/o input
                          norm" ablation); 0: as the placement defines it */
    int act_dtype;     /* sn_dtype of the residual streams and block inputs/outputs: SN_DTYPE_F32,
                          or SN_DTYPE_BF16 (the matmuls stay fp32: h and z are converted at
                          their boundary) */
    int hc_rate;       /* hyper_connections: the expansion rate n (1..SN_HC_MAX_RATE); 0 for
                          every other placement */
    int hc_dynamic;    /* hyper_connections: 1 dynamic, 0 static; 0 for every other placement */
} gpt_config;

/* Weight initialisation (--init). Biases start at 0 and every norm at gamma 1, beta 0 in all
 * three; they differ in the standard deviation of the normal draws:
 *   GPT2     GPT-2 / llm.c: 0.02 everywhere, the residual output projections (attention
 *            output, MLP output) 0.02 / sqrt(2L).
 *   FLAT     the official SiameseNorm DeiT/DiT code (timm's init): 0.02 everywhere.
 *   MITCHELL the official SiameseNorm OLMo code's `mitchell` rule: embeddings and input
 *            projections (qkv, MLP in) 1/sqrt(D); the output projections of layer l
 *            1/sqrt(2 * fan_in * (l + 1)) (fan_in D for attention, 4D for the MLP); every draw
 *            truncated at 3 standard deviations. sn-gpt-train's default: it beat the other two
 *            by 0.15-0.17 nats for both Pre-Norm and SiameseNorm (docs/reproduction.md). */
typedef enum gpt_init { GPT_INIT_GPT2 = 0, GPT_INIT_FLAT = 1, GPT_INIT_MITCHELL = 2 } gpt_init;
/* "gpt2", "flat", "mitchell" and back (-1 / "?" when unknown). */
int gpt_init_from_name(const char *name);
const char *gpt_init_name(int init);

/* Per-head norms of the attention's q, k and v (QK-norm, HybridNorm's QKV-norm): after the qkv
 * projection (bias included), each head's slice of hs = D/NH columns of q, k (and v) is
 * normalised on its own by libsiamesenorm's grouped norm (sn_norm with group = hs, of the
 * network's norm kind, eps 1e-5), with its own gamma (and beta) of hs entries shared by the
 * heads. Each layer has its own q, k, v norms. */
typedef enum gpt_qk_norm {
    GPT_QK_AUTO = 0, /* what the placement defines: QKV for hybridnorm, hybridnorm_star and
                        siamese_hybrid_pre, NONE for every other placement */
    GPT_QK_NONE = 1, /* plain attention */
    GPT_QK_QK = 2,   /* q and k normalised */
    GPT_QK_QKV = 3   /* q, k and v normalised */
} gpt_qk_norm;

/* GPT_QK_AUTO resolved for a placement; any other mode returned as it is. */
int gpt_qk_norm_resolve(int placement, int mode);
/* "auto", "none", "qk", "qkv" and back (-1 / "?" when unknown). */
int gpt_qk_norm_from_name(const char *name);
const char *gpt_qk_norm_name(int mode);
/* How many of q, k, v a (resolved) mode normalises: 0, 2 or 3. */
int gpt_qk_norm_count(int mode);

/* Parameter tensors, in the order they sit in the one parameter block. */
enum {
    P_WTE,    /* V x D token embedding */
    P_WPE,    /* T x D position embedding */
    P_QKVW,   /* L x 3D x D */
    P_QKVB,   /* L x 3D */
    P_ATTPW,  /* L x D x D attention output projection */
    P_ATTPB,  /* L x D */
    P_FCW,    /* L x 4D x D */
    P_FCB,    /* L x 4D */
    P_FCPW,   /* L x D x 4D MLP output projection */
    P_FCPB,   /* L x D */
    P_NORMS,  /* every norm of the network: libsiamesenorm's sn_net parameter block */
    P_QKNORM, /* L x [q | k | v] per-head norms (gpt_qk_norm; empty when off), each hs gammas
                (and hs betas for LayerNorm) */
    P_HEAD,   /* V x D output head (empty when tied) */
    P_COUNT
};

typedef struct gpt_model {
    gpt_config cfg;
    sn_ctx *ctx; /* libsiamesenorm's context: the kernel path (SN_ISA) and threads */
    sn_net net;  /* the norm placement: the only thing --norm changes */
    sn_norm qkn; /* the per-head q/k/v norm (group = hs), when cfg.qk_norm is QK or QKV */
    int n_qkn;   /* q/k/v norms per layer: 0, 2 or 3 */
    int64_t qkn_params, qkn_stats; /* one norm's parameters, and its saved floats per row */
    int max_b;                     /* rows of T tokens the buffers were sized for */
    size_t n_params;
    size_t size[P_COUNT];
    float *params, *grads;
    float *p[P_COUNT], *g[P_COUNT]; /* views into params / grads */
    /* forward activations, kept for the backward pass */
    float *e;       /* [R x D] embedding: the network input */
    float *h;       /* [S x R x D] block inputs, from sn_net_enter (bf16: [R x D], the block
                       input the current matmul reads, widened from h16) */
    sn_bf16 *h16;   /* bf16 only: [S x R x D] the block inputs, as sn_net_enter_bf16 wrote them */
    sn_bf16 *t16;   /* bf16 only: [R x D] the bf16 side of a layer call (e, z, out, dz, ...) */
    float *qkv;     /* [L x R x 3D] q | k | v as attention reads them */
    float *qkvr;    /* [L x R x 3D] the qkv projection before the q/k/v norms (when on) */
    float *qkstats; /* [L x n_qkn x R x qkn_stats] the q/k/v norms' saved statistics */
    float *att;     /* [L x B x NH x T x T] */
    float *atty;    /* [L x R x D] */
    float *fch;     /* [L x R x 4D] */
    float *fchg;    /* [L x R x 4D] */
    float *z;       /* [R x D] block output, handed to sn_net_exit */
    float *out;     /* [R x D] network output, from sn_net_merge */
    float *logits;  /* [R x V] logits -> probabilities -> their gradient */
    float *losses;  /* [R] */
    float *acts;    /* [R x acts_per_row] libsiamesenorm's saved streams and statistics */
    float *work;    /* [R x work_per_row] libsiamesenorm's stream gradients */
    /* backward scratch */
    float *dz, *dh, *dqkv, *datty, *dfch, *dfchg, *dout, *de, *dscratch;
    const int *tokens; /* of the last forward */
    const int *targets;
    int last_b, n_valid;
    long loss_count; /* the backward divides the loss gradient by this many targets: those of
                        the whole global batch under data parallelism (0: n_valid) */
} gpt_model;

/* --norm names: the library's (sn_placement_name: "pre_norm", "siamese", ...). Returns the
 * sn_placement or -1. */
int gpt_placement_from_name(const char *name);
const char *gpt_placement_name(int placement);
/* Prints the known names, separated by '|'. */
void gpt_placement_list(FILE *f);

/* Whether cfg is a model this trainer can build: vocab GPT_VOCAB, every size within gpt_limits.h,
 * heads dividing width, every enum a known value, eps finite and in (0, 1]. 0, or -1 with the
 * reason written into why (n bytes). */
int gpt_config_check(const gpt_config *cfg, char *why, size_t n);
/* The number of parameters of a model of config cfg (gpt_config_check must have passed),
 * without allocating it. 0, or -1 when libsiamesenorm refuses the config (reason in why). */
int gpt_param_count(const gpt_config *cfg, size_t *n_params, char *why, size_t n);
/* Allocates every buffer for up to max_b rows. Returns 0 or prints why and returns -1. */
int gpt_model_create(gpt_model *m, const gpt_config *cfg, int max_b);
void gpt_model_free(gpt_model *m);
const char *gpt_tensor_name(int t);
/* Initialises every parameter by m->cfg.init (see gpt_init); norms from sn_net_init_params
 * (and the q/k/v norms from sn_norm_init_params: gamma 1, beta 0); DeepNorm's gain on top. */
void gpt_model_init(gpt_model *m, uint64_t seed);
/* Forward over b <= max_b rows of T tokens; returns the mean cross-entropy over the unmasked
 * targets (NaN when every target is masked). Leaves the probabilities in m->logits. */
float gpt_forward(gpt_model *m, const int *tokens, const int *targets, int b);
void gpt_zero_grad(gpt_model *m);
/* Backward of the last gpt_forward: accumulates into m->grads. */
void gpt_backward(gpt_model *m);

/* ---- optimiser (optim.c) ------------------------------------------------------------------ */

typedef struct optim_config {
    float lr, min_lr_frac; /* peak LR, and the floor of the cosine as a fraction of it */
    int warmup, steps;
    float beta1, beta2, eps, weight_decay, clip;
} optim_config;

float lr_at(const optim_config *o, int step);
/* Global L2 norm of the gradient; scales it down to o->clip when larger (clip <= 0: never). */
float clip_grad(gpt_model *m, float clip);
/* One AdamW update (t = 1-based step). Weight decay on matrices and embeddings only (not on
 * biases, the network's norms or the q/k/v norms). */
void adamw_update(gpt_model *m, float *mom, float *vel, const optim_config *o, float lr, int t);

/* ---- data (data.c) ------------------------------------------------------------------------ */

enum { DATA_ADDITION = 0, DATA_TEXT = 1, DATA_TALES = 2, DATA_FORTUNES = 3 };

/* The default corpus (corpus.c): the cookie files of Debian's `fortunes` package at this
 * version, as installed in FORTUNES_DIR, concatenated in a fixed order: FORTUNES_BYTES bytes of
 * English text with this FNV-1a 64 checksum. */
#define FORTUNES_PACKAGE "fortunes"
#define FORTUNES_VERSION "1:1.99.1-7.3"
#define FORTUNES_DIR     "/usr/share/games/fortunes"
#define FORTUNES_BYTES   ((size_t)2478275)
#define FORTUNES_FNV1A64 0x6e16192aad206f87ull

/* The generated "tales" corpus (tales.c): its size and the FNV-1a 64 checksum of its bytes,
 * the same on every machine. */
#define TALES_BYTES   ((size_t)4 << 20)
#define TALES_FNV1A64 0x79a39cb0eb59d33cull
void tales_generate(unsigned char *out, size_t n);
uint64_t fnv1a64(const unsigned char *p, size_t n);

typedef struct dataset {
    int kind;
    int T;
    int digits;          /* addition: operands have 1..digits digits */
    unsigned char *text; /* text: the file's bytes */
    size_t n_text, n_train;
    int n_val; /* held-out rows */
    int *val_tokens, *val_targets;
} dataset;

uint64_t rng_next(uint64_t *s);
float rng_uniform(uint64_t *s);
float rng_normal(uint64_t *s);

/* Positions a row needs for addition problems of up to `digits` digits. */
int addition_ctx(int digits);
/* The embedded task: rows "a+b=c\n", loss only on the answer "c\n". n_val held-out problems
 * (a fixed set, a hash split keeps them out of training). Returns 0 or -1. */
int data_addition(dataset *d, int digits, int T, int n_val);
/* Byte-level text: the last val_frac of the file is held out; n_val windows from it.
 * Returns 0 or prints why and returns -1. */
int data_text(dataset *d, const char *path, int T, double val_frac, int n_val);
/* PATH opened read-only when it is a regular file (its size in *size unless NULL): the file
 * descriptor, with O_NONBLOCK set (a FIFO is refused, not waited on; a regular file reads the
 * same); -1 after a message "WHAT PATH: why" otherwise. --data and --load open through it. */
int open_regular(const char *what, const char *path, int64_t *size);
/* The "tales" corpus at byte level: generated, checked against TALES_FNV1A64, the last
 * val_frac held out (other stories than the training ones); n_val windows from it. */
int data_tales(dataset *d, int T, double val_frac, int n_val);
/* The fortunes corpus from dir (NULL: FORTUNES_DIR), checked against FORTUNES_FNV1A64; the
 * last val_frac of every file is held out; n_val windows from the held-out part. Returns 0, or
 * prints why (naming the Debian package when a file is missing) and returns -1. */
int data_fortunes(dataset *d, const char *dir, int T, double val_frac, int n_val);
/* Splits d->text (n_text bytes, owned by d) at n_train into the training part and the
 * held-out rest, and takes up to n_val windows of T spread evenly over the rest. 0, or prints
 * why (naming the corpus `what`), frees d and returns -1. */
int text_split(dataset *d, const char *what, size_t n_train, int n_val);
void data_free(dataset *d);
/* b training rows (tokens and targets, T each) drawn with rng. */
void data_batch(const dataset *d, uint64_t *rng, int b, int *tokens, int *targets);
/* Formats a row of T tokens, up to its first newline, as text into buf of size bytes
 * (non-printables as '.'; cut at size - 1 characters, always terminated). */
void data_row_text(const int *tokens, int T, char *buf, size_t size);

/* ---- trainer (train.c) -------------------------------------------------------------------- */

struct dist;

typedef struct trainer {
    gpt_model model;
    optim_config opt;
    dataset *data;
    int batch;         /* rows of the global batch */
    int first, rows;   /* this rank's share of it: rows first .. first + rows - 1 */
    struct dist *dist; /* NULL: one process */
    int step;          /* steps done */
    uint64_t rng;
    float *mom, *vel;
    int *tokens, *targets;
} trainer;

typedef struct eval_result {
    double loss;     /* mean held-out cross-entropy per target token */
    double accuracy; /* addition: exact-match fraction of held-out problems; text: -1 */
} eval_result;

typedef struct step_result {
    float loss, grad_norm, lr;
} step_result;

int trainer_create(trainer *t, const gpt_config *cfg, const optim_config *o, dataset *d, int batch,
                   uint64_t seed);
/* Data-parallel (dist.h): every rank draws the same global batch of `batch` rows and trains on
 * its share, rank k on rows batch k / P .. batch (k+1) / P - 1 (batch >= P); the gradients are
 * summed across ranks before the update, so every rank applies the same one. */
int trainer_create_dist(trainer *t, const gpt_config *cfg, const optim_config *o, dataset *d,
                        int batch, uint64_t seed, struct dist *dist);
void trainer_free(trainer *t);
step_result trainer_step(trainer *t);
eval_result trainer_eval(trainer *t);
/* Checkpoint: config (with the q/k/v norm mode), step, data RNG, parameters (the q/k/v norms'
 * included), AdamW moments. 0 on success. */
int checkpoint_save(const trainer *t, const char *path);
/* Reads the model config of a checkpoint (to create the trainer before loading it). */
int checkpoint_peek(const char *path, gpt_config *cfg);
/* Whether --save may write PATH: 0 when it does not exist, is empty or is a checkpoint (any
 * version: its magic's first 7 bytes); -1 with a message for anything else (another file is
 * never replaced by a checkpoint). */
int checkpoint_replaceable(const char *path);
/* Loads a checkpoint into a trainer created with its config (checkpoint_peek). Every header
 * field is checked against its use before anything is read into the trainer (see
 * ckpt_read_header); on failure (-1, with a message) the trainer's parameters and moments may
 * have been overwritten: free it. */
int checkpoint_load(trainer *t, const char *path);

/* The checkpoint file format, for the loader above and the fuzz harness (fuzz/fuzz_ckpt.c):
 * an 88-byte header (magic "SNGPTCK3", the config as 14 int32, int64 n_params, int32 step,
 * int32 q/k/v norm mode, uint64 data RNG; version 2, "SNGPTCK2", has 12 int32 and 80 bytes),
 * then n_params floats each of the parameters, the AdamW first and second moments, native byte
 * order (docs/checkpoint-format.md). */
typedef struct ckpt_info {
    gpt_config cfg; /* act_dtype 0 (not stored); qk_norm the stored (resolved) mode */
    int step;
    uint64_t rng;
    size_t n_params;
} ckpt_info;
/* Reads the header from f, a file of len bytes, and checks it semantically: vocab equals the
 * tasks' byte range (256), the config passes gpt_config_check, the q/k/v norm mode is a
 * resolved one, 0 <= step <= GPT_MAX_STEPS, n_params is what the config needs, and len is
 * exactly the header plus 3 * n_params floats. 0, or -1 with the reason in why (n bytes). */
int ckpt_read_header(FILE *f, uint64_t len, ckpt_info *info, char *why, size_t n);
/* Reads the three arrays of n_params floats that follow the header and checks them: every
 * parameter and moment finite, every second moment >= 0. 0, or -1 with the reason in why. */
int ckpt_read_body(FILE *f, size_t n_params, float *params, float *mom, float *vel, char *why,
                   size_t n);

#endif
