/*
 * runner/run/tls.c - the TLS client (see tls.h): trust anchors from a PEM
 * bundle (its certificates found and base64-decoded here, decoded by
 * br_x509_decoder), and BearSSL's client engine set up by hand with the few
 * suites and engines it needs, so the linker takes nothing else from the
 * archive, driven by br_sslio over a socket whose every wait is a poll
 * bounded by the caller's deadline.
 */
#include "runner/run/tls.h"
#include "agent/core/b64.h"
#include "agent/core/buf.h"
#include "agent/core/err.h"
#include "agent/core/io.h"
#include "agent/core/nonce.h"

#include <arpa/inet.h>
#include <bearssl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ anchors ---- */

/* A subject DN longer than this is not a CA's (real ones are < 1 KiB), nor
 * a certificate larger than CERT_MAX. */
#define TLS_DN_MAX 8192
#define CERT_MAX 65536

/* The certificate being decoded. */
struct cert_dec {
    br_x509_decoder_context x;
    struct buf dn;
    int dn_over;
};

static void dn_append(void *ctx, const void *p, size_t n)
{
    struct cert_dec *d = ctx;
    if (buf_append(&d->dn, p, n) < 0) d->dn_over = 1;
}

/* The decoded certificate's subject and key as a trust anchor, in one
 * block: 0, or -1 when out of memory. */
static int anchor_add(struct tls_trust *t, struct cert_dec *d)
{
    const br_x509_pkey *pk = br_x509_decoder_get_pkey(&d->x);
    size_t klen = pk->key_type == BR_KEYTYPE_RSA ? pk->key.rsa.nlen + pk->key.rsa.elen : pk->key.ec.qlen;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        br_x509_trust_anchor *ta = realloc(t->ta, cap * sizeof *ta);
        if (!ta) return -1;
        t->ta = ta;
        t->cap = cap;
    }
    unsigned char *block = malloc(d->dn.len + klen + 1);
    if (!block) return -1;
    br_x509_trust_anchor *a = &t->ta[t->n++];
    memset(a, 0, sizeof *a);
    memcpy(block, d->dn.data, d->dn.len);
    a->dn.data = block;
    a->dn.len = d->dn.len;
    a->flags = br_x509_decoder_isCA(&d->x) ? BR_X509_TA_CA : 0;
    a->pkey.key_type = pk->key_type;
    unsigned char *k = block + d->dn.len;
    if (pk->key_type == BR_KEYTYPE_RSA) {
        memcpy(k, pk->key.rsa.n, pk->key.rsa.nlen);
        memcpy(k + pk->key.rsa.nlen, pk->key.rsa.e, pk->key.rsa.elen);
        a->pkey.key.rsa.n = k;
        a->pkey.key.rsa.nlen = pk->key.rsa.nlen;
        a->pkey.key.rsa.e = k + pk->key.rsa.nlen;
        a->pkey.key.rsa.elen = pk->key.rsa.elen;
    } else {
        memcpy(k, pk->key.ec.q, pk->key.ec.qlen);
        a->pkey.key.ec.curve = pk->key.ec.curve;
        a->pkey.key.ec.q = k;
        a->pkey.key.ec.qlen = pk->key.ec.qlen;
    }
    return 0;
}

/* The next "-----BEGIN CERTIFICATE-----" (or X509 CERTIFICATE) object of
 * p[*off..n): 1 with its body between the banners in [*b, *e), *off past
 * its END line; 0 when there is none. BearSSL's own PEM decoder runs a
 * virtual machine a byte at a time, some 1,000 instructions a byte: 0.2 s
 * for a system bundle; this scan and agent/core/b64.c take a millisecond. */
static int next_cert(const char *p, size_t n, size_t *off, const char **b, const char **e)
{
    static const char begin[] = "-----BEGIN ", end[] = "-----END ";
    while (*off < n) {
        const char *s = memmem(p + *off, n - *off, begin, sizeof begin - 1);
        if (!s) break;
        const char *label = s + sizeof begin - 1;
        const char *eol = memchr(label, '\n', (size_t)(p + n - label));
        if (!eol) break;
        *off = (size_t)(eol + 1 - p);
        size_t ll = (size_t)(eol - label);
        while (ll && label[ll - 1] == '\r') ll--;
        int cert = (ll == 16 && !memcmp(label, "CERTIFICATE-----", 16)) ||
                   (ll == 21 && !memcmp(label, "X509 CERTIFICATE-----", 21));
        if (!cert) continue;
        const char *stop = memmem(eol + 1, (size_t)(p + n - eol - 1), end, sizeof end - 1);
        if (!stop) break;
        *b = eol + 1;
        *e = stop;
        const char *after = memchr(stop, '\n', (size_t)(p + n - stop));
        *off = after ? (size_t)(after + 1 - p) : n;
        return 1;
    }
    *off = n;
    return 0;
}

