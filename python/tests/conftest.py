import os
import pathlib
import shutil
import socket
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PIPELINES = HERE / "pipelines"


def pipeline(name):
    return str(PIPELINES / name)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now, for a test's server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, seconds=10):
    """Returns once a server accepts connections on 127.0.0.1:port (or after `seconds`)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.01)


def sluice_cli():
    """The `sluice` command line of a build in this repository, if any."""
    built = sorted(str(p) for pattern in ("build*/tools/sluice", "build*/*/tools/sluice") for p in REPO.glob(pattern))
    for candidate in [os.environ.get("SLUICE_CLI", "")] + built:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("sluice")


@pytest.fixture
def cli():
    path = sluice_cli()
    if not path:
        pytest.skip("no sluice command line built (build*/tools/sluice or SLUICE_CLI) to compare with")
    return path
