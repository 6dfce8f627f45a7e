/*
 * test_hash.c - the intrusive hash table (agent/core/hash.c): lookups by key
 * through equal hashes, growth keeps every node findable, deletion, a fixed
 * table that never grows, and FNV-1a's published vectors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/core/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item {
    struct hnode node;
    char key[16];
    int value;
};

static uint64_t key_hash(const char *k) { return hash_bytes(HASH_SEED, k, strlen(k)); }

static struct item *find(struct htab *t, const char *k)
{
    struct hnode *it;
    HASH_FOR_EACH(t, key_hash(k), it) {
        struct item *i = HASH_ENTRY(it, struct item, node);
        if (!strcmp(i->key, k)) return i;
    }
    return NULL;
}

static void test_fnv1a_vectors(void **st)
{
    (void)st;
    assert_true(hash_bytes(HASH_SEED, "", 0) == 0xcbf29ce484222325ull);
    assert_true(hash_bytes(HASH_SEED, "a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(hash_bytes(HASH_SEED, "foobar", 6) == 0x85944171f73967e8ull);
    /* Chaining is the same as one call over the concatenation. */
    assert_true(hash_bytes(hash_bytes(HASH_SEED, "foo", 3), "bar", 3) == hash_bytes(HASH_SEED, "foobar", 6));
    assert_true(hash_u64(1) != hash_u64(2));
}

static void test_grow_find_delete(void **st)
{
    (void)st;
    enum { N = 5000 };
    struct htab t;
    struct item *items = calloc(N, sizeof *items);
    assert_int_equal(hash_init(&t, 4, 1), 0);
    size_t cap0 = t.cap;
    for (int i = 0; i < N; i++) {
        snprintf(items[i].key, sizeof items[i].key, "k%d", i);
        items[i].value = i;
        hash_add(&t, &items[i].node, key_hash(items[i].key));
    }
    assert_int_equal(t.count, N);
    assert_true(t.cap > cap0);
    for (int i = 0; i < N; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        struct item *f = find(&t, k);
        assert_non_null(f);
        assert_int_equal(f->value, i);
    }
    assert_null(find(&t, "absent"));
    for (int i = 0; i < N; i += 2) hash_del(&t, &items[i].node);
    assert_int_equal(t.count, N / 2);
    for (int i = 0; i < N; i++) assert_true((find(&t, items[i].key) != NULL) == (i % 2 == 1));
    hash_free(&t);
    free(items);
}

static void test_fixed_and_collisions(void **st)
{
    (void)st;
    struct htab t;
    struct item a = {.key = "a"}, b = {.key = "b"}, c = {.key = "c"};
    assert_int_equal(hash_init(&t, 16, 0), 0);
    /* Same hash for all three: the walk must visit each, the caller tells them apart. */
    hash_add(&t, &a.node, 7);
    hash_add(&t, &b.node, 7);
    hash_add(&t, &c.node, 7 + t.cap); /* same bucket, other hash: not visited */
    int seen = 0;
    struct hnode *it;
    HASH_FOR_EACH(&t, 7, it) seen++;
    assert_int_equal(seen, 2);
    for (int i = 0; i < 100; i++) {
        struct item *x = calloc(1, sizeof *x);
        hash_add(&t, &x->node, 1000 + (uint64_t)i);
    }
    assert_int_equal(t.cap, 16); /* grow = 0: fixed memory */
    hash_del(&t, &b.node);
    seen = 0;
    HASH_FOR_EACH(&t, 7, it) seen++;
    assert_int_equal(seen, 1);
    for (size_t i = 0; i < t.cap; i++)
        for (struct hnode *n = t.b[i], *next; n; n = next) {
            next = n->next;
            if (n != &a.node && n != &c.node) free(HASH_ENTRY(n, struct item, node));
        }
    hash_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv1a_vectors),
        cmocka_unit_test(test_grow_find_delete),
        cmocka_unit_test(test_fixed_and_collisions),
    };
    return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