/* How many of p[0..n) come before a line end or a blank. */
static size_t strcspn_n(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] != '\n' && p[i] != '\r' && p[i] != ' ' && p[i] != '\t') i++;
    return i;
}

/* One certificate's base64 body decoded and added as an anchor: 1, 0 when
 * it does not decode (skipped), -1 when out of memory. */
static int cert_add(struct tls_trust *t, struct cert_dec *d, struct buf *text, struct buf *der, const char *b,
                    const char *e)
{
    buf_reset(text);
    buf_reset(der);
    /* The base64 without its line ends and blanks, a run at a time. */
    while (b < e) {
        size_t run = strcspn_n(b, (size_t)(e - b));
        if (run && buf_append(text, b, run) < 0) return 0;
        b += run;
        while (b < e && (*b == '\n' || *b == '\r' || *b == ' ' || *b == '\t')) b++;
    }
    if (b64_decode(der, text->data ? text->data : "", text->len) < 0) return 0;
    buf_reset(&d->dn);
    d->dn_over = 0;
    br_x509_decoder_init(&d->x, dn_append, d);
    br_x509_decoder_push(&d->x, der->data, der->len);
    if (br_x509_decoder_last_error(&d->x) != 0 || d->dn_over) return 0;
    return anchor_add(t, d) < 0 ? -1 : 1;
}

int tls_trust_parse(struct tls_trust *t, const void *pem, size_t n, char *err)
{
    memset(t, 0, sizeof *t);
    struct cert_dec *d = calloc(1, sizeof *d);
    if (!d) {
        err_set(err, "out of memory");
        return -1;
    }
    struct buf text, der;
    buf_init(&d->dn, TLS_DN_MAX);
    buf_init(&text, CERT_MAX / 3 * 4 + 4);
    buf_init(&der, CERT_MAX);
    size_t off = 0;
    const char *b, *e;
    int rc = 0;
    while (rc >= 0 && next_cert(pem, n, &off, &b, &e)) {
        rc = cert_add(t, d, &text, &der, b, e);
        if (rc == 0) t->skipped++;
    }
    buf_free(&text);
    buf_free(&der);
    buf_free(&d->dn);
    free(d);
    if (rc < 0)
        err_set(err, "out of memory");
    else if (t->n == 0)
        err_set(err, "no certificate in it%s", t->skipped ? " that this client can decode" : "");
    if (rc < 0 || t->n == 0) {
        tls_trust_free(t);
        return -1;
    }
    return 0;
}

int tls_trust_load(struct tls_trust *t, const char *path, char *err)
{
    memset(t, 0, sizeof *t);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        err_set(err, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(err, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    /* Read to the end (a file may grow after fstat), within the bound. */
    struct buf pem;
    buf_init(&pem, TLS_TRUST_MAX_BYTES);
    const char *why = NULL;
    int e = 0;
    for (;;) {
        size_t left = pem.max - pem.len;
        if (left == 0) {
            why = "4 MiB or more";
            break;
        }
        size_t want = pem.len ? 65536 : (size_t)st.st_size + 1;
        if (pem.cap <= pem.len + 1 && buf_reserve(&pem, want < left ? want : left) < 0) {
            why = "out of memory";
            break;
        }
        size_t room = pem.cap - pem.len - 1;
        ssize_t r = read(fd, pem.data + pem.len, room < left ? room : left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno;
        if (r <= 0) break;
        pem.len += (size_t)r;
    }
    close(fd);
    char reason[ERR_LEN];
    if (why || e)
        err_set(err, "cannot read %s: %s", path, why ? why : strerror(e));
    else if (tls_trust_parse(t, pem.data, pem.len, reason) < 0)
        err_set(err, "%s: %s", path, reason);
    buf_free(&pem);
    return why || e || t->n == 0 ? -1 : 0;
}

void tls_trust_free(struct tls_trust *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->ta[i].dn.data);
    free(t->ta);
    memset(t, 0, sizeof *t);
}

int tls_host_checkable(const char *host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) != 1 && inet_pton(AF_INET6, host, a) != 1;
}

/* --------------------------------------------------------- connection ---- */

struct tls_conn {
    br_ssl_client_context cc;
    br_x509_minimal_context xc;
    br_sslio_context io;
    int fd;
    double deadline;
    int io_errno; /* why the socket failed: ETIMEDOUT, ECONNRESET, 0 for EOF */
    unsigned char iobuf[BR_SSL_BUFSIZE_MONO];
};

static int low_read(void *ctx, unsigned char *p, size_t n)
{
    struct tls_conn *c = ctx;
    for (;;) {
        ssize_t r = recv(c->fd, p, n, 0);
        if (r > 0) return (int)r;
        if (r == 0) {
            c->io_errno = 0;
            return -1;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN || io_wait(c->fd, POLLIN, c->deadline) < 0) {
            c->io_errno = errno;
            return -1;
        }
    }
}

static int low_write(void *ctx, const unsigned char *p, size_t n)
{
    struct tls_conn *c = ctx;
    for (;;) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w >= 0) return (int)w;
        if (errno == EINTR) continue;
        if (errno != EAGAIN || io_wait(c->fd, POLLOUT, c->deadline) < 0) {
            c->io_errno = errno;
            return -1;
        }
    }
}

