"""A real local Ray cluster for the tests, in a process of its own.

`ray_cluster()` starts a Python process that starts a Ray cluster on this machine (`ray.init`:
2 CPUs, no dashboard, its files under a temporary folder of its own) and prints its address;
`planc ... --executor ray --ray-address ADDRESS` connects to it as to any cluster. Closing the
process's standard input makes it shut that cluster down, and only that one: `ray stop` would stop
every cluster on the machine. The cluster runs without token authentication, as a test cluster on
loopback can, so planc connects to it as to an open cluster.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager

HANG_GUARD_S = 300


@contextmanager
def ray_cluster():
    """Yield the address of a fresh local Ray cluster; shut it down afterwards."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        address = process.stdout.readline().strip()
        assert address, f"the Ray cluster did not start ({process.poll()})"
        yield address
    finally:
        process.stdin.close()
        process.wait(timeout=HANG_GUARD_S)
        process.stdout.close()


def _serve() -> None:
    import ray

    folder = tempfile.mkdtemp(prefix="planc-ray-", dir="/tmp")  # Ray's socket paths must stay short
    try:
        context = ray.init(num_cpus=2, include_dashboard=False, _temp_dir=folder, log_to_driver=False)
        print(context.address_info["gcs_address"], flush=True)
        sys.stdin.read()  # until the test closes it
        ray.shutdown()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
