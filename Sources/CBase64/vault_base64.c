/* Hand-written because the Swift encoders available here (Foundation, swift-extras-base64
   1.2.0) measured 0.85-1.04 GB/s on this machine's cores, and the export pipeline needs base64
   well above 1 GB/s to keep up with decryption and the disk. Same output as any RFC 4648
   encoder: `Base64StreamEncoderTests` compares it with Foundation at every split offset.

   Method: a 4096-entry table maps 12 input bits to their two output characters, so each
   3-byte group costs two lookups; six bytes are read as one big-endian 64-bit load and
   eight characters written as one 64-bit store. */
#include "vault_base64.h"
#include <string.h>

static const char alphabet[64] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static uint16_t pairs[4096];

__attribute__((constructor)) static void build_pairs(void) {
    for (int i = 0; i < 4096; i++) {
        /* Little-endian: the first character in the low byte. */
        pairs[i] = (uint16_t)((uint8_t)alphabet[i >> 6] | ((uint16_t)(uint8_t)alphabet[i & 63] << 8));
    }
}

static inline uint64_t load_be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

size_t vault_base64_encode(const uint8_t *in, size_t length, uint8_t *out) {
    uint8_t *o = out;
    size_t i = 0;
    /* Six input bytes per step; the 8-byte load needs two bytes of slack. */
    while (i + 8 <= length) {
        uint64_t v = load_be64(in + i);
        uint64_t w = (uint64_t)pairs[(v >> 52) & 0xFFF]
                   | (uint64_t)pairs[(v >> 40) & 0xFFF] << 16
                   | (uint64_t)pairs[(v >> 28) & 0xFFF] << 32
                   | (uint64_t)pairs[(v >> 16) & 0xFFF] << 48;
        memcpy(o, &w, 8);
        o += 8;
        i += 6;
    }
    while (i + 3 <= length) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        uint16_t a = pairs[v >> 12], b = pairs[v & 0xFFF];
        memcpy(o, &a, 2);
        memcpy(o + 2, &b, 2);
        o += 4;
        i += 3;
    }
    size_t rest = length - i;
    if (rest == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        o[0] = (uint8_t)alphabet[v >> 18];
        o[1] = (uint8_t)alphabet[(v >> 12) & 63];
        o[2] = '=';
        o[3] = '=';
        o += 4;
    } else if (rest == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        o[0] = (uint8_t)alphabet[v >> 18];
        o[1] = (uint8_t)alphabet[(v >> 12) & 63];
        o[2] = (uint8_t)alphabet[(v >> 6) & 63];
        o[3] = '=';
        o += 4;
    }
    return (size_t)(o - out);
}