/* What the client offers, as its refusals say it. */
#define TLS_OFFER "ECDHE on P-256, P-384 or P-521 with AES-GCM"

/* The engine's error as the reason a user can act on. */
static void describe(struct tls_conn *c, char *err)
{
    int e = br_ssl_engine_last_error(&c->cc.eng);
    static const struct {
        int code;
        const char *text;
    } reasons[] = {
        {BR_ERR_X509_EXPIRED, "the server's certificate has expired or is not yet valid"},
        {BR_ERR_X509_BAD_SERVER_NAME, "the server's certificate is not for this host name"},
        {BR_ERR_X509_NOT_TRUSTED, "the server's certificate is not signed by a CA of the bundle "
                                  "(self-signed, or an unknown issuer)"},
        {BR_ERR_X509_NOT_CA, "a certificate of the chain is not a CA's"},
        {BR_ERR_X509_DN_MISMATCH, "the server's chain is out of order"},
        {BR_ERR_X509_BAD_SIGNATURE, "a signature of the server's chain does not verify"},
        {BR_ERR_X509_UNSUPPORTED, "the server's chain uses an algorithm this client lacks"},
        {BR_ERR_X509_WEAK_PUBLIC_KEY, "a key of the server's chain is too small"},
        {BR_ERR_X509_FORBIDDEN_KEY_USAGE, "the server's certificate is not for TLS servers"},
        {BR_ERR_X509_CRITICAL_EXTENSION, "the server's chain has an unknown critical extension"},
        {BR_ERR_X509_EMPTY_CHAIN, "the server sent no certificate"},
        {BR_ERR_X509_LIMIT_EXCEEDED, "the server's chain is too long"},
        {BR_ERR_UNSUPPORTED_VERSION, "the server does not speak TLS 1.2"},
        {BR_ERR_BAD_VERSION, "the server does not speak TLS 1.2"},
        {BR_ERR_BAD_CIPHER_SUITE, "no cipher suite in common with the server (" TLS_OFFER ")"},
        {BR_ERR_RECV_FATAL_ALERT + 40, "the server sent TLS alert 40, handshake failure (as when it has no "
                                       "suite or curve in common with this client: " TLS_OFFER ")"},
        {BR_ERR_INVALID_ALGORITHM, "the server signed with an algorithm this client lacks"},
        {BR_ERR_NO_RANDOM, "no entropy for the handshake"},
    };
    if (e == BR_ERR_IO || e == 0) {
        if (c->io_errno == ETIMEDOUT)
            err_set(err, "no answer within the time left");
        else if (c->io_errno)
            err_set(err, "%s", strerror(c->io_errno));
        else
            err_set(err, "the server closed the connection");
        return;
    }
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].code == e) {
            err_set(err, "%s", reasons[i].text);
            return;
        }
    if (e >= BR_ERR_SEND_FATAL_ALERT)
        err_set(err, "refused with TLS alert %d", e - BR_ERR_SEND_FATAL_ALERT);
    else if (e >= BR_ERR_RECV_FATAL_ALERT)
        err_set(err, "the server sent TLS alert %d", e - BR_ERR_RECV_FATAL_ALERT);
    else if (e >= BR_ERR_X509_OK)
        err_set(err, "the server's certificate does not decode (BearSSL X.509 error %d)", e);
    else
        err_set(err, "TLS error %d (BearSSL)", e);
}

/* The client: TLS 1.2, ECDHE on P-256, P-384 or P-521 with AES-GCM; the
 * certificate checks (SHA-256/384/512 with RSA or ECDSA on those curves)
 * against trust at the system clock. One implementation of each, the
 * smallest constant-time one (README "sandbox-agent run", step 7): the
 * generic prime-curve code (no P-256-only or X25519 code), 31-bit integers
 * shared by RSA and the curves, AES and GHASH without tables or AES-NI;
 * no ChaCha20-Poly1305 (every ECDHE server of TLS 1.2 has AES-GCM). */
