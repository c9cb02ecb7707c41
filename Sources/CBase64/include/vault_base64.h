#ifndef VAULT_BASE64_H
#define VAULT_BASE64_H
#include <stddef.h>
#include <stdint.h>

/* Standard base64 (RFC 4648 alphabet, '=' padding, no line breaks) of `length` bytes into
   `out`, which must hold 4 * ceil(length / 3) bytes. Returns the number of bytes written.
   Only the last call for a stream may have a length that is not a multiple of 3.
   Uses the fastest code path this CPU has. */
size_t vault_base64_encode(const uint8_t *in, size_t length, uint8_t *out);

/* The two code paths, for tests and measurements: the portable one, and the AVX2 one
   (call it only when vault_base64_has_avx2() is non-zero). */
size_t vault_base64_encode_scalar(const uint8_t *in, size_t length, uint8_t *out);
size_t vault_base64_encode_avx2(const uint8_t *in, size_t length, uint8_t *out);
int vault_base64_has_avx2(void);

#endif
