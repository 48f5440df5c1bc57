// This machine's sgemm rate: oneDNN's dnnl_sgemm on 2048^3, best of five
// runs after a warm-up. Build and run with run.sh.
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const int n = 2048;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
        *c = malloc(sizeof(float) * n * n);
  for (long i = 0; i < (long)n * n; ++i) {
    a[i] = 1.0f / (float)(i % 7 + 1);
    b[i] = 1.0f / (float)(i % 5 + 1);
  }
  dnnl_sgemm('N', 'N', n, n, n, 1.f, a, n, b, n, 0.f, c, n);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    dnnl_sgemm('N', 'N', n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    double dt = now() - t0;
    best = dt < best ? dt : best;
  }
  printf("| dnnl_sgemm %dx%dx%d | %.1f GFLOP/s |\n", n, n, n,
         2.0 * n * n * n / best / 1e9);
  free(a);
  free(b);
  free(c);
  return 0;
}
