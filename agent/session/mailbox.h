/*
 * mailbox.h - following the mailbox file as the host appends to it.
 *
 * Owns the mailbox fd, the inotify fd watching the file's directory, and a
 * slow polling timer that covers what inotify cannot (the directory missing
 * at start, watch limits, filesystems without events). Hands each complete
 * line (or the head of a too-long one) to the caller through an lsplit
 * callback; the caller may pause reading from inside it (back-pressure), and
 * the unread bytes stay in the file until mailbox_resume.
 *
 * Rules: the file may not exist yet; existing content is read from offset 0;
 * a partial last line waits for its newline; a file replaced at the path (new
 * inode: rename over it, delete and re-create) is read from offset 0 after
 * what was left in the old one; a file that shrank below the read offset
 * (truncation) is read again from offset 0, the partial line dropped. A
 * truncation followed by growth past the old offset before the agent looks
 * cannot be told from an append; inotify makes that window small.
 */
#ifndef SA_SESSION_MAILBOX_H
#define SA_SESSION_MAILBOX_H

#include "agent/core/lsplit.h"

#include <ev.h>
#include <sys/types.h>

/* Fallback poll interval with inotify working, and without it. */
#define MAILBOX_POLL_SLOW 1.0
#define MAILBOX_POLL_FAST 0.1
#define MAILBOX_CHUNK (64 * 1024)
/* At most this much is read per loop turn; the rest after the loop has
 * served signals, timers and the handler (a huge or sparse file never holds
 * the loop for long). */
#define MAILBOX_SLICE (4 * 1024 * 1024)

struct mailbox {
    struct ev_loop *loop;
    char *path, *dir, *base;
    int fd;
    dev_t dev;
    ino_t ino;
    off_t off;
    /* The last bytes handed on (ending at off): if the file no longer holds
     * them there, it was truncated and refilled past off between two looks. */
    char tail[64];
    size_t tail_len;
    int ifd, wd;
    ev_io iw;
    ev_timer poll;
    ev_idle more;   /* active while a slice ended before EOF */
    struct lsplit split;
    lsplit_fn fn;
    void *ctx;
    int paused, stopped, in_check;
    int warned_open, warned_type;
    char *chunk; /* MAILBOX_CHUNK bytes */
};

/* Start following path; lines up to line_max bytes. Returns 0, or -1 with a
 * message in err (ERR_LEN bytes). Existing content is read on the first loop
 * iteration. */
int mailbox_start(struct mailbox *mb, struct ev_loop *loop, const char *path, size_t line_max,
                  lsplit_fn fn, void *ctx, char *err);
/* Stop reading until mailbox_resume (call from inside fn, then return 1). */
void mailbox_pause(struct mailbox *mb);
/* Read again, at once (what arrived meanwhile is in the file). */
void mailbox_resume(struct mailbox *mb);
/* Stop for good: watchers stopped, fds closed. Not from inside fn. */
void mailbox_stop(struct mailbox *mb);

#endif
