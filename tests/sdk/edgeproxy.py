"""tests/sdk/edgeproxy.py - the platform's edge proxy, for the port
forwarder's SDK test (test_sdk_forward.py): what E2B's proxy does for a
sandbox's PORT-ID.e2b.app host, with the host the SDK's debug mode gives
(`getHost(port)` is localhost:PORT): every connection to 127.0.0.1:PORT is
carried to TARGET:PORT, the sandbox's outward address, both ways, half-closes
passed on. Run in the client's network namespace; prints "ready".

    python3 edgeproxy.py PORT TARGET
"""
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            dst.sendall(d)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(c, target, port):
    try:
        up = socket.create_connection((target, port), timeout=10)
    except OSError:
        c.close()  # nothing listens there: the client sees the connection end
        return
    up.settimeout(None)
    t = threading.Thread(target=pump, args=(up, c), daemon=True)
    t.start()
    pump(c, up)
    t.join()
    c.close()
    up.close()


def main():
    port, target = int(sys.argv[1]), sys.argv[2]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(64)
    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c, target, port), daemon=True).start()


main()
