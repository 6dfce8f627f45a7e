"""burst.py ROOT: 20,000 files in 200 fresh nested directories under ROOT,
made as fast as Python can: ROOT/cNN/n0/.../n9 (c00 to c19), then 100 empty
files f000 to f099 in each of the ten levels, deepest first. The watch
test's burst (tests/integration/test_watch.py) and the watch bench's
(tests/bench/bench_watch.py)."""
import os
import sys

root = sys.argv[1]
for c in range(20):
    path = os.path.join(root, "c%02d" % c, *["n%d" % k for k in range(10)])
    os.makedirs(path)
    d = path
    for k in range(10):
        for i in range(100):
            open(os.path.join(d, "f%03d" % i), "wb").close()
        d = os.path.dirname(d)
