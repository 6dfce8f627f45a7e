/*
 * test_tls.c - the TLS client's trust anchors (runner/run/tls.c): a PEM
 * bundle's certificates become anchors (EC and RSA keys, the CA flag, the
 * subject), whatever surrounds them (other objects, text, CRLF, no final
 * newline); a certificate that does not decode is skipped and counted;
 * what holds no certificate is refused with a reason; the file is
 * bounded and must be a regular file; IP addresses are not names a
 * certificate can be checked against.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/err.h"
#include "runner/run/tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A P-256 CA ("CN=unit CA", CA:TRUE) and an RSA-1024 non-CA ("CN=unit
 * RSA"), self-signed by openssl; their dates do not matter here. */
static const char EC_CA[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBeTCCAR+gAwIBAgIUM5DwPbMdtHtLopby93oSaHCTf3AwCgYIKoZIzj0EAwIw\n"
    "EjEQMA4GA1UEAwwHdW5pdCBDQTAeFw0yNjEyMDYwNTEwMjJaFw0zNjEyMDMwNTEw\n"
    "MjJaMBIxEDAOBgNVBAMMB3VuaXQgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC\n"
    "AAQ2sBH0C4+vvCBuEwh0bHj1zO9p7dAlIGUiu1/gJCMpeB7wXgCNT9m2PsULHCKP\n"
    "bpje3zjfQOPJFnTGifFkMPgEo1MwUTAdBgNVHQ4EFgQUtFuI9GCBqLSNOGqiqVRE\n"
    "Kl2Wy/IwHwYDVR0jBBgwFoAUtFuI9GCBqLSNOGqiqVREKl2Wy/IwDwYDVR0TAQH/\n"
    "BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAWW/THgbLrIInD+Hn2KmUudWM9doix\n"
    "ItY1UzfXR1g8iwIhAPiGhKho7BEE142PoEsU+rUd+j7aI7JkVFy+HBOjbRdT\n"
    "-----END CERTIFICATE-----\n";
static const char RSA_LEAF[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIB/zCCAWigAwIBAgIUBtjGNRQ8RYetBjXxtX9KuTVwWYMwDQYJKoZIhvcNAQEL\n"
    "BQAwEzERMA8GA1UEAwwIdW5pdCBSU0EwHhcNMjYxMjA2MDUxMDIyWhcNMzYxMjAz\n"
    "MDUxMDIyWjATMREwDwYDVQQDDAh1bml0IFJTQTCBnzANBgkqhkiG9w0BAQEFAAOB\n"
    "jQAwgYkCgYEAxgllSSKof20xHuCTNRql29bVNJgYFt+qD0J8Haah7bwAhwRnHlwk\n"
    "5MfLZnP7P33XtxSd0SzvJR75aSpKn61UhrmDFNsbRZo2jDEFmPeG15Ax+9pqftki\n"
    "TghEetCdvsX6Od7a3utqK1p877JjSzR8a5SBMaxLNHvViqdZPJZ5sUkCAwEAAaNQ\n"
    "ME4wHQYDVR0OBBYEFKs1JWL/LD3zZy6sjs9lxZGttDm+MB8GA1UdIwQYMBaAFKs1\n"
    "JWL/LD3zZy6sjs9lxZGttDm+MAwGA1UdEwEB/wQCMAAwDQYJKoZIhvcNAQELBQAD\n"
    "gYEAFOluXnzKRIy7Sj481/ZMiuz+dRtZ8D5WARlvX/UkZgBK6rKxDmVqzoO+Fdf8\n"
    "8Dyp6sdSmKisfgKoxDc3kBXWzWBDi/lrDPrkWaLbbHlSLN5D8O1wtJOglZ/RQirt\n"
    "x1raYSyuAlHgtSU6dMgcZUfbtzaxCagMOqXe23icdeNnZ0o=\n"
    "-----END CERTIFICATE-----\n";

static void test_tls_two_anchors(void **st)
{
    (void)st;
    char pem[4096], err[ERR_LEN];
    struct tls_trust t;
    snprintf(pem, sizeof pem, "# a comment\n%s\nbetween\n%s", EC_CA, RSA_LEAF);
    assert_int_equal(tls_trust_parse(&t, pem, strlen(pem), err), 0);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.skipped, 0);
    assert_int_equal(t.ta[0].pkey.key_type, BR_KEYTYPE_EC);
    assert_int_equal(t.ta[0].pkey.key.ec.curve, BR_EC_secp256r1);
    assert_int_equal(t.ta[0].pkey.key.ec.qlen, 65);
    assert_int_equal(t.ta[0].flags & BR_X509_TA_CA, BR_X509_TA_CA);
    /* The subject as DER: "unit CA" is in it. */
    assert_non_null(memmem(t.ta[0].dn.data, t.ta[0].dn.len, "unit CA", 7));
    assert_int_equal(t.ta[1].pkey.key_type, BR_KEYTYPE_RSA);
    assert_int_equal(t.ta[1].pkey.key.rsa.nlen, 128);
    assert_int_equal(t.ta[1].flags & BR_X509_TA_CA, 0);
    assert_non_null(memmem(t.ta[1].dn.data, t.ta[1].dn.len, "unit RSA", 8));
    tls_trust_free(&t);
    assert_int_equal(t.n, 0);
    assert_null(t.ta);
}

static void test_tls_other_objects_and_line_ends(void **st)
{
    (void)st;
    char pem[4096], crlf[8192], err[ERR_LEN];
    struct tls_trust t;
    /* A key before the certificate is passed over; CRLF line ends and a
     * missing final newline still give the anchor. */
    snprintf(pem, sizeof pem, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n%s", EC_CA);
    size_t n = 0;
    for (const char *p = pem; *p; p++) {
        if (*p == '\n') crlf[n++] = '\r';
        crlf[n++] = *p;
    }
    n -= 2; /* no final CRLF */
    assert_int_equal(tls_trust_parse(&t, crlf, n, err), 0);
    assert_int_equal(t.n, 1);
    tls_trust_free(&t);
}

/* text with every "CERTIFICATE" written `word` instead, into out. */
static void rename_objects(char *out, size_t cap, const char *text, const char *word)
{
    size_t n = 0;
    for (const char *p = text; *p && n + 32 < cap;) {
        if (!strncmp(p, "CERTIFICATE", 11)) {
            n += (size_t)snprintf(out + n, cap - n, "%s", word);
            p += 11;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
}

static void test_tls_only_certificates(void **st)
{
    (void)st;
    char req[2048], pem[8192], crlf[16384], err[ERR_LEN];
    struct tls_trust t;
    /* The EC certificate's bytes under another name are not an anchor,
     * with LF or CRLF line ends (where BearSSL 0.6 leaves the banner's
     * dashes in the name). */
    rename_objects(req, sizeof req, EC_CA, "CERTIFICATE REQUEST");
    snprintf(pem, sizeof pem, "%s%s%s", req, RSA_LEAF, req);
    for (int pass = 0; pass < 2; pass++) {
        const char *in = pem;
        if (pass) {
            size_t n = 0;
            for (const char *p = pem; *p; p++) {
                if (*p == '\n') crlf[n++] = '\r';
                crlf[n++] = *p;
            }
            crlf[n] = '\0';
            in = crlf;
        }
        assert_int_equal(tls_trust_parse(&t, in, strlen(in), err), 0);
        assert_int_equal(t.n, 1);
        assert_int_equal(t.ta[0].pkey.key_type, BR_KEYTYPE_RSA);
        tls_trust_free(&t);
    }
    /* "X509 CERTIFICATE" is the old name of the same thing. */
    rename_objects(req, sizeof req, EC_CA, "X509 CERTIFICATE");
    assert_int_equal(tls_trust_parse(&t, req, strlen(req), err), 0);
    assert_int_equal(t.n, 1);
    tls_trust_free(&t);
}

static void test_tls_refusals(void **st)
{
    (void)st;
    char err[ERR_LEN];
    struct tls_trust t;
    assert_int_equal(tls_trust_parse(&t, "", 0, err), -1);
    assert_string_equal(err, "no certificate in it");
    const char *text = "just text\n";
    assert_int_equal(tls_trust_parse(&t, text, strlen(text), err), -1);
    assert_string_equal(err, "no certificate in it");
    const char *bad = "-----BEGIN CERTIFICATE-----\nnot base64 !!\n-----END CERTIFICATE-----\n";
    assert_int_equal(tls_trust_parse(&t, bad, strlen(bad), err), -1);
    assert_string_equal(err, "no certificate in it that this client can decode");
    assert_int_equal(t.n, 0);
    assert_null(t.ta);
    /* Base64 that is not a certificate: skipped, and then none is left. */
    const char *junk = "-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----\n";
    assert_int_equal(tls_trust_parse(&t, junk, strlen(junk), err), -1);
    assert_string_equal(err, "no certificate in it that this client can decode");
    /* ... but beside a good one it is only counted. */
    char pem[4096];
    snprintf(pem, sizeof pem, "%s%s", junk, EC_CA);
    assert_int_equal(tls_trust_parse(&t, pem, strlen(pem), err), 0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.skipped, 1);
    tls_trust_free(&t);
    /* A truncated certificate (no END line) gives nothing. */
    assert_int_equal(tls_trust_parse(&t, EC_CA, 200, err), -1);
}

static void test_tls_load_files(void **st)
{
    (void)st;
    char dir[] = "/tmp/test_tls.XXXXXX", path[64], err[ERR_LEN];
    struct tls_trust t;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/bundle.pem", dir);
    FILE *f = fopen(path, "w");
    fputs(EC_CA, f);
    fputs(RSA_LEAF, f);
    fclose(f);
    assert_int_equal(tls_trust_load(&t, path, err), 0);
    assert_int_equal(t.n, 2);
    tls_trust_free(&t);

    /* Past the bound: refused, not read whole. */
    f = fopen(path, "a");
    for (unsigned i = 0; i <= TLS_TRUST_MAX_BYTES / 4096; i++) fprintf(f, "%4095s\n", "");
    fclose(f);
    assert_int_equal(tls_trust_load(&t, path, err), -1);
    assert_non_null(strstr(err, "4 MiB or more"));
    assert_int_equal(t.n, 0);

    assert_int_equal(tls_trust_load(&t, dir, err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    assert_int_equal(tls_trust_load(&t, path, err), -1);
    assert_non_null(strstr(err, "No such file or directory"));
    rmdir(dir);
}

static void test_tls_host_checkable(void **st)
{
    (void)st;
    assert_int_equal(tls_host_checkable("example.com"), 1);
    assert_int_equal(tls_host_checkable("localhost"), 1);
    assert_int_equal(tls_host_checkable("1.2.3.4.example"), 1);
    assert_int_equal(tls_host_checkable("127.0.0.1"), 0);
    assert_int_equal(tls_host_checkable("::1"), 0);
    assert_int_equal(tls_host_checkable("fe80::1"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_two_anchors),
        cmocka_unit_test(test_tls_other_objects_and_line_ends),
        cmocka_unit_test(test_tls_only_certificates),
        cmocka_unit_test(test_tls_refusals),
        cmocka_unit_test(test_tls_load_files),
        cmocka_unit_test(test_tls_host_checkable),
    };
    return cmocka_run_group_tests_name("tls", tests, NULL, NULL);
}