static void setup(struct tls_conn *c, const struct tls_trust *trust)
{
    static const uint16_t suites[] = {
        BR_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, BR_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        BR_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, BR_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    };
    static const struct {
        int id;
        const br_hash_class *impl;
    } hashes[] = {{br_sha256_ID, &br_sha256_vtable}, {br_sha384_ID, &br_sha384_vtable},
                  {br_sha512_ID, &br_sha512_vtable}};
    br_ssl_engine_context *eng = &c->cc.eng;
    br_ssl_client_zero(&c->cc);
    br_ssl_engine_set_versions(eng, BR_TLS12, BR_TLS12);
    br_ssl_engine_set_suites(eng, suites, sizeof suites / sizeof suites[0]);
    br_x509_minimal_init(&c->xc, &br_sha256_vtable, trust->ta, trust->n);
    for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++) {
        br_ssl_engine_set_hash(eng, hashes[i].id, hashes[i].impl);
        br_x509_minimal_set_hash(&c->xc, hashes[i].id, hashes[i].impl);
    }
    br_ssl_engine_set_ec(eng, &br_ec_prime_i31);
    br_ssl_engine_set_ecdsa(eng, br_ecdsa_i31_vrfy_asn1);
    br_ssl_engine_set_rsavrfy(eng, br_rsa_i31_pkcs1_vrfy);
    br_x509_minimal_set_ecdsa(&c->xc, &br_ec_prime_i31, br_ecdsa_i31_vrfy_asn1);
    br_x509_minimal_set_rsa(&c->xc, br_rsa_i31_pkcs1_vrfy);
    br_ssl_engine_set_prf_sha256(eng, br_tls12_sha256_prf);
    br_ssl_engine_set_prf_sha384(eng, br_tls12_sha384_prf);
    br_ssl_engine_set_gcm(eng, &br_sslrec_in_gcm_vtable, &br_sslrec_out_gcm_vtable);
    br_ssl_engine_set_aes_ctr(eng, &br_aes_ct_ctr_vtable);
    br_ssl_engine_set_ghash(eng, br_ghash_ctmul64);
    /* Validity is checked against the system clock: days since 0000-01-01
     * (719528 of them before 1970) and seconds into the day. */
    time_t now = time(NULL);
    br_x509_minimal_set_time(&c->xc, (uint32_t)(now / 86400 + 719528), (uint32_t)(now % 86400));
    br_ssl_engine_set_x509(eng, &c->xc.vtable);
    br_ssl_engine_set_buffer(eng, c->iobuf, sizeof c->iobuf, 0);
}

struct tls_conn *tls_open(int fd, const char *host, const struct tls_trust *trust, double deadline, char *err)
{
    if (!tls_host_checkable(host)) {
        err_set(err, "%s is an IP address, which a certificate cannot be checked against here; "
                     "use a DNS name", host);
        return NULL;
    }
    struct tls_conn *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(err, "out of memory");
        return NULL;
    }
    c->fd = fd;
    c->deadline = deadline;
    setup(c, trust);
    unsigned char seed[32];
    if (getrandom(seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        err_set(err, "no entropy for the handshake: %s", strerror(errno));
        tls_close(c);
        return NULL;
    }
    br_ssl_engine_inject_entropy(&c->cc.eng, seed, sizeof seed);
    nonce_overwrite(seed, sizeof seed);
    br_sslio_init(&c->io, &c->cc.eng, low_read, c, low_write, c);
    /* The name goes out as SNI and is what the certificate must match. A
     * flush with nothing to send runs the handshake to its end. */
    if (!br_ssl_client_reset(&c->cc, host, 0) || br_sslio_flush(&c->io) < 0) {
        describe(c, err);
        tls_close(c);
        return NULL;
    }
    return c;
}

int tls_write_all(struct tls_conn *c, const void *p, size_t n, char *err)
{
    if (br_sslio_write_all(&c->io, p, n) < 0 || br_sslio_flush(&c->io) < 0) {
        describe(c, err);
        return -1;
    }
    return 0;
}

ssize_t tls_read(struct tls_conn *c, void *p, size_t n, char *err)
{
    int r = br_sslio_read(&c->io, p, n);
    if (r >= 0) return r;
    /* The server's close, with or without close_notify, is the end. */
    int e = br_ssl_engine_last_error(&c->cc.eng);
    if (e == 0 || (e == BR_ERR_IO && c->io_errno == 0)) return 0;
    describe(c, err);
    return -1;
}

void tls_close(struct tls_conn *c)
{
    if (!c) return;
    nonce_overwrite(c, sizeof *c);
    free(c);
}
