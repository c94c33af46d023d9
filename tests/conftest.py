"""Every test runs with its own config, data and policy locations."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pegboard.testing import PegboardEnv

# Test modules import fixtures and helpers from each other by module name
# (test_web_support, test_permissions_plugin), wherever their folder sits in
# the tree that mirrors the code: every test folder is importable, as tests/
# alone was when it was flat. Module names stay unique (pytest insists).
for _folder in sorted({path.parent for path in Path(__file__).parent.rglob("test_*.py")}):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))


@pytest.fixture(autouse=True)
def isolated_env(pegboard_env: PegboardEnv) -> Path:
    """pegboard.testing's isolated environment for every test (``XDG_*``
    under the test's home, every ``PEGBOARD_*`` variable unset, the policy
    file the test's own); the home folder, as tests have long taken it."""
    return pegboard_env.home


@pytest.fixture
def trust_project() -> Callable[[Path], Path]:
    """``trust_project(root)`` trusts a project folder as ``pegboard trust`` does
    (for a test whose project files are meant to apply; see tests/_trusted.py)."""
    from _trusted import trust

    return trust


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, as pegboard does."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    """Every test's store pools are closed after it (only if it used one)."""
    yield
    store = sys.modules.get("pegboard._services.store")
    if store is not None:
        store.dispose_all()


POSTGRES_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A PostgreSQL database of this test run's own, dropped at the end.

    Skipped when no server answers at 127.0.0.1:5432, except under CI
    (``CI`` set), where .ci/run has started one: there it fails."""
    import uuid

    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg is not installed")
    name = f"pegboard_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                                connect_timeout=5)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at 127.0.0.1:5432 is not reachable: {exc}")
        pytest.skip(f"PostgreSQL at 127.0.0.1:5432 is not reachable: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{POSTGRES_SERVER}/{name}"
        finally:
            store = sys.modules.get("pegboard._services.store")
            if store is not None:
                store.dispose_all()
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, isolated_env: Path) -> Iterator[str]:
    """A fresh store on each backend, named in the user's config: SQLite in
    the test's data dir; PostgreSQL in a schema of its own in this run's
    database (dropped after the test)."""
    if request.param == "sqlite":
        url = f"sqlite:///{isolated_env / 'store.db'}"
        write_user_config(isolated_env, f'[store]\nurl = "{url}"\n')
        yield url
        return
    import uuid

    import psycopg

    database = request.getfixturevalue("postgres_database")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    conninfo = f"host=127.0.0.1 port=5432 user=postgres dbname={database.rsplit('/', 1)[1]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{database}?options=-csearch_path%3D{schema}"
    write_user_config(isolated_env, f'[store]\nurl = "{url}"\n')
    yield url
    store = sys.modules.get("pegboard._services.store")
    if store is not None:
        store.dispose_all()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def write_user_config(home: Path, text: str) -> Path:
    """Append ``text`` to the test's user config.toml."""
    path = home / "config" / "pegboard" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return path


@pytest.fixture
def user_config(pegboard_env: PegboardEnv) -> Callable[[str], Path]:
    """``user_config(text)`` appends to the test's user config.toml (``PegboardEnv.user_config``)."""
    return pegboard_env.user_config
