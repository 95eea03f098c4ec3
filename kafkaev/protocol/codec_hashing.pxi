# CRC-32C (Castagnoli), the RecordBatch v2 checksum, and murmur2, the Java
# client's default partitioner hash.
#
# CRC-32C uses the SSE4.2 crc32 instruction when the CPU has it (checked once
# at import), three streams at a time over long inputs, and a slicing-by-8
# table otherwise. Both are compiled here with a per-function target attribute,
# so the module still runs on CPUs without SSE4.2 and setup.py needs no -msse4.2.

cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    #include <string.h>

    #define KEV_CRC32C_POLY 0x82F63B78u  /* reflected Castagnoli polynomial */

    static uint32_t kev_crc32c_table[8][256];
    static int kev_crc32c_use_hw = 0;

    static uint32_t kev_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) {
        crc = ~crc;
        while (n && ((uintptr_t)p & 7)) {
            crc = kev_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
            n--;
        }
        while (n >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w = __builtin_bswap64(w);
    #endif
            w ^= crc;
            crc = kev_crc32c_table[7][w & 0xFF] ^
                  kev_crc32c_table[6][(w >> 8) & 0xFF] ^
                  kev_crc32c_table[5][(w >> 16) & 0xFF] ^
                  kev_crc32c_table[4][(w >> 24) & 0xFF] ^
                  kev_crc32c_table[3][(w >> 32) & 0xFF] ^
                  kev_crc32c_table[2][(w >> 40) & 0xFF] ^
                  kev_crc32c_table[1][(w >> 48) & 0xFF] ^
                  kev_crc32c_table[0][w >> 56];
            p += 8;
            n -= 8;
        }
        while (n--) {
            crc = kev_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        }
        return ~crc;
    }

    /* Shifting a CRC register past n zero bytes is linear over GF(2): a 32x32 bit matrix,
       applied a byte at a time through four tables. It lets three crc32 streams run side
       by side over adjacent blocks and be joined afterwards. */
    #define KEV_CRC32C_LONG 8192
    #define KEV_CRC32C_SHORT 256
    static uint32_t kev_crc32c_long_shift[4][256];
    static uint32_t kev_crc32c_short_shift[4][256];

    static uint32_t kev_gf2_times(const uint32_t *mat, uint32_t vec) {
        uint32_t sum = 0;
        while (vec) {
            if (vec & 1) sum ^= *mat;
            vec >>= 1;
            mat++;
        }
        return sum;
    }

    static void kev_gf2_square(uint32_t *square, const uint32_t *mat) {
        for (int n = 0; n < 32; n++) square[n] = kev_gf2_times(mat, mat[n]);
    }

    /* Tables that append `len` zero bytes (a power of two) to a CRC register. */
    static void kev_crc32c_shift_tables(uint32_t tables[4][256], size_t len) {
        uint32_t odd[32], even[32], *op;
        odd[0] = KEV_CRC32C_POLY;          /* one zero bit */
        for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
        kev_gf2_square(even, odd);          /* two zero bits */
        kev_gf2_square(odd, even);          /* four */
        op = odd;
        for (size_t bits = 8; ; bits <<= 1) {  /* square up to 8 * len zero bits */
            kev_gf2_square(op == odd ? even : odd, op);
            op = op == odd ? even : odd;
            if (bits == 8 * len) break;
        }
        for (uint32_t n = 0; n < 256; n++) {
            tables[0][n] = kev_gf2_times(op, n);
            tables[1][n] = kev_gf2_times(op, n << 8);
            tables[2][n] = kev_gf2_times(op, n << 16);
            tables[3][n] = kev_gf2_times(op, n << 24);
        }
    }

    static inline uint32_t kev_crc32c_shift(uint32_t tables[4][256], uint32_t crc) {
        return tables[0][crc & 0xFF] ^ tables[1][(crc >> 8) & 0xFF] ^
               tables[2][(crc >> 16) & 0xFF] ^ tables[3][crc >> 24];
    }

    #if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    #include <nmmintrin.h>
    #define KEV_HAVE_HW_CRC32C 1

    /* crc32 has a latency of three cycles but issues every cycle: three independent streams
       over adjacent blocks of `block` bytes keep the unit busy (about 2.5x one stream on
       data in cache), and the shift tables join them. Advances *p and *n past the blocks
       it consumed. */
    __attribute__((target("sse4.2")))
    static inline uint64_t kev_crc32c_hw_blocks(uint64_t c, const unsigned char **p, size_t *n,
                                                size_t block, uint32_t tables[4][256]) {
        const unsigned char *q = *p;
        while (*n >= 3 * block) {
            uint64_t c1 = 0, c2 = 0;
            const unsigned char *end = q + block;
            do {
                uint64_t w0, w1, w2;
                memcpy(&w0, q, 8);
                memcpy(&w1, q + block, 8);
                memcpy(&w2, q + 2 * block, 8);
                c = _mm_crc32_u64(c, w0);
                c1 = _mm_crc32_u64(c1, w1);
                c2 = _mm_crc32_u64(c2, w2);
                q += 8;
            } while (q < end);
            c = kev_crc32c_shift(tables, (uint32_t)c) ^ (uint32_t)c1;
            c = kev_crc32c_shift(tables, (uint32_t)c) ^ (uint32_t)c2;
            q += 2 * block;
            *n -= 3 * block;
        }
        *p = q;
        return c;
    }

    __attribute__((target("sse4.2")))
    static uint32_t kev_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
        uint64_t c = ~crc;
        while (n && ((uintptr_t)p & 7)) {
            c = _mm_crc32_u8((uint32_t)c, *p++);
            n--;
        }
        c = kev_crc32c_hw_blocks(c, &p, &n, KEV_CRC32C_LONG, kev_crc32c_long_shift);
        c = kev_crc32c_hw_blocks(c, &p, &n, KEV_CRC32C_SHORT, kev_crc32c_short_shift);
        while (n >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            c = _mm_crc32_u64(c, w);
            p += 8;
            n -= 8;
        }
        while (n--) {
            c = _mm_crc32_u8((uint32_t)c, *p++);
        }
        return ~(uint32_t)c;
    }
    static int kev_cpu_has_sse42(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("sse4.2");
    }
    #else
    #define KEV_HAVE_HW_CRC32C 0
    static uint32_t kev_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
        return kev_crc32c_sw(crc, p, n);
    }
    static int kev_cpu_has_sse42(void) { return 0; }
    #endif

    /* Appending n zero bytes to a CRC register multiplies it by x^(8n) modulo the polynomial,
       so CRC(A || B) is CRC(A) so multiplied for n = len(B), xor CRC(B) (the pre- and
       post-inversions cancel out, as in zlib's crc32_combine). The builder uses it to join the
       checksum of its header, known last, to that of its records, summed as they are written. */
    #define KEV_CRC32C_POWERS 64
    static uint32_t kev_crc32c_x2k[KEV_CRC32C_POWERS];  /* x^(2^k) mod P, reflected */

    static uint32_t kev_crc32c_multmodp(uint32_t a, uint32_t b) {  /* a * b mod P, reflected */
        uint32_t m = 1u << 31, product = 0;
        for (;;) {
            if (a & m) {
                product ^= b;
                if ((a & (m - 1)) == 0) break;
            }
            m >>= 1;
            b = (b & 1) ? (b >> 1) ^ KEV_CRC32C_POLY : b >> 1;
        }
        return product;
    }

    static uint32_t kev_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b) {
        uint32_t shift = 1u << 31;  /* x^0 */
        for (unsigned k = 3; len_b && k < KEV_CRC32C_POWERS; k++, len_b >>= 1) {  /* 8n = n << 3 */
            if (len_b & 1) shift = kev_crc32c_multmodp(kev_crc32c_x2k[k], shift);
        }
        return kev_crc32c_multmodp(shift, crc_a) ^ crc_b;
    }

    static void kev_crc32c_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ KEV_CRC32C_POLY : c >> 1;
            kev_crc32c_table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = kev_crc32c_table[0][i];
            for (int t = 1; t < 8; t++) {
                c = kev_crc32c_table[0][c & 0xFF] ^ (c >> 8);
                kev_crc32c_table[t][i] = c;
            }
        }
        uint32_t power = 1u << 30;  /* x^1 */
        kev_crc32c_x2k[0] = power;
        for (int k = 1; k < KEV_CRC32C_POWERS; k++) kev_crc32c_x2k[k] = power = kev_crc32c_multmodp(power, power);
        kev_crc32c_shift_tables(kev_crc32c_long_shift, KEV_CRC32C_LONG);
        kev_crc32c_shift_tables(kev_crc32c_short_shift, KEV_CRC32C_SHORT);
        kev_crc32c_use_hw = kev_cpu_has_sse42();
    }

    /* crc is the CRC of the bytes before p (0 to start); returns the CRC through p[n-1]. */
    static inline uint32_t kev_crc32c(uint32_t crc, const unsigned char *p, size_t n) {
        return kev_crc32c_use_hw ? kev_crc32c_hw(crc, p, n) : kev_crc32c_sw(crc, p, n);
    }

    /* org.apache.kafka.common.utils.Utils.murmur2, byte for byte, in uint32 arithmetic
       (Java's int overflow wraps the same way; >>> is the unsigned shift). */
    static uint32_t kev_murmur2(const unsigned char *data, size_t length) {
        const uint32_t seed = 0x9747b28cu;
        const uint32_t m = 0x5bd1e995u;
        const int r = 24;
        uint32_t h = seed ^ (uint32_t)length;
        size_t length4 = length / 4;
        for (size_t i = 0; i < length4; i++) {
            size_t i4 = i * 4;
            uint32_t k = (uint32_t)data[i4] | ((uint32_t)data[i4 + 1] << 8) |
                         ((uint32_t)data[i4 + 2] << 16) | ((uint32_t)data[i4 + 3] << 24);
            k *= m;
            k ^= k >> r;
            k *= m;
            h *= m;
            h ^= k;
        }
        size_t tail = length & ~(size_t)3;
        switch (length % 4) {
            case 3: h ^= (uint32_t)data[tail + 2] << 16; /* fall through */
            case 2: h ^= (uint32_t)data[tail + 1] << 8;  /* fall through */
            case 1: h ^= (uint32_t)data[tail];
                    h *= m;
        }
        h ^= h >> 13;
        h *= m;
        h ^= h >> 15;
        return h;
    }
    """
    void kev_crc32c_init() noexcept nogil
    int kev_crc32c_use_hw
    uint32_t kev_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
    uint32_t kev_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
    uint32_t kev_crc32c_raw "kev_crc32c"(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
    uint32_t kev_murmur2(const unsigned char *data, size_t length) noexcept nogil
    uint32_t kev_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b) noexcept nogil

kev_crc32c_init()

# Java's Utils.toPositive: clear the sign bit (not abs(), which differs for MIN_VALUE).
cdef enum:
    POSITIVE_MASK = 0x7FFFFFFF


cdef uint32_t crc32c_update(uint32_t crc, const char *data, Py_ssize_t n) noexcept nogil:
    return kev_crc32c_raw(crc, <const unsigned char *>data, <size_t>n)


cdef uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, Py_ssize_t len_b) noexcept nogil:
    """The CRC-32C of A followed by B, from the CRC-32C of each and the length of B."""
    return kev_crc32c_combine(crc_a, crc_b, <size_t>len_b)


def _crc32c_combine(uint32_t crc_a, uint32_t crc_b, Py_ssize_t len_b):
    """crc32c(a + b) from crc32c(a), crc32c(b) and len(b): for tests."""
    if len_b < 0:
        raise ValueError(f"_crc32c_combine: 'len_b' must be >= 0, got {len_b}")
    return crc32c_combine(crc_a, crc_b, len_b)


cdef int32_t murmur2_positive(const char *data, Py_ssize_t n) noexcept nogil:
    return <int32_t>(kev_murmur2(<const unsigned char *>data, <size_t>n) & POSITIVE_MASK)


def crc32c(data, uint32_t crc=0):
    """CRC-32C (Castagnoli) of a bytes-like object, as in the RecordBatch v2 header.

    ``crc`` continues a running checksum: ``crc32c(b, crc32c(a)) == crc32c(a + b)``.
    """
    cdef Py_buffer view
    cdef uint32_t result
    if PyBytes_CheckExact(data):
        return crc32c_update(crc, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    try:
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    except TypeError:
        raise TypeError(f"crc32c: 'data' must be bytes-like, got {type(data).__name__}") from None
    try:
        with nogil:
            result = crc32c_update(crc, <const char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def murmur2(key):
    """The Java client's partitioner hash: ``Utils.toPositive(Utils.murmur2(key))``.

    A 31-bit non-negative int; the default partition of a keyed record is
    ``murmur2(key) % num_partitions``. ``str`` keys are hashed as UTF-8.
    """
    cdef Py_buffer view
    cdef const char *p
    cdef Py_ssize_t n
    cdef int32_t result
    if PyBytes_CheckExact(key):
        return murmur2_positive(PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
    if isinstance(key, str):
        p = PyUnicode_AsUTF8AndSize(key, &n)
        return murmur2_positive(p, n)
    try:
        PyObject_GetBuffer(key, &view, PyBUF_SIMPLE)
    except TypeError:
        raise TypeError(f"murmur2: 'key' must be bytes-like or str, got {type(key).__name__}") from None
    try:
        result = murmur2_positive(<const char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def _crc32c_implementation():
    """Which CRC-32C path this CPU uses: "sse4.2" or "table" (for tests and benchmarks)."""
    return "sse4.2" if kev_crc32c_use_hw else "table"


def _crc32c_table(data, uint32_t crc=0):
    """CRC-32C through the table path regardless of the CPU (tests compare both paths)."""
    cdef bytes b = bytes(data)
    return kev_crc32c_sw(crc, <const unsigned char *>PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b))
