# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The fleet agent over TLS, as an ACL user (`xdp-rl fleet --tls --tls-ca ...
--tls-cert ... --tls-key ... --user NAME --password-file PATH`): two
limiters share one limit through a Redis that speaks only TLS, asks for
client certificates and has its default user off; and what an operator
sees when the CA, the name, the password or the port is wrong: the agent
says what failed, counts errors, and each limiter holds its local limit.
Certificates are made with the openssl command into the Fleet's temporary
directory; Debian's redis-server (built with TLS) runs in the Redis
namespace of test_fleet.py's Fleet; every address in 198.18.0.0/15."""
import os
import time

import pytest

from rlbed import run
from test_fleet import (AGENT_WAIT_S, LIMIT, REDIS_ADDR, SRC, WINDOW_S, Fleet, check_bound,
                        need)

TLS_PORT = 6379
PLAIN_PORT = 6380
USER, PASSWORD = "fleet", "s3cret-acl"


def openssl(*args):
    r = run(["openssl", *[str(a) for a in args]])
    assert r.returncode == 0, r.stderr


def make_certs(d):
    """A CA, a server certificate for REDIS_ADDR (an IP SAN) and a client
    certificate it signed; a second CA that signed neither."""
    p = {n: os.path.join(d, n) for n in ("ca.key", "ca.crt", "other-ca.key", "other-ca.crt",
                                          "server.key", "server.csr", "server.crt",
                                          "client.key", "client.csr", "client.crt", "san.ext")}
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-keyout", p[f"{ca}.key"], "-out", p[f"{ca}.crt"], "-subj", f"/CN=xdp-rl {ca}")
    with open(p["san.ext"], "w") as f:
        f.write(f"subjectAltName=IP:{REDIS_ADDR}\n")
    for who, ext in (("server", ["-extfile", p["san.ext"]]), ("client", [])):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p[f"{who}.key"],
                "-out", p[f"{who}.csr"], "-subj", f"/CN=xdp-rl {who}")
        openssl("x509", "-req", "-in", p[f"{who}.csr"], "-CA", p["ca.crt"],
                "-CAkey", p["ca.key"], "-CAcreateserial", "-days", "2",
                "-out", p[f"{who}.crt"], *ext)
    return p


class TlsFleet(Fleet):
    """A Fleet whose Redis on TLS_PORT speaks TLS and knows only the ACL user."""

    certs = None

    def redis_args(self, port):
        if port != TLS_PORT:
            return []
        c = self.certs
        return ["--tls", "--cacert", c["ca.crt"], "--cert", c["client.crt"],
                "--key", c["client.key"], "--user", USER, "--pass", PASSWORD,
                "--no-auth-warning"]

    def cli(self, *args, port=TLS_PORT, password=None):
        return super().cli(*self.redis_args(port), *args, port=port, password=password)

    def wait_port(self, port, p, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            assert p.poll() is None, f"{p.args} exited {p.returncode}: {self.log(p)}"
            r = run(["ip", "netns", "exec", self.ns, "redis-cli", "-h", REDIS_ADDR, "-p",
                     str(port), *self.redis_args(port), "ping"])
            if "PONG" in r.stdout:
                return
            time.sleep(0.1)
        raise AssertionError(f"nothing answers on {REDIS_ADDR}:{port}: {self.log(p)}")

    def tls_redis(self):
        """redis-server with TLS only, client certificates asked for, the default user off."""
        self.certs = make_certs(self.tmp)
        c = self.certs
        d = os.path.join(self.tmp, "redis-tls")
        os.makedirs(d, exist_ok=True)
        p = self.spawn(["redis-server", "--bind", REDIS_ADDR, "--port", 0,
                        "--tls-port", TLS_PORT, "--tls-cert-file", c["server.crt"],
                        "--tls-key-file", c["server.key"], "--tls-ca-cert-file", c["ca.crt"],
                        "--tls-auth-clients", "yes",
                        "--user", "default", "off",
                        "--user", USER, "on", f">{PASSWORD}", "~xdp-rl:*", "+@all",
                        "--save", "", "--appendonly", "no", "--dir", d,
                        "--loglevel", "warning", "--daemonize", "no"], "redis-tls")
        self.wait_port(TLS_PORT, p)
        return p

    def password_file(self, password=PASSWORD):
        pw = os.path.join(self.tmp, "pw")
        with open(pw, "w") as f:
            f.write(password + "\n")
        os.chmod(pw, 0o600)
        return pw

    def tls_opts(self, ca="ca.crt", client=True, user=USER, pw=None):
        c = self.certs
        opts = ["--tls", "--tls-ca", c[ca]]
        if client:
            opts += ["--tls-cert", c["client.crt"], "--tls-key", c["client.key"]]
        if user:
            opts += ["--user", user, "--password-file", pw or self.password_file()]
        return opts

    def wait_errors(self, i):
        """The agent's state, once it runs and counts errors (bounded by AGENT_WAIT_S)."""
        end = time.time() + AGENT_WAIT_S
        st = None
        while time.time() < end:
            st = self.fleet_stats(i) or {}
            if st.get("running") and st.get("sync_errors") and st.get("state") == "retrying":
                return st
            time.sleep(0.1)
        raise AssertionError(f"agent {i} counts no errors: {st}\n{self.agent_log(i)}")


@pytest.fixture
def fleet(privileged):
    need("redis-server")
    need("openssl")
    f = TlsFleet()
    try:
        yield f.start()
    finally:
        f.down()


def test_tls_and_an_acl_user(fleet):
    """Two agents over TLS, with client certificates, as an ACL user: the
    fleet's bound holds, and the keys are where the user may write."""
    fleet.load("--aligned")
    fleet.tls_redis()
    for i in range(2):
        fleet.start_agent(i, *fleet.tls_opts(), redis=f"{REDIS_ADDR}:{TLS_PORT}")
    for i in range(2):
        fleet.wait_syncing(i)
    for _ in range(2):
        passed, rates, number = fleet.burst()
        check_bound(passed, rates, "over TLS, as an ACL user")
        key = f"xdp-rl:{fleet.tag}:all:{WINDOW_S}s:{SRC}/32:{number}"
        keys = fleet.keys()
        assert key in keys, (key, keys)
        assert sum(passed) <= keys[key] <= sum(passed) + 2, (keys[key], passed)
    st = fleet.fleet_stats(0)
    assert st["sync_errors"] == 0 and st["bytes_sent"] > 0 and st["bytes_received"] > 0, st
    for i in range(2):
        assert fleet.stop_agent(i) == 0, fleet.agent_log(i)
        assert PASSWORD not in fleet.agent_log(i)


def check_failure(fleet, opts, says, redis=f"{REDIS_ADDR}:{TLS_PORT}"):
    """An agent that cannot get through: it says @says (each), counts errors,
    and the limiters hold their local limits."""
    fleet.start_agent(0, *opts, redis=redis)
    fleet.wait_errors(0)
    passed, _, _ = fleet.burst()
    assert passed == [LIMIT, LIMIT], passed
    log = fleet.agent_log(0)
    for s in says:
        assert s in log, (s, log)
    assert fleet.stop_agent(0) == 0, log
    os.truncate(os.path.join(fleet.tmp, "agent0.log"), 0)


def test_tls_failures(fleet):
    """A wrong CA, a wrong name, no client certificate, a wrong password, a
    plain port: each said with a hint, counted, local limits kept."""
    fleet.load("--aligned")
    fleet.tls_redis()
    fleet.redis(port=PLAIN_PORT)
    check_failure(fleet, fleet.tls_opts(ca="other-ca.crt"),
                  ["certificate verify failed", "--tls-ca", "local limits"])
    check_failure(fleet, fleet.tls_opts() + ["--tls-server-name", "redis.example"],
                  ["certificate verify failed: hostname mismatch", "--tls-server-name"])
    check_failure(fleet, fleet.tls_opts(client=False), ["certificate required",
                                                        "--tls-cert"])
    check_failure(fleet, fleet.tls_opts(pw=fleet.password_file("wrong")),
                  ["WRONGPASS", "check --user"])
    check_failure(fleet, fleet.tls_opts(user=None), ["NOAUTH", "--password-file"])
    check_failure(fleet, fleet.tls_opts(), ["TLS handshake", "tls-port"],
                  redis=f"{REDIS_ADDR}:{PLAIN_PORT}")


def test_tls_usage(fleet):
    """What the options refuse, before anything runs."""
    fleet.load("--aligned")
    for opts, says in (
            (["--user", USER], "--user needs --password-file"),
            (["--tls-ca", "/nonexistent"], "give --tls too"),
            (["--tls", "--tls-cert", "/nonexistent"], "both --tls-cert FILE and --tls-key"),
            (["--user", "a b", "--password-file", "/nonexistent"], "invalid --user")):
        r = run([str(a) for a in fleet.agent_argv(0, *opts)])
        assert r.returncode == 2 and says in r.stderr, (opts, r)
    r = run([str(a) for a in fleet.agent_argv(0, "--tls", "--tls-ca", "/nonexistent")])
    assert r.returncode == 1 and "No such file" in r.stderr and "--tls-ca" in r.stderr, r
