/* test_launch_deps.c - the dependency graph of a plan's launches (runtime/launch_deps.c):
 * independent branches stay independent, every conflict (read after write, write after
 * read, write after write on overlapping arena bytes, any write to the caller's I/O) is
 * an edge or implied by edges, and the kept edges are not implied by others. Plans are
 * built by hand and at random; the result is checked against a brute-force closure. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/launch_deps.h"
#include "cuda_testutil.h"
#include "testutil.h"

/* A plan over n_temp TEMP buffers (arena slots of 64 bytes at offsets off[]) plus an
 * input (buffer n_temp) and an output (n_temp + 1); kernel k = launch k. */
typedef struct mk {
  gc_launch_plan p;
  gc_lp_kernel k[64];
  gc_lp_param prm[64][8];
  gc_lp_buffer b[40];
  int launches[64];
} mk;

static void mk_init(mk *m, int n_temp, const uint64_t *off, const uint64_t *bytes) {
  memset(m, 0, sizeof *m);
  for (int i = 0; i < n_temp; i++) m->b[i] = (gc_lp_buffer){GC_LP_TEMP, 0, bytes ? bytes[i] : 64, off[i]};
  m->b[n_temp] = (gc_lp_buffer){GC_LP_INPUT, 0, 64, 0};
  m->b[n_temp + 1] = (gc_lp_buffer){GC_LP_OUTPUT, 0, 64, 0};
  m->b[n_temp + 2] = (gc_lp_buffer){GC_LP_CONST, 0, 64, 0};
  m->p.buffers = m->b;
  m->p.n_buffers = n_temp + 3;
  m->p.kernels = m->k;
  m->p.launches = m->launches;
}

/* Add a launch reading buffers r[0..nr) and writing w[0..nw). */
static void mk_launch(mk *m, const int *r, int nr, const int *w, int nw) {
  int L = m->p.n_launches++;
  gc_lp_kernel *k = &m->k[L];
  k->name = "k";
  k->n = 1;
  k->params = m->prm[L];
  for (int i = 0; i < nr; i++) k->params[k->n_params++] = (gc_lp_param){GC_LP_PARAM_BUFFER, r[i], GC_LP_ACCESS_READ};
  for (int i = 0; i < nw; i++) k->params[k->n_params++] = (gc_lp_param){GC_LP_PARAM_BUFFER, w[i], GC_LP_ACCESS_WRITE};
  m->p.n_kernels = m->p.n_launches;
  m->launches[L] = L;
}

/* Is a reachable from b (a < b) through g's edges? */
static int reaches(const gc_launch_deps *g, int a, int b) {
  if (a == b) return 1;
  for (int e = g->off[b]; e < g->off[b + 1]; e++)
    if (g->idx[e] >= a && reaches(g, a, g->idx[e])) return 1;
  return 0;
}

/* Brute force: do launches i and j touch common bytes with a write? */
static int conflicts(const mk *m, int i, int j) {
  const gc_lp_kernel *a = &m->k[i], *b = &m->k[j];
  for (int x = 0; x < a->n_params; x++)
    for (int y = 0; y < b->n_params; y++) {
      const gc_lp_param *p = &a->params[x], *q = &b->params[y];
      if (p->access == GC_LP_ACCESS_READ && q->access == GC_LP_ACCESS_READ) continue;
      const gc_lp_buffer *B1 = &m->b[p->value], *B2 = &m->b[q->value];
      int io1 = B1->kind == GC_LP_INPUT || B1->kind == GC_LP_OUTPUT, io2 = B2->kind == GC_LP_INPUT || B2->kind == GC_LP_OUTPUT;
      if (io1 && io2) return 1;
      if (B1->kind == GC_LP_TEMP && B2->kind == GC_LP_TEMP && B1->offset < B2->offset + B2->bytes &&
          B2->offset < B1->offset + B1->bytes)
        return 1;
      if (B1->kind == GC_LP_CONST && B2->kind == GC_LP_CONST && B1->index == B2->index) return 1;
    }
  return 0;
}

/* Every conflict ordered; no kept edge implied by the others; branches flag right. */
static void check_graph(const mk *m, const gc_launch_deps *g, const char *what) {
  int n = m->p.n_launches, chain = 1;
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < j; i++)
      if (conflicts(m, i, j)) ck_assert_msg(reaches(g, i, j), "%s: %d -> %d not ordered", what, i, j);
    for (int e = g->off[j]; e < g->off[j + 1]; e++) {
      int i = g->idx[e];
      ck_assert_msg(i >= 0 && i < j, "%s: bad edge %d -> %d", what, i, j);
      ck_assert_msg(conflicts(m, i, j), "%s: edge %d -> %d without a conflict", what, i, j);
      for (int f = g->off[j]; f < g->off[j + 1]; f++)
        if (f != e) ck_assert_msg(!reaches(g, i, g->idx[f]), "%s: edge %d -> %d implied via %d", what, i, j, g->idx[f]);
    }
    if (j > 0 && !(g->off[j + 1] - g->off[j] == 1 && g->idx[g->off[j]] == j - 1)) chain = 0;
  }
  ck_assert_int_eq(g->branches, !chain);
}

