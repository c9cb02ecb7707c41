/* `make bench` helper: throughput of the export's base64 encoder (Sources/CBase64, both code
   paths) next to libsodium's sodium_bin2base64, on one core. Method: encode a 768 KiB buffer
   (one decrypted batch of 12 chunks) repeatedly, 512 MiB per round, median of 5 rounds after a
   warm-up; GB/s = 10^9 input bytes per second. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "vault_base64.h"

enum { BATCH = 12 * 65536, ROUND = 512 << 20, ROUNDS = 5 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static unsigned char in[BATCH], out[BATCH / 3 * 4 + 4];

static size_t sodium_encode(const uint8_t *i, size_t n, uint8_t *o) {
    sodium_bin2base64((char *)o, sizeof out + 1, i, n, sodium_base64_VARIANT_ORIGINAL);
    return n / 3 * 4;
}

static void bench(const char *name, size_t (*encode)(const uint8_t *, size_t, uint8_t *), size_t round) {
    double t[ROUNDS];
    static volatile size_t sink;   /* keeps the calls from being optimised away */
    for (int r = -1; r < ROUNDS; r++) {
        double t0 = now();
        for (size_t done = 0; done < round; done += BATCH) sink += encode(in, BATCH, out);
        if (r >= 0) t[r] = now() - t0;
    }
    qsort(t, ROUNDS, sizeof t[0], cmp);
    printf("%-44s %8.2f GB/s  (input, one core)\n", name, round / t[ROUNDS / 2] / 1e9);
}

int main(void) {
    if (sodium_init() < 0) return 1;
    randombytes_buf(in, sizeof in);
    if (vault_base64_has_avx2()) bench("base64, vault encoder (AVX2 path)", vault_base64_encode_avx2, ROUND);
    bench("base64, vault encoder (portable path)", vault_base64_encode_scalar, ROUND);
    bench("base64, libsodium sodium_bin2base64", sodium_encode, ROUND / 8);
    return 0;
}
