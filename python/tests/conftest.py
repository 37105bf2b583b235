import os
import pathlib
import shutil

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PIPELINES = HERE / "pipelines"


def pipeline(name):
    return str(PIPELINES / name)


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
