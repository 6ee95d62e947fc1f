# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Fixtures for the xdp-rl end-to-end tests: the binary, root, and testbeds
that are always torn down, whatever the test did."""
import os

import pytest

import rlbed


@pytest.fixture(scope="session")
def xdp_rl():
    """The built binary: a missing one is an error, not a skip (run `make`)."""
    if not os.access(rlbed.BIN, os.X_OK):
        pytest.fail(f"{rlbed.BIN} is missing: run 'make' first")
    return rlbed.BIN


@pytest.fixture(scope="session")
def privileged(xdp_rl):
    why = rlbed.privilege_problem()
    if why:
        pytest.skip(why)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "both_tables: run the test on each table (load --table buckets, lru), "
        "not only on the one XDP_RL_E2E_TABLE names")
    config.addinivalue_line(
        "markers", "table(name, ...): run the test on the tables named only (a test "
        "of what one table does of its own)")
    config.addinivalue_line(
        "markers", "kernels: in the subset make test-kernels runs in each kernel of the "
        "matrix (tests/kernels): load, packets through a limit, set, rules, reset, "
        "charge, unload")
    config.addinivalue_line(
        "markers", "kernels_one_table: of the kernels subset, what does not depend on the "
        "source table (the dispatcher, a load killed at each step): make test-kernels runs "
        "it on one table of a kernel, to keep a TCG guest within its time")


def pytest_generate_tests(metafunc):
    """A test marked both_tables (or in a module so marked) takes the bed's
    table as a parameter, buckets and lru; one marked table(...) the tables
    it names; the others run on rlbed.TABLE."""
    if "table" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("table")
    both = metafunc.definition.get_closest_marker("both_tables") is not None
    tables = only.args if only else rlbed.TABLES if both else (rlbed.TABLE,)
    assert set(tables) <= set(rlbed.TABLES), tables
    metafunc.parametrize("table", tables, scope="function")


def _bed(request, table=None):
    bed = rlbed.Bed(table)
    # Registered before the namespaces exist: a half-made bed is removed too.
    request.addfinalizer(bed.down)
    return bed.start()


@pytest.fixture
def bed(privileged, table, request):
    """A fresh sender/receiver namespace pair, removed after the test; its
    limiters are loaded with @table."""
    return _bed(request, table)


@pytest.fixture(scope="module")
def module_bed(privileged, request):
    """One namespace pair shared by a module's tests, removed after them."""
    return _bed(request)
