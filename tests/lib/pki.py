"""A test PKI made with the `openssl` command: a root CA, an intermediate
below it, and the server certificates the https:// webhook tests serve (a
good chain for a host, another host's, an expired one, a self-signed one).
The CAs' keys and the signatures' hash are chosen (PKI(root=, inter=,
digest=)): ECDSA P-256 and SHA-256 by default; RSA and P-384 CAs and
SHA-384 signatures as public CAs make them.
Everything lives in one directory any user can read, so an agent run as
nobody can open the CA bundle.
"""
import os
import shutil
import subprocess
import tempfile

from testlib import TIMEOUT

KEYS = {"ec": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
        "p384": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"],
        "rsa": ["-newkey", "rsa:2048"]}


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise AssertionError("openssl %s: %s" % (args[0], r.stderr.decode(errors="replace")))


class PKI:
    """Root CA -> intermediate CA -> server certificates, in self.dir: the
    root's and the intermediate's keys of KEYS (inter: the root's kind), every
    signature with digest."""

    def __init__(self, root="ec", inter=None, digest="sha256"):
        self.dir = tempfile.mkdtemp(prefix="sa-pki-")
        os.chmod(self.dir, 0o755)
        self.n = 0
        self.inter = inter or root
        self.md = "-" + digest
        d = self.dir
        _openssl("req", "-x509", *KEYS[root], self.md, "-nodes", "-days", "2", "-subj", "/CN=sandbox-agent test root",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                 "-keyout", "root.key", "-out", "root.pem", cwd=d)
        self._sign_ca()
        self.ca_file = self.path("root.pem")  # the bundle: the root only

    def path(self, name):
        return os.path.join(self.dir, name)

    def _write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        os.chmod(self.path(name), 0o644)

    def _sign_ca(self):
        d = self.dir
        _openssl("req", *KEYS[self.inter], "-nodes", "-subj", "/CN=sandbox-agent test intermediate",
                 "-keyout", "int.key", "-out", "int.csr", cwd=d)
        self._write("int.ext", "basicConstraints=critical,CA:TRUE,pathlen:0\n"
                               "keyUsage=critical,keyCertSign,cRLSign\n")
        _openssl("x509", "-req", self.md, "-in", "int.csr", "-CA", "root.pem", "-CAkey", "root.key", "-set_serial", "2",
                 "-days", "2", "-extfile", "int.ext", "-out", "int.pem", cwd=d)

    def _ca_config(self, name):
        """An `openssl ca` setup under the intermediate: the one way to give a
        certificate dates in the past with OpenSSL 3.0."""
        db = self.path(name + ".db")
        os.mkdir(db)
        open(os.path.join(db, "index.txt"), "w").close()
        with open(os.path.join(db, "serial"), "w") as f:
            f.write("1000\n")
        self._write(name + ".cnf",
                    "[ca]\ndefault_ca = this\n[this]\ndir = %s\ndatabase = $dir/index.txt\n"
                    "serial = $dir/serial\nnew_certs_dir = $dir\ndefault_md = %s\npolicy = any\n"
                    "copy_extensions = copy\nunique_subject = no\n[any]\ncommonName = supplied\n" % (db, self.md[1:]))
        return self.path(name + ".cnf")

    def server(self, host, key="ec", expired=False):
        """(chain file: leaf + intermediate, key file) for host, issued by the
        intermediate; expired: valid for a day in 2020 only."""
        self.n += 1
        name = "srv%d" % self.n
        d = self.dir
        _openssl("req", *KEYS[key], "-nodes", "-subj", "/CN=%s" % host,
                 "-addext", "subjectAltName=DNS:%s" % host, "-addext", "basicConstraints=CA:FALSE",
                 "-addext", "extendedKeyUsage=serverAuth", "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
        if expired:
            _openssl("ca", "-batch", "-config", self._ca_config(name), "-cert", "int.pem", "-keyfile", "int.key",
                     "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-notext",
                     "-in", name + ".csr", "-out", name + ".pem", cwd=d)
        else:
            self._write(name + ".ext", "subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\n"
                                       "extendedKeyUsage=serverAuth\n" % host)
            _openssl("x509", "-req", self.md, "-in", name + ".csr", "-CA", "int.pem", "-CAkey", "int.key",
                     "-set_serial", str(100 + self.n), "-days", "1", "-extfile", name + ".ext",
                     "-out", name + ".pem", cwd=d)
        return self._chain(name)

    def self_signed(self, host):
        """(certificate, key) for host, signed by itself: in no bundle."""
        self.n += 1
        name = "self%d" % self.n
        _openssl("req", "-x509", *KEYS["ec"], "-nodes", "-days", "1", "-subj", "/CN=%s" % host,
                 "-addext", "subjectAltName=DNS:%s" % host, "-keyout", name + ".key", "-out", name + ".pem",
                 cwd=self.dir)
        return self.path(name + ".pem"), self.path(name + ".key")

    def _chain(self, name):
        with open(self.path(name + ".pem")) as leaf, open(self.path("int.pem")) as inter:
            self._write(name + ".chain", leaf.read() + inter.read())
        os.chmod(self.path(name + ".key"), 0o644)
        return self.path(name + ".chain"), self.path(name + ".key")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)
