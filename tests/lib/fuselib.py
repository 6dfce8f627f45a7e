"""A FUSE filesystem of one read-only file, spoken over /dev/fuse by hand
(the kernel's protocol 7.22: INIT, LOOKUP, GETATTR, OPEN, READ, RELEASE,
FLUSH, STATFS; anything else is ENOSYS), for the tests that need a file on
a filesystem the agent does not send from itself (FUSE: its bytes come
through the helper). Root only; FuseFile raises Unavailable with the
reason when it cannot mount.

    with FuseFile(data, name="f.bin") as f:
        f.path      # the file, under a mount of its own

With gate (a threading.Event), a READ is answered only once it is set: a
reader of the file is held in the kernel for as long as the test wants.
"""
import ctypes
import errno
import os
import struct
import tempfile
import threading
import time

from testlib import TIMEOUT

INIT, LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE, FLUSH, BATCH_FORGET = 26, 1, 2, 3, 14, 15, 17, 18, 25, 42
NO_REPLY = {FORGET, BATCH_FORGET, 36}  # 36: INTERRUPT
IN_HEAD = struct.Struct("<IIQQIIII")   # len, opcode, unique, nodeid, uid, gid, pid, padding
OUT_HEAD = struct.Struct("<IiQ")       # len, error, unique
ROOT, FILE = 1, 2


class Unavailable(Exception):
    pass


class FuseFile:
    def __init__(self, data, name="file.bin", mtime=None, gate=None):
        self.data, self.name, self.gate = bytes(data), name.encode(), gate
        self.reads = threading.Event()  # set at the first READ
        self.mtime = int(time.time()) if mtime is None else mtime
        self.mnt = tempfile.mkdtemp(prefix="sbx-fuse-")
        os.chmod(self.mnt, 0o755)
        self.path = os.path.join(self.mnt, name)
        try:
            self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            os.rmdir(self.mnt)
            raise Unavailable("cannot open /dev/fuse: %s" % e)
        libc = ctypes.CDLL(None, use_errno=True)
        opts = b"fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions" % self.fd
        if libc.mount(b"sbxfuse", self.mnt.encode(), b"fuse.sbx", 0, opts) != 0:
            err = ctypes.get_errno()
            os.close(self.fd)
            os.rmdir(self.mnt)
            raise Unavailable("cannot mount a FUSE filesystem: %s" % os.strerror(err))
        self.libc = libc
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _attr(self, node):
        if node == ROOT:
            mode, size, nlink = 0o40755, 0, 2
        else:
            mode, size, nlink = 0o100644, len(self.data), 1
        # ino, size, blocks, atime, mtime, ctime, their nsecs, mode, nlink, uid, gid, rdev, blksize, flags
        return struct.pack("<QQQQQQIIIIIIIIII", node, size, (size + 511) // 512, self.mtime, self.mtime,
                           self.mtime, 0, 0, 0, mode, nlink, 0, 0, 0, 4096, 0)

    def _answer(self, op, node, body):
        """(error, reply body) of one request."""
        if op == INIT:
            return 0, struct.pack("<IIIIHHI", 7, 22, 0, 0, 16, 12, 4096)
        if op == LOOKUP:
            if node != ROOT or body.rstrip(b"\0") != self.name:
                return -errno.ENOENT, b""
            return 0, struct.pack("<QQQQII", FILE, 0, 1, 1, 0, 0) + self._attr(FILE)
        if op == GETATTR:
            return 0, struct.pack("<QII", 1, 0, 0) + self._attr(node)
        if op == OPEN:
            return 0, struct.pack("<QII", 1, 0, 0)
        if op == READ:
            self.reads.set()
            if self.gate is not None:
                self.gate.wait(TIMEOUT)
            _, off, size = struct.unpack_from("<QQI", body)
            return 0, self.data[off:off + size]
        if op in (RELEASE, FLUSH):
            return 0, b""
        if op == STATFS:
            return 0, struct.pack("<QQQQQIIII24x", 1, 0, 0, 2, 0, 4096, 255, 4096, 0)
        return -errno.ENOSYS, b""

    def _serve(self):
        while True:
            try:
                req = os.read(self.fd, 1 << 20)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.ENOENT):
                    continue
                return  # ENODEV: unmounted
            if not req:
                return
            _, op, unique, node, _, _, _, _ = IN_HEAD.unpack_from(req)
            if op in NO_REPLY:
                continue
            err, out = self._answer(op, node, req[IN_HEAD.size:])
            try:
                os.write(self.fd, OUT_HEAD.pack(OUT_HEAD.size + len(out), err, unique) + out)
            except OSError:
                pass  # the request was interrupted

    def close(self):
        if self.gate is not None:
            self.gate.set()
        self.libc.umount2(self.mnt.encode(), 2)  # MNT_DETACH
        os.close(self.fd)
        self.thread.join(TIMEOUT)
        os.rmdir(self.mnt)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
