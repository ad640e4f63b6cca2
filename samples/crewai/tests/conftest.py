"""Before crewai is first imported: a home of its own for the test process (crewai writes there
at import), the sandbox child's home inside it (SANDBOX_HOME), telemetry and tracing off."""

import atexit
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator

_home = tempfile.mkdtemp(prefix="crewai-sample-home-")
atexit.register(shutil.rmtree, _home, ignore_errors=True)
os.environ["HOME"] = _home
os.environ["SANDBOX_HOME"] = os.path.join(_home, "child")
os.makedirs(os.environ["SANDBOX_HOME"])
for _name, _value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
}.items():
    os.environ[_name] = _value

with warnings.catch_warnings():
    # importing crewai warns "Cannot set an attribute on 'crewai.rag' for child module
    # 'embeddings'" (an ImportWarning; an error under filterwarnings=error)
    warnings.simplefilter("ignore", ImportWarning)
    import crewai  # noqa: F401


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def crewai_deprecations() -> Iterator[None]:
    """crewai reads its own deprecated fields (``function_calling_llm``) when it builds an Agent
    or a Crew: DeprecationWarnings of crewai's modules, errors under ``filterwarnings=error``.
    Only those are ignored."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"crewai(\.|$)")
        yield
