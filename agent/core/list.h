/*
 * list.h - intrusive doubly-linked lists: a node holds `prev` and `next`
 * pointers of its own type, the list is a head pointer. The two steps every
 * list here takes, written once.
 */
#ifndef SA_CORE_LIST_H
#define SA_CORE_LIST_H

#include <stddef.h>

/* Put node n first in the list at head. */
#define LIST_PUSH(head, n)                       \
    do {                                         \
        (n)->prev = NULL;                        \
        (n)->next = (head);                      \
        if ((n)->next) (n)->next->prev = (n);    \
        (head) = (n);                            \
    } while (0)

/* Take node n out of the list at head; its links are cleared. */
#define LIST_UNLINK(head, n)                              \
    do {                                                  \
        if ((n)->prev) (n)->prev->next = (n)->next;       \
        else (head) = (n)->next;                          \
        if ((n)->next) (n)->next->prev = (n)->prev;       \
        (n)->prev = (n)->next = NULL;                     \
    } while (0)

#endif
