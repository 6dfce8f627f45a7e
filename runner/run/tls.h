/*
 * runner/run/tls.h - a TLS 1.2 client (BearSSL) for a helper process that
 * may block: the trust anchors from a PEM bundle, and one connection over
 * a connected non-blocking socket, every wait bounded by one deadline.
 *
 * What it accepts: ECDHE on P-256, P-384 or P-521 with an ECDSA or RSA
 * certificate and AES-GCM (no TLS 1.3: BearSSL has none). The server's chain must
 * lead to an anchor of the bundle, be valid at the system clock, and name
 * the host (SNI carries it too); DNS names only, so an IP address is refused
 * before any byte is sent (tls_host_checkable).
 */
#ifndef SA_RUNNER_RUN_TLS_H
#define SA_RUNNER_RUN_TLS_H

#include <bearssl_x509.h>
#include <stddef.h>
#include <sys/types.h>

/* The largest bundle read (Debian's ca-certificates.crt is some 220 KB). */
#define TLS_TRUST_MAX_BYTES (4u << 20)

struct tls_trust {
    br_x509_trust_anchor *ta; /* each anchor's DN and key in a block of its own */
    size_t n, cap;
    size_t skipped; /* certificates of the bundle BearSSL could not decode */
};

/* The anchors of the PEM bundle pem[0..n): every CERTIFICATE (or X509
 * CERTIFICATE) object; other objects and text around them are passed over,
 * and a certificate that does not decode (bad base64, not X.509, a key type
 * BearSSL lacks) is counted in skipped. Returns 0, or -1 with a reason in
 * err (no certificate, out of memory); t is then empty. */
int tls_trust_parse(struct tls_trust *t, const void *pem, size_t n, char *err);
/* The same from the regular file at path, at most TLS_TRUST_MAX_BYTES. */
int tls_trust_load(struct tls_trust *t, const char *path, char *err);
void tls_trust_free(struct tls_trust *t);

/* 1 when host is a name the certificate check can match (a DNS name), 0 for
 * an IPv4 or IPv6 address, which BearSSL cannot check against a certificate. */
int tls_host_checkable(const char *host);

struct tls_conn;

/* Start TLS on fd (connected, non-blocking; not closed by tls_close) and
 * complete the handshake with host before deadline (io_now's clock).
 * Returns the connection, or NULL with the reason in err: the server's
 * certificate refused (expired, another host's, not from an anchor), no
 * handshake before the deadline, the connection lost. */
struct tls_conn *tls_open(int fd, const char *host, const struct tls_trust *trust, double deadline, char *err);
/* Send p[0..n) and flush it. Returns 0, or -1 with err. */
int tls_write_all(struct tls_conn *c, const void *p, size_t n, char *err);
/* Up to n bytes of the server's data. Returns how many, 0 when the server
 * closed (cleanly or not), or -1 with err. */
ssize_t tls_read(struct tls_conn *c, void *p, size_t n, char *err);
/* Free c, its buffers wiped (they held the data sent). */
void tls_close(struct tls_conn *c);

#endif
