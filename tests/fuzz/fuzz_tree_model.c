/*
 * fuzz_tree_model.c - libFuzzer target: the watched tree's model
 * (inotify/tree/tree_model.c) against a plain shadow copy. The input is a program
 * of adds, renames, subtree removals and IN_IGNORED ledger operations; after
 * each step every live node's path, wd lookup and (parent, name) lookup must
 * agree with the shadow, and the watch mode's line for each path
 * (inotify/watch/wline.c) must be valid JSON.
 */
#include "agent/core/jsoncheck.h"
#include "inotify/watch/wline.h"
#include "inotify/tree/model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64

struct shadow {
    int live;
    int parent;             /* index, -1 for the root */
    char name[4];
    size_t len;
    struct tree_node *node;
};

static struct shadow sh[MAXN];
static int removed_wds[MAXN];
static int nremoved;

static void on_removed(const struct tree_node *n, void *ctx)
{
    (void)ctx;
    if (nremoved < MAXN) removed_wds[nremoved++] = n->wd;
}

static void shadow_path(int i, struct buf *b)
{
    if (sh[i].parent < 0) {
        buf_puts(b, "/r");
        return;
    }
    shadow_path(sh[i].parent, b);
    buf_putc(b, '/');
    buf_append(b, sh[i].name, sh[i].len);
}

static int is_under(int i, int top)
{
    for (; i >= 0; i = sh[i].parent)
        if (i == top) return 1;
    return 0;
}

static int pick(const uint8_t **d, size_t *n)
{
    if (!*n) return 0;
    int v = **d;
    (*d)++;
    (*n)--;
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tree_model t;
    if (tree_model_init(&t, "/r", 2, 40) < 0) return 0;
    memset(sh, 0, sizeof sh);
    sh[0].live = 1;
    sh[0].parent = -1;
    sh[0].node = tree_model_add(&t, NULL, "", 0, 0);
    if (!sh[0].node) __builtin_trap();
    struct buf a, b;
    buf_init(&a, 1 << 16);
    buf_init(&b, 1 << 16);
    while (size) {
        int op = pick(&data, &size) % 4;
        int x = pick(&data, &size) % MAXN, y = pick(&data, &size) % MAXN;
        char name[3];
        size_t len = (size_t)(pick(&data, &size) % 3) + 1;
        for (size_t k = 0; k < len; k++) name[k] = (char)pick(&data, &size);
        if (op == 0 && sh[x].live && !sh[y].live) { /* add y below x */
            if (tree_model_child(&t, sh[x].node, name, len)) continue;
            struct tree_node *n = tree_model_add(&t, sh[x].node, name, len, y);
            if (!n) {
                if (t.count < t.max_nodes) __builtin_trap();
                continue;
            }
            sh[y] = (struct shadow){1, x, {0}, len, n};
            memcpy(sh[y].name, name, len);
        } else if (op == 1 && sh[x].live && sh[y].live && x != 0) { /* rename x below y */
            if (tree_model_child(&t, sh[y].node, name, len)) continue;
            int r = tree_model_move(&t, sh[x].node, sh[y].node, name, len);
            if (is_under(y, x)) {
                if (r == 0) __builtin_trap();
                continue;
            }
            if (r < 0) __builtin_trap();
            sh[x].parent = y;
            sh[x].len = len;
            memcpy(sh[x].name, name, len);
        } else if (op == 2 && sh[x].live && x != 0) { /* remove x's subtree */
            nremoved = 0;
            tree_model_remove(&t, sh[x].node, on_removed, NULL);
            int expect = 0;
            for (int i = 0; i < MAXN; i++)
                if (sh[i].live && is_under(i, x)) expect++;
            if (nremoved != expect || removed_wds[nremoved - 1] != x) __builtin_trap();
            for (int k = 0; k < nremoved; k++) {
                if (!is_under(removed_wds[k], x)) __builtin_trap();
                tree_model_pend_add(&t, removed_wds[k]);
            }
            for (int k = 0; k < nremoved; k++) sh[removed_wds[k]].live = 0;
        } else if (op == 3) { /* the ledger */
            int due = tree_model_pend_due(&t, x);
            if (tree_model_pend_take(&t, x) != due) __builtin_trap();
        }
        /* Every live node agrees with the shadow. */
        size_t live = 0;
        for (int i = 0; i < MAXN; i++) {
            if (!sh[i].live) {
                if (tree_model_by_wd(&t, i)) __builtin_trap();
                continue;
            }
            live++;
            if (tree_model_by_wd(&t, i) != sh[i].node) __builtin_trap();
            if (i && tree_model_child(&t, sh[sh[i].parent].node, sh[i].name, sh[i].len) != sh[i].node) __builtin_trap();
            buf_reset(&a);
            buf_reset(&b);
            if (tree_model_path(&t, sh[i].node, NULL, 0, &a) < 0) __builtin_trap();
            shadow_path(i, &b);
            if (a.len != b.len || memcmp(a.data, b.data, a.len)) __builtin_trap();
            buf_reset(&b);
            struct jsoncheck jc;
            if (wline_event(&b, 256, a.data, a.len, i % 2 ? "err" : NULL) < 0) __builtin_trap();
            if (b.len < 15 || jsoncheck(b.data + 13, b.len - 14, &jc) != 0 || jc.type != JSON_OBJECT)
                __builtin_trap();
        }
        if (live != t.count) __builtin_trap();
    }
    buf_free(&a);
    buf_free(&b);
    tree_model_free(&t);
    return 0;
}