/* Q, K and V projections of one input, then their use: three branches. */
START_TEST(qkv_branches) {
  mk m;
  uint64_t off[4] = {0, 64, 128, 192};
  mk_init(&m, 4, off, NULL);
  int in = 4, out = 5, w = 6;
  int r0[] = {in, w}, q[] = {0}, k[] = {1}, v[] = {2}, all[] = {0, 1, 2}, o[] = {out};
  mk_launch(&m, r0, 2, q, 1);
  mk_launch(&m, r0, 2, k, 1);
  mk_launch(&m, r0, 2, v, 1);
  mk_launch(&m, all, 3, o, 1);
  gc_launch_deps g;
  ck_assert_int_eq(gc_launch_deps_build(&m.p, 0, 4, &g), 0);
  ck_assert_int_eq(g.branches, 1);
  ck_assert_int_eq(g.off[1] - g.off[0], 0);
  ck_assert_int_eq(g.off[2] - g.off[1], 0);   /* K does not wait for Q */
  ck_assert_int_eq(g.off[3] - g.off[2], 0);
  ck_assert_int_eq(g.off[4] - g.off[3], 3);   /* the consumer waits for all three */
  check_graph(&m, &g, "qkv");
  gc_launch_deps_free(&g);
}
END_TEST

/* Arena reuse: a later launch writing bytes an earlier one reads waits for it (WAR);
 * unknown access (a bundle's plan) counts as a write: a chain. */
START_TEST(reuse_and_unknown) {
  mk m;
  uint64_t off[3] = {0, 64, 32};   /* buffer 2 overlaps 0 and 1 */
  mk_init(&m, 3, off, NULL);
  int in = 3, out = 4;
  int r_in[] = {in}, w0[] = {0}, r0[] = {0}, w1[] = {1}, w2[] = {2}, r2[] = {2}, o[] = {out};
  mk_launch(&m, r_in, 1, w0, 1);  /* 0: in -> t0 */
  mk_launch(&m, r0, 1, w1, 1);    /* 1: t0 -> t1 */
  mk_launch(&m, r_in, 1, w2, 1);  /* 2: in -> t2, which overlaps t0 (read by 1) and t1 */
  mk_launch(&m, r2, 1, o, 1);     /* 3 */
  gc_launch_deps g;
  ck_assert_int_eq(gc_launch_deps_build(&m.p, 0, 4, &g), 0);
  ck_assert(reaches(&g, 1, 2));
  check_graph(&m, &g, "reuse");
  gc_launch_deps_free(&g);
  for (int L = 0; L < 4; L++)
    for (int q = 0; q < m.k[L].n_params; q++) m.k[L].params[q].access = GC_LP_ACCESS_UNKNOWN;
  ck_assert_int_eq(gc_launch_deps_build(&m.p, 0, 4, &g), 0);
  for (int j = 1; j < 4; j++) ck_assert(reaches(&g, j - 1, j));
  gc_launch_deps_free(&g);
}
END_TEST

/* Random plans against the brute-force closure; a sub-range (after a prologue) too. */
START_TEST(random_plans) {
  uint64_t s = tu_seed();
  for (int t = 0; t < 300; t++) {
    mk m;
    int nt = 2 + (int)(tu_next(&s) % 10);
    uint64_t off[16], bytes[16];
    for (int i = 0; i < nt; i++) {
      off[i] = (tu_next(&s) % 8) * 32;
      bytes[i] = 32 * (1 + tu_next(&s) % 3);
    }
    mk_init(&m, nt, off, bytes);
    int n = 1 + (int)(tu_next(&s) % 40);
    for (int L = 0; L < n; L++) {
      int r[4], w[2], nr = (int)(tu_next(&s) % 4), nw = 1 + (int)(tu_next(&s) % 2);
      for (int i = 0; i < nr; i++) r[i] = (int)(tu_next(&s) % (uint64_t)(nt + 3));
      for (int i = 0; i < nw; i++) w[i] = (int)(tu_next(&s) % (uint64_t)(nt + 2));  /* never the const */
      mk_launch(&m, r, nr, w, nw);
    }
    gc_launch_deps g;
    ck_assert_int_eq(gc_launch_deps_build(&m.p, 0, n, &g), 0);
    check_graph(&m, &g, "random");
    gc_launch_deps_free(&g);
  }
}
END_TEST

int main(void) {
  Suite *su = suite_create("launch_deps");
  TCase *tc = tcase_create("deps");
  tcase_add_test(tc, qkv_branches);
  tcase_add_test(tc, reuse_and_unknown);
  tcase_add_test(tc, random_plans);
  suite_add_tcase(su, tc);
  return tu_run_suite(su);
}
