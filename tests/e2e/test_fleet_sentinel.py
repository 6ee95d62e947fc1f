# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The fleet agent behind Redis Sentinel (`xdp-rl fleet --sentinel ...
--master NAME`): two limiters share one limit through the master the
sentinels name, and when that master dies and the sentinels promote its
replica, the agents follow: local limits hold meanwhile, errors are counted,
and they share again through the new master. Real redis-server processes (a
master, its replica, three sentinels) in the Redis namespace of
test_fleet.py's Fleet; every address in 198.18.0.0/15."""
import os
import time

import pytest

import rlbed
from test_fleet import (LIMIT, REDIS_ADDR, Fleet, check_bound, need)

MASTER_PORT, REPLICA_PORT = 6391, 6392
SENTINEL_PORTS = (26391, 26392, 26393)
NAME = "fleetm"
FAILOVER_S = 30      # for the sentinels to promote the replica (down-after 1 s)


@pytest.fixture
def fleet(privileged):
    need("redis-server")
    f = Fleet()
    f.sentinel_procs = []
    yield f.start()
    f.down()


def sentinels(fleet):
    """A master, its replica and three sentinels watching it (fleet.sentinel_procs)."""
    master = fleet.redis(MASTER_PORT)
    d = os.path.join(fleet.tmp, f"redis{REPLICA_PORT}")
    os.makedirs(d, exist_ok=True)
    replica = fleet.spawn(["redis-server", "--bind", REDIS_ADDR, "--port", REPLICA_PORT,
                           "--save", "", "--appendonly", "no", "--protected-mode", "no",
                           "--dir", d, "--replicaof", REDIS_ADDR, MASTER_PORT,
                           "--daemonize", "no"], f"redis{REPLICA_PORT}")
    fleet.wait_port(REPLICA_PORT, replica)
    for port in SENTINEL_PORTS:
        conf = os.path.join(fleet.tmp, f"sentinel{port}.conf")
        with open(conf, "w") as f:
            f.write(f"port {port}\nbind {REDIS_ADDR}\nprotected-mode no\n"
                    f"dir {fleet.tmp}\n"
                    f"sentinel monitor {NAME} {REDIS_ADDR} {MASTER_PORT} 2\n"
                    f"sentinel down-after-milliseconds {NAME} 1000\n"
                    f"sentinel failover-timeout {NAME} 5000\n")
        p = fleet.spawn(["redis-server", conf, "--sentinel"], f"sentinel{port}")
        fleet.wait_port(port, p)
        fleet.sentinel_procs.append(p)
    return master, replica


def master_port(fleet):
    out = fleet.cli("sentinel", "get-master-addr-by-name", NAME, port=SENTINEL_PORTS[0])
    return int(out.split()[1])


def test_sentinel_and_a_failover(fleet):
    master, replica = sentinels(fleet)
    fleet.load("--aligned")
    where = ",".join(f"{REDIS_ADDR}:{p}" for p in SENTINEL_PORTS)
    for i in range(2):
        fleet.start_agent(i, "--sentinel", where, "--master", NAME, redis=None)
    for i in range(2):
        fleet.wait_syncing(i)
    passed, rates, number = fleet.burst()
    check_bound(passed, rates, "through the master the sentinels name")
    keys = fleet.keys(port=MASTER_PORT)
    assert any(k.endswith(f":{number}") for k in keys), keys

    connects = [fleet.fleet_stats(i)["connects"] for i in range(2)]
    fleet.stop(master)
    end = time.time() + FAILOVER_S
    while master_port(fleet) != REPLICA_PORT:
        assert time.time() < end, "the sentinels did not promote the replica"
        time.sleep(0.2)
    for i in range(2):
        st = fleet.wait_syncing(i, since_connects=connects[i], timeout=FAILOVER_S)
        assert st["sync_errors"] > 0, st
    passed, rates, number = fleet.burst()
    check_bound(passed, rates, "after the failover, through the new master")
    keys = fleet.keys(port=REPLICA_PORT)
    assert any(k.endswith(f":{number}") for k in keys), keys
    log = fleet.agent_log(0)
    assert f"{REDIS_ADDR}:{REPLICA_PORT}" in log, log

    # Every sentinel and the new master gone: each limiter holds its own limit.
    errors = [fleet.fleet_stats(i)["sync_errors"] for i in range(2)]
    for p in fleet.sentinel_procs:
        fleet.stop(p)
    fleet.stop(replica)
    passed, _, _ = fleet.burst()
    assert passed == [LIMIT, LIMIT], f"no Redis, no sentinel: each its own limit: {passed}"
    for i in range(2):
        st = fleet.fleet_stats(i)
        assert fleet.agents[i].poll() is None, fleet.agent_log(i)
        assert st["state"] == "retrying" and st["sync_errors"] > errors[i], st
    assert "cannot find the master" in fleet.agent_log(0), fleet.agent_log(0)
