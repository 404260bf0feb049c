/* checkasm --bench: one call of each slot of a table, written once for both tables. bench.c
 * includes this twice, with BK (the table type), BT (its row type), BROWS_T and BROWS (the row
 * struct of that type and the fixture's member holding it) and BCALL (the function's name)
 * defined. Each case is the
 * fixture's LayerNorm (or fuse of three LayerNorms) on D columns; outputs that accumulate
 * (parameter gradients, dot products) grow by O(1) a call, far from overflow. No include
 * guard: included once per table type. */
static void BCALL(int slot, const BK *K, cb_fix *e) {
    const int64_t D = e->D;
    const struct BROWS_T *w = &e->BROWS;
    float *m = e->m;
    switch ((cb_slot)slot) {
    case CB_NORM_ROW: K->norm_row(&e->q[0], w->x[0], D, w->o[0]); break;
    case CB_NORM_S: K->norm_s(&e->q[0], e->s, D, w->o[0]); break;
    case CB_NORM_FWD: K->norm_fwd(&e->n, &e->q0, w->x[0], D, w->o[0], m, m + 1); break;
    case CB_NORM_PG: K->norm_pg(&e->q[0], w->dh[0], w->x[0], D, e->dg, e->db); break;
    case CB_NORM_BWD: K->norm_bwd(&e->q[0], w->dh[0], w->x[0], D, w->o[0], 0, e->dg, e->db); break;
    case CB_NORM_BWD2: K->norm_bwd2(e->q, w->dh, w->x, D, w->o, 0, e->dg, e->db); break;
    case CB_STATS2: K->stats2(&e->n, w->x[0], &e->n, w->x[1], D, m, m + 1, m + 2, m + 3); break;
    case CB_FUSE_S:
        K->fuse_s(&e->F[0], D, w->x[0], w->y[0], w->o[0], e->s2, &e->f.out, m, m + 1);
        break;
    case CB_FUSE_FWD2: {
        BT *const u[2] = {w->o[0], w->o[1]}, *const h[2] = {w->o[2], w->o[3]};
        K->fuse_fwd2(&e->F0, &e->f, D, w->x, w->y, u, h, e->st);
    } break;
    case CB_FUSE_RED:
        e->Fr = e->F[0];
        K->fuse_red(&e->Fr, D, w->dh[0], w->du[0], w->x[0], w->y[0]);
        break;
    case CB_FUSE_PG: K->fuse_pg(&e->F[0], D, w->dh[0], w->du[0], w->x[0], w->y[0], &e->dp); break;
    case CB_FUSE_DX:
        K->fuse_dx(&e->F[0], D, w->dh[0], w->du[0], w->x[0], w->y[0], w->o[0], w->o[1], 0, 0);
        break;
    case CB_FUSE_BWD: {
        sn_rfuse F = e->F[0];
        K->fuse_bwd(&F, D, w->dh[0], w->du[0], w->x[0], w->y[0], w->o[0], w->o[1], 0, 0, &e->dp);
    } break;
    case CB_FUSE_BWD2: {
        sn_rfuse F[2] = {e->F[0], e->F[1]};
        BT *const dx[2] = {w->o[0], w->o[1]}, *const dy[2] = {w->o[2], w->o[3]};
        K->fuse_bwd2(F, D, w->dh, w->du, w->x, w->y, dx, dy, 0, 0, &e->dp);
    } break;
    case CB_ADD_DIV: K->add_div(w->x[0], w->y[0], 1.7f, w->o[0], D, 0, 0); break;
    case CB_APPLY: K->apply(w->x[0], w->y[0], w->dh[0], 2.3f, w->o[0], w->o[1], D, 0); break;
    case CB_AXPY: K->axpy(w->x[0], w->y[0], 1.3f, w->o[0], D, 0); break;
    case CB_HC_MIX: {
        const BT *const in[4] = {w->x[0], w->x[1], w->y[0], w->y[1]};
        K->hc_mix(in, 4, e->hw, w->o, 4, D, 0);
    } break;
    case CB_HC_DOTS: {
        const BT *const a[4] = {w->x[0], w->x[1], w->y[0], w->y[1]};
        K->hc_dots(a, 4, w->dh, 2, D, e->dots);
    } break;
    case CB_HC_PROJ: K->hc_proj(w->x[0], D, e->wr, CB_NW, e->dots); break;
    case CB_HC_WMIX: K->hc_wmix(e->wr, CB_NW, e->hw, w->o[0], D, 0); break;
    case CB_HC_WSUM: K->hc_wsum(w->x[0], D, e->hw, CB_NW, e->dw); break;
    case CB_COPY: K->copy(w->x[0], w->o[0], D); break;
    case CB_WIDEN: K->widen(w->x[0], D, e->s2); break;
    case CB_ROUND: K->round(e->s, D, w->o[0]); break;
    case CB_FOLD: K->fold(e->fs, D, 3, e->fd, D); break;
    case CB_NSLOTS: break;
    }
}
