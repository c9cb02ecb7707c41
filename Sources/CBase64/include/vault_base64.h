#ifndef VAULT_BASE64_H
#define VAULT_BASE64_H
#include <stddef.h>
#include <stdint.h>

/* Standard base64 (RFC 4648 alphabet, '=' padding, no line breaks) of `length` bytes into
   `out`, which must hold 4 * ceil(length / 3) bytes. Returns the number of bytes written.
   Only the last call for a stream may have a length that is not a multiple of 3. */
size_t vault_base64_encode(const uint8_t *in, size_t length, uint8_t *out);

#endif
