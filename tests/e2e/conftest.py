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


def _bed(request):
    bed = rlbed.Bed()
    # Registered before the namespaces exist: a half-made bed is removed too.
    request.addfinalizer(bed.down)
    return bed.start()


@pytest.fixture
def bed(privileged, request):
    """A fresh sender/receiver namespace pair, removed after the test."""
    return _bed(request)


@pytest.fixture(scope="module")
def module_bed(privileged, request):
    """One namespace pair shared by a module's tests, removed after them."""
    return _bed(request)
