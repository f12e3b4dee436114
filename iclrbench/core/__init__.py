"""The contract and the run-time every paper builds on: records (`Paper`, `Param`, `Claim`, `Result`), the registry
(card index), the runtime (seeds, devices, threads, timers, progress), the experiment harness and the settings.

The names below are re-exported so that `from iclrbench.core import Claim, Paper, ...` keeps working; each lives in
the submodule that says what it is. Nothing here imports torch, scikit-learn or plotly."""
from .records import *    # noqa: F401,F403
from .records import __all__ as _records
from .runtime import *    # noqa: F401,F403
from .runtime import __all__ as _runtime
from .registry import *   # noqa: F401,F403
from .registry import __all__ as _registry

__all__ = [*_records, *_runtime, *_registry]
