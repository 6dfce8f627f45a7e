/*
 * event.h - the messages process.Process sends (README "sandbox-agent
 * serve": the process API), written as protobuf's JSON mapping with
 * lowerCamelCase names: the events of a Start or Connect stream
 * ({"event": {"start" | "data" | "keepalive" | "end": ...}}) and the List
 * response. Pure writers into a bounded buffer: no I/O.
 */
#ifndef SA_API_PROCESS_EVENT_H
#define SA_API_PROCESS_EVENT_H

#include "agent/core/buf.h"
#include "agent/proc/proc.h"

#include <stddef.h>
#include <stdint.h>

/* Output bytes per data event: its base64 and JSON stay well under the
 * connection's queue bounds. */
#define PROCESS_EVENT_DATA_MAX (48u * 1024u)

/* Each appends one message to b; returns 0, or -1 past b's bound. */
int process_event_start(struct buf *b, pid_t pid);
/* {"event": {"data": {"stdout": b64}}}, with "offset": N beside "event"
 * when with_offset (a replaying Connect: the absolute offset of p[0]). */
int process_event_data(struct buf *b, enum proc_chan ch, const char *p, size_t n, int with_offset,
                uint64_t offset);
/* The same message written in place (a connection's queue): its length,
 * then exactly that many bytes at d. */
size_t process_event_data_len(enum proc_chan ch, size_t n, int with_offset, uint64_t offset);
void process_event_data_put(char *d, enum proc_chan ch, const char *p, size_t n, int with_offset,
                            uint64_t offset);
int process_event_keepalive(struct buf *b);
int process_event_end(struct buf *b, const struct proc_end *e);
/* {"processes": [...]}: every running process of t, in start order. */
int process_event_list(struct buf *b, struct proc_table *t);

#endif
