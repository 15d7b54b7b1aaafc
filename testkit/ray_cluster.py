"""Ray clusters for the tests and benches, on one machine, on loopback only.

Ray binds each node to the machine's interface address, not loopback, whatever it is told; in a
network namespace with nothing but `lo` it falls back to 127.0.0.1. So a cluster, its scripted model
servers and the sweep's driver all live in one process started inside such a namespace
(`unshare -rn`, as the bash sandbox does); where the host refuses a namespace (a CI runner without
user namespaces, itself a throwaway machine) the process runs as it is.

    facts = facts_of(run_in_loopback([sys.executable, "-m", "testkit.ray_scenarios", "equal", str(folder)], timeout=240))

The child prints one JSON object as its last line of stdout: what it saw, for the test to check.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_LO_UP = 'ip link set lo up && exec "$@"'


@functools.cache
def loopback_prefix() -> tuple[str, ...]:
    """The command prefix that runs a program in a namespace with only loopback; () where refused."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        return ()
    prefix = (unshare, "--map-root-user", "--net", "sh", "-c", _LO_UP, "sh")
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return prefix if probe.returncode == 0 else ()


def run_in_loopback(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run argv (in the namespace when allowed) with searchbox importable by Ray's workers too; raises
    with its output when it fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "RAY_ADDRESS": "", "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([*loopback_prefix(), *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{argv[1:]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


def facts_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON object a scenario prints as its last line."""
    return json.loads(done.stdout.strip().splitlines()[-1])
