/* Optional oneDNN peer for sn-bench: its layer normalization primitive (training forward with
 * mean/variance, backward with scale and shift gradients) on N rows of C floats. */
#ifndef SN_BENCH_DNNL_PEER_H
#define SN_BENCH_DNNL_PEER_H

#include <stdint.h>

typedef struct dnnl_peer dnnl_peer;

/* Builds the primitives over caller buffers (each N x C, stats N, scale/shift C each): the
 * data (src, dst, ddst, dsrc) in float, or in bf16 when bf16 (statistics, scale and shift and
 * their gradients stay float); NULL on failure (e.g. a configuration oneDNN refuses). */
dnnl_peer *dnnl_peer_create(int bf16, int64_t N, int64_t C, void *src, void *dst, float *mean,
                            float *var, float *scale, float *shift, void *ddst, void *dsrc,
                            float *dscale, float *dshift);
int dnnl_peer_fwd(dnnl_peer *p);
int dnnl_peer_bwd(dnnl_peer *p);
void dnnl_peer_destroy(dnnl_peer *p);

#endif
