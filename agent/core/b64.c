/*
 * b64.c - unwrapped base64: encoding of our own, strict decoding with libb64.
 *
 * Encoding is every output byte of a Start stream (serve's hot path), and
 * libb64's encoder goes a character at a time through a switch on its
 * state, with a newline counter Debian's build needs defeating: 33% of the
 * agent's CPU streaming 1 GiB, 18.7 instructions per input byte under
 * callgrind (48 KiB events). Where the CPU has AVX2 this one takes 24
 * bytes a turn, 0.94 instructions per byte (17 times as fast, 11 GB/s on
 * the bench VM); the tail, and a CPU without AVX2, go a group of 3 bytes at
 * a time. No state crosses calls, nothing to wrap.
 */
#include "agent/core/b64.h"

#include <b64/cdecode.h>

#include <stdint.h>
#include <string.h>

/* Characters translated to the standard alphabet per decoding call. */
#define DECODE_CHUNK 4096

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

/* AVX2, as the CPU and the kernel (the YMM state saved: XCR0 bits 1, 2)
 * both allow it. */
static int have_avx2(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & bit_AVX2) != 0;
}

/* 24 bytes a turn into 32 characters, as Wojciech Mula's and Daniel
 * Lemire's AVX2 encoder does: each 3 bytes spread into a 32-bit lane as 4
 * six-bit indices (a shuffle, then two multiplies that shift the fields
 * into place), the indices turned into the alphabet by ranges (a table of
 * 16 offsets indexed by range). Reads 28 bytes of the 24's: stops while 32
 * are there. Returns the input bytes taken. */
__attribute__((target("avx2"))) static size_t encode_avx2(char *d, const unsigned char *s, size_t n)
{
    const __m256i shuf = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1, 0, 2, 1, 4, 3,
                                          5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m256i lut = _mm256_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                         '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0,
                                         'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                         '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
    size_t used = 0;
    for (; n - used >= 32; used += 24, d += 32) {
        __m128i lo = _mm_loadu_si128((const __m128i *)(s + used));
        __m128i hi = _mm_loadu_si128((const __m128i *)(s + used + 12));
        __m256i in = _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1), shuf);
        __m256i t0 = _mm256_mulhi_epu16(_mm256_and_si256(in, _mm256_set1_epi32(0x0fc0fc00)),
                                        _mm256_set1_epi32(0x04000040));
        __m256i t1 = _mm256_mullo_epi16(_mm256_and_si256(in, _mm256_set1_epi32(0x003f03f0)),
                                        _mm256_set1_epi32(0x01000010));
        __m256i idx = _mm256_or_si256(t0, t1);
        /* Ranges: 0-25 'A', 26-51 'a', 52-61 '0', 62 '+', 63 '/'. */
        __m256i r = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
        r = _mm256_or_si256(r, _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx),
                                                _mm256_set1_epi8(13)));
        r = _mm256_add_epi8(_mm256_shuffle_epi8(lut, r), idx);
        _mm256_storeu_si256((__m256i *)d, r);
    }
    return used;
}
#endif

size_t b64_encode_to(char *dst, const void *data, size_t n)
{
    const unsigned char *s = data;
    char *d = dst;
#if defined(__x86_64__) && defined(__GNUC__)
    static int avx2 = -1;
    if (avx2 < 0) avx2 = have_avx2();
    if (avx2) {
        size_t used = encode_avx2(d, s, n);
        s += used;
        d += used / 3 * 4;
        n -= used;
    }
#endif
    /* The tail (and all of it without AVX2): a group of 3 at a time, the
     * last one padded. */
    for (; n > 0; s += 3, d += 4) {
        uint32_t v = (uint32_t)s[0] << 16 | (n > 1 ? (uint32_t)s[1] << 8 : 0) | (n > 2 ? s[2] : 0);
        d[0] = ALPHABET[v >> 18];
        d[1] = ALPHABET[v >> 12 & 63];
        d[2] = n > 1 ? ALPHABET[v >> 6 & 63] : '=';
        d[3] = n > 2 ? ALPHABET[v & 63] : '=';
        n = n > 3 ? n - 3 : 0;
    }
    return (size_t)(d - dst);
}

int b64_encode(struct buf *out, const void *data, size_t n)
{
    if (buf_reserve(out, b64_encoded_len(n)) < 0) return -1;
    out->len += b64_encode_to(out->data + out->len, data, n);
    return 0;
}

/* 1 for a character of either alphabet. libb64's own table must only ever
 * see these: it reads past its end for '{' and above. */
static int b64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/' || c == '-' || c == '_';
}

/* The length of s[0..n) without its padding, or -1 when s is not base64. */
static long b64_data_len(const char *s, size_t n)
{
    size_t pad = 0;
    while (pad < n && pad < 2 && s[n - 1 - pad] == '=') pad++;
    if (pad && n % 4 != 0) return -1;
    size_t len = n - pad;
    if (len % 4 == 1) return -1;
    for (size_t i = 0; i < len; i++)
        if (!b64_char((unsigned char)s[i])) return -1;
    return (long)len;
}

int b64_decode(struct buf *out, const char *s, size_t n)
{
    long len = b64_data_len(s, n);
    if (len < 0) return -1;
    size_t tail = (size_t)len % 4;
    /* libb64 also stores the partial byte of a group, one past the decoded
     * bytes: buf_reserve's room for a terminator holds it. */
    if (buf_reserve(out, (size_t)len / 4 * 3 + (tail ? tail - 1 : 0)) < 0) return -1;
    base64_decodestate st;
    base64_init_decodestate(&st);
    char chunk[DECODE_CHUNK];
    size_t w = 0;
    for (long i = 0; i < len;) {
        size_t k = 0;
        /* The URL-safe alphabet, in the standard one libb64 knows. */
        for (; i < len && k < sizeof chunk; i++, k++)
            chunk[k] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
        w += (size_t)base64_decode_block(chunk, (int)k, out->data + out->len + w, &st);
    }
    out->len += w;
    return 0;
}
