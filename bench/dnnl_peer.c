/* oneDNN layer normalization as a benchmark peer (see dnnl_peer.h); oneDNN 2.x C API. */
#include "dnnl_peer.h"

#include <stdlib.h>

#include <oneapi/dnnl/dnnl.h>

enum { M_SRC, M_DST, M_MEAN, M_VAR, M_SCALE, M_SHIFT, M_DDST, M_DSRC, M_DSCALE, M_DSHIFT, M_N };

struct dnnl_peer {
    dnnl_engine_t eng;
    dnnl_stream_t str;
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fwd, bwd;
    dnnl_memory_t mem[M_N];
};

dnnl_peer *dnnl_peer_create(int bf16, int64_t N, int64_t C, void *src, void *dst, float *mean,
                            float *var, float *scale, float *shift, void *ddst, void *dsrc,
                            float *dscale, float *dshift) {
    dnnl_peer *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (dnnl_engine_create(&p->eng, dnnl_cpu, 0) || dnnl_stream_create(&p->str, p->eng, 0))
        goto fail;
    dnnl_memory_desc_t data_md, stat_md, w_md;
    const dnnl_dims_t dd = {N, C}, sd = {N}, wd = {C};
    if (dnnl_memory_desc_init_by_tag(&data_md, 2, dd, bf16 ? dnnl_bf16 : dnnl_f32, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&stat_md, 1, sd, dnnl_f32, dnnl_a) ||
        dnnl_memory_desc_init_by_tag(&w_md, 1, wd, dnnl_f32, dnnl_a))
        goto fail;
    const unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_layer_normalization_desc_t fd, bd;
    if (dnnl_layer_normalization_forward_desc_init(&fd, dnnl_forward_training, &data_md, &stat_md,
                                                   1e-5f, flags) ||
        dnnl_primitive_desc_create(&p->fpd, &fd, NULL, p->eng, NULL) ||
        dnnl_primitive_create(&p->fwd, p->fpd))
        goto fail;
    if (dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &data_md, &data_md,
                                                    &stat_md, 1e-5f, flags) ||
        dnnl_primitive_desc_create(&p->bpd, &bd, NULL, p->eng, p->fpd) ||
        dnnl_primitive_create(&p->bwd, p->bpd))
        goto fail;
    void *ptr[M_N] = {src, dst, mean, var, scale, shift, ddst, dsrc, dscale, dshift};
    const dnnl_memory_desc_t *md[M_N] = {&data_md, &data_md, &stat_md, &stat_md, &w_md,
                                         &w_md,    &data_md, &data_md, &w_md,    &w_md};
    for (int i = 0; i < M_N; i++)
        if (dnnl_memory_create(&p->mem[i], md[i], p->eng, ptr[i])) goto fail;
    return p;
fail:
    dnnl_peer_destroy(p);
    return NULL;
}

int dnnl_peer_fwd(dnnl_peer *p) {
    dnnl_exec_arg_t a[] = {{DNNL_ARG_SRC, p->mem[M_SRC]},     {DNNL_ARG_DST, p->mem[M_DST]},
                           {DNNL_ARG_MEAN, p->mem[M_MEAN]},   {DNNL_ARG_VARIANCE, p->mem[M_VAR]},
                           {DNNL_ARG_SCALE, p->mem[M_SCALE]}, {DNNL_ARG_SHIFT, p->mem[M_SHIFT]}};
    if (dnnl_primitive_execute(p->fwd, p->str, 6, a)) return -1;
    return dnnl_stream_wait(p->str) ? -1 : 0;
}

int dnnl_peer_bwd(dnnl_peer *p) {
    dnnl_exec_arg_t a[] = {
        {DNNL_ARG_SRC, p->mem[M_SRC]},          {DNNL_ARG_DIFF_DST, p->mem[M_DDST]},
        {DNNL_ARG_MEAN, p->mem[M_MEAN]},        {DNNL_ARG_VARIANCE, p->mem[M_VAR]},
        {DNNL_ARG_SCALE, p->mem[M_SCALE]},      {DNNL_ARG_SHIFT, p->mem[M_SHIFT]},
        {DNNL_ARG_DIFF_SRC, p->mem[M_DSRC]},    {DNNL_ARG_DIFF_SCALE, p->mem[M_DSCALE]},
        {DNNL_ARG_DIFF_SHIFT, p->mem[M_DSHIFT]}};
    if (dnnl_primitive_execute(p->bwd, p->str, 9, a)) return -1;
    return dnnl_stream_wait(p->str) ? -1 : 0;
}

void dnnl_peer_destroy(dnnl_peer *p) {
    if (!p) return;
    for (int i = 0; i < M_N; i++)
        if (p->mem[i]) dnnl_memory_destroy(p->mem[i]);
    if (p->fwd) dnnl_primitive_destroy(p->fwd);
    if (p->bwd) dnnl_primitive_destroy(p->bwd);
    if (p->fpd) dnnl_primitive_desc_destroy(p->fpd);
    if (p->bpd) dnnl_primitive_desc_destroy(p->bpd);
    if (p->str) dnnl_stream_destroy(p->str);
    if (p->eng) dnnl_engine_destroy(p->eng);
    free(p);
}
