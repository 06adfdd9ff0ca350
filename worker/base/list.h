/*
 * list.h - intrusive doubly-linked lists: a node type with 'prev' and 'next' members, and a
 * head pointer (NULL when empty) that the owner keeps; and intrusive singly-linked queues
 * (first in, first out): a node type with a 'next' member, and head and tail pointers (both
 * NULL when empty). Each argument is evaluated more than once: pass plain lvalues.
 */
#ifndef SEATD_LIST_H
#define SEATD_LIST_H

#include <stddef.h>

/* Puts 'node' first in the list starting at 'head'. */
#define SEATD_LIST_PUSH(head, node)                                                                \
    do {                                                                                           \
        (node)->prev = NULL;                                                                       \
        (node)->next = (head);                                                                     \
        if ((head) != NULL)                                                                        \
            (head)->prev = (node);                                                                 \
        (head) = (node);                                                                           \
    } while (0)

/* Takes 'node' out of the list starting at 'head'; its 'prev' and 'next' are left NULL. */
#define SEATD_LIST_UNLINK(head, node)                                                              \
    do {                                                                                           \
        if ((node)->prev != NULL)                                                                  \
            (node)->prev->next = (node)->next;                                                     \
        else                                                                                       \
            (head) = (node)->next;                                                                 \
        if ((node)->next != NULL)                                                                  \
            (node)->next->prev = (node)->prev;                                                     \
        (node)->prev = (node)->next = NULL;                                                        \
    } while (0)

/* Puts 'node' last in the queue from 'head' to 'tail'. */
#define SEATD_QUEUE_APPEND(head, tail, node)                                                       \
    do {                                                                                           \
        (node)->next = NULL;                                                                       \
        if ((tail) != NULL)                                                                        \
            (tail)->next = (node);                                                                 \
        else                                                                                       \
            (head) = (node);                                                                       \
        (tail) = (node);                                                                           \
    } while (0)

#endif
