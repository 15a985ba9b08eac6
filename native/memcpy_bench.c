/*
 * kvledger C baseline: single-thread memcpy bandwidth.
 *
 * Copies blocks of each size between two page-aligned regions (64 MiB each by default, pages
 * touched first), walking the region block by block so that large regions are not served from
 * cache, the same access pattern the transfer benchmark uses. Each size runs ROUNDS rounds of
 * at least BYTES_PER_ROUND bytes; the median round is reported.
 *
 * usage: memcpy_bench [region_bytes] [bytes_per_round] [rounds] [size ...]
 * output: one line per size: "memcpy <size_bytes> <median_GBps> <min_GBps> <max_GBps>"
 *         (GB = 1e9 bytes)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t region = argc > 1 ? strtoull(argv[1], NULL, 0) : (64u << 20);
    size_t per_round = argc > 2 ? strtoull(argv[2], NULL, 0) : (512u << 20);
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    size_t default_sizes[] = {4096, 65536, 1u << 20, 64u << 20};
    size_t nsizes = argc > 4 ? (size_t)(argc - 4) : 4;
    if (rounds < 1 || rounds > 99 || region == 0) {
        fprintf(stderr, "usage: memcpy_bench [region_bytes] [bytes_per_round] [rounds 1..99] [size ...]\n");
        return 2;
    }
    char *src, *dst;
    if (posix_memalign((void **)&src, 4096, region) || posix_memalign((void **)&dst, 4096, region)) {
        fprintf(stderr, "memcpy_bench: cannot allocate 2 x %zu bytes\n", region);
        return 1;
    }
    for (size_t i = 0; i < region; i++) {
        src[i] = (char)(i * 31 + 7);
    }
    memset(dst, 0, region);
    double results[99];
    for (size_t s = 0; s < nsizes; s++) {
        size_t size = argc > 4 ? strtoull(argv[4 + s], NULL, 0) : default_sizes[s];
        if (size == 0 || size > region) {
            fprintf(stderr, "memcpy_bench: size %zu must be in 1..%zu\n", size, region);
            return 2;
        }
        size_t blocks = region / size;
        size_t copies = per_round / size;
        if (copies < 4) {
            copies = 4;
        }
        /* warm-up round, not reported */
        for (size_t i = 0; i < copies; i++) {
            size_t off = (i % blocks) * size;
            memcpy(dst + off, src + off, size);
        }
        for (int r = 0; r < rounds; r++) {
            double t0 = now_s();
            for (size_t i = 0; i < copies; i++) {
                size_t off = (i % blocks) * size;
                memcpy(dst + off, src + off, size);
                __asm__ volatile("" ::: "memory");
            }
            double dt = now_s() - t0;
            results[r] = (double)copies * size / dt / 1e9;
        }
        if (memcmp(dst, src, blocks * size) != 0) {
            fprintf(stderr, "memcpy_bench: destination differs from source\n");
            return 1;
        }
        qsort(results, rounds, sizeof(double), cmp_double);
        printf("memcpy %zu %.3f %.3f %.3f\n", size, results[rounds / 2], results[0], results[rounds - 1]);
        fflush(stdout);
    }
    free(src);
    free(dst);
    return 0;
}
