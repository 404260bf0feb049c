/* The largest model and run sn-gpt-train accepts: from its flags (numarg.h) and from a
 * checkpoint's header (train.c) alike, and from sn-gpt-compare's sweep lists. They are chosen
 * so that nothing computed from them can overflow: 2 * layers (the sub-layers, an int32 of
 * sn_net), batch * ctx (the rows of a step, an int in ops.c), ctx * width and the step
 * counters (ints), and every buffer size (size_t: at most about 2^62 bytes, which malloc
 * refuses rather than wraps). */
#ifndef SN_GPT_GPT_LIMITS_H
#define SN_GPT_GPT_LIMITS_H

#define GPT_VOCAB          256         /* byte-level: every task's tokens are bytes 0..255 */
#define GPT_MAX_LAYERS     1024        /* sn_net gets 2 * layers sub-layers */
#define GPT_MAX_WIDTH      8192        /* D; heads divide it */
#define GPT_MAX_CTX        8192        /* T */
#define GPT_MAX_BATCH      65536       /* B */
#define GPT_MAX_TOKENS     (1L << 24)  /* B * T: the rows of one step */
#define GPT_MAX_STEPS      1000000000L /* --steps, --warmup, --eval-every, a checkpoint's step */
#define GPT_MAX_LR         1e6         /* --lr, and --lrs of sn-gpt-compare */
#define GPT_MAX_TEXT_BYTES (1LL << 31) /* --data FILE: a regular file of at most 2 GiB */

#endif
