"""A llama.cpp that offloads to this machine's NVIDIA GPU, for an install that cannot pick one: a Space's pip
builds llama-cpp-python from PyPI's source without CUDA, and pip cannot choose a wheel by the GPU present.

One job: decide which of llama-cpp-python's prebuilt CUDA wheels fits this machine (`choose_wheel`, from the
driver's CUDA version, the platform and the llama-cpp-python version installed), and, where SEARCHBOX_GPU_BUILD
allows, install it once beside the environment and use it (`prepare`), all before llama_cpp is first imported.

Why beside and not over the installed build: the CUDA wheel is installed with `pip --target` into a folder in the
cache (persistent storage on a Space, so it is downloaded once) and checked in a child process before this
process puts it first on sys.path. The environment's CPU build is never touched, so a wheel that fails to load
leaves a working app, and no re-exec is needed. Its outcome is written beside it: one try per wheel.

The wheels (llama-cpp-python's README, "Pre-built Wheel"; its build-wheels-cuda workflow): CUDA 11.8, 12.1 to
12.5, 13.0 and 13.2, Linux x86_64, tagged py3-none (any Python) since 0.3.20 and cp310 to cp312 before. They
leave out the CUDA runtime (libcudart, libcublas), which PyPI's torch brings as nvidia-*-cu12 packages; any
that the environment lacks are installed into the same folder and loaded by path before llama_cpp.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchbox.settings import Settings

WHEEL_INDEX = "https://abetlen.github.io/llama-cpp-python/whl/{tag}"

# The indexes taken, in order of preference: the first whose CUDA the driver runs. CUDA 12's wheels cover compute
# capability 6.0 up and Hopper, PyPI's torch brings their runtime as nvidia-*-cu12, and a driver for CUDA 13 runs
# them too; so a CUDA 13 driver gets 12.5, and the cu130/cu132 indexes (7.5 up, another runtime) are not taken.
# 11.8 is for drivers older than 12.1.
INDEXES = ((12, 5), (12, 4), (12, 3), (12, 2), (12, 1), (11, 8))

# The CUDA libraries the wheels link to and leave out, by major: (soname, PyPI package, its folder under nvidia/).
RUNTIME = {
    12: (("libcudart.so.12", "nvidia-cuda-runtime-cu12", "cuda_runtime"),
         ("libcublasLt.so.12", "nvidia-cublas-cu12", "cublas"), ("libcublas.so.12", "nvidia-cublas-cu12", "cublas")),
    11: (("libcudart.so.11.0", "nvidia-cuda-runtime-cu11", "cuda_runtime"),
         ("libcublasLt.so.11", "nvidia-cublas-cu11", "cublas"), ("libcublas.so.11", "nvidia-cublas-cu11", "cublas")),
}
PY3_WHEELS_SINCE = (0, 3, 20)  # before it, cp310 to cp312 only
OLD_PYTHONS = ((3, 10), (3, 11), (3, 12))

_NVIDIA_SMI_TIMEOUT_S = 10.0
_PIP_TIMEOUT_S = 1800.0  # a CUDA wheel is some hundreds of MB
_OUTCOME = "outcome.json"


@dataclass(frozen=True)
class WheelChoice:
    """The CUDA wheel that fits, or why none does (tag empty)."""

    tag: str  # cu124, or "" when none fits
    version: str  # the llama-cpp-python version to install: the one installed, so the runtime stays the same
    why: str
    runtime_packages: tuple[str, ...] = ()  # CUDA runtime packages the environment lacks

    @property
    def url(self) -> str:
        return WHEEL_INDEX.format(tag=self.tag) if self.tag else ""

    def commands(self, target: str, *, python: str = sys.executable,
                 default_index: str | None = None) -> list[list[str]]:
        """The pip commands that install the wheel (and any runtime package missing) into `target`. The wheel
        comes from its index alone, binary only: where the index lacks the version pip fails, rather than
        building PyPI's source for the CPU as `--extra-index-url` would. `default_index`: where the runtime
        packages come from (pip's own configuration when None)."""
        base = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--target", target,
                "--no-deps", "--only-binary=:all:"]
        commands = [base + ["--index-url", self.url, f"llama-cpp-python=={self.version}"]]
        if self.runtime_packages:
            index = ["--index-url", default_index] if default_index else []
            commands.append(base + ["--upgrade"] + index + list(self.runtime_packages))
        return commands

    def command_line(self, target: str = "DIR") -> str:
        return " && ".join(" ".join(_quote(a) for a in c) for c in self.commands(target, python="python"))


def driver_cuda(nvidia_smi_output: str) -> tuple[int, int] | None:
    """The highest CUDA version the driver runs, from plain `nvidia-smi`'s header ("CUDA Version: 12.4"); None
    without one (no nvidia-smi, no driver, no GPU)."""
    found = re.search(r"CUDA Version\s*:\s*(\d+)\.(\d+)", nvidia_smi_output)
    return (int(found.group(1)), int(found.group(2))) if found else None


def choose_wheel(cuda: tuple[int, int] | None, version: str, *, python: tuple[int, int] = sys.version_info[:2],
                 system: str = sys.platform, machine: str = platform.machine(),
                 runtime_found: Sequence[str] = ()) -> WheelChoice:
    """The newest index whose CUDA the driver runs, CUDA 12 first; `runtime_found`: the sonames of the CUDA
    runtime the environment already has (`runtime_in`)."""
    if system != "linux" or machine != "x86_64":
        return WheelChoice("", version, f"the CUDA wheels are built for Linux x86_64, this is {system} {machine}")
    if not version:
        return WheelChoice("", version, "llama-cpp-python is not installed, so no version to match")
    if _version_tuple(version) < PY3_WHEELS_SINCE and python not in OLD_PYTHONS:
        return WheelChoice("", version, f"llama-cpp-python {version}'s CUDA wheels are for Python 3.10 to 3.12, "
                           f"this is {python[0]}.{python[1]} (0.3.20 and later fit any Python)")
    if cuda is None:
        return WheelChoice("", version, "no NVIDIA driver answers (nvidia-smi gives no CUDA version)")
    for major, minor in INDEXES:
        if (major, minor) <= cuda:
            missing = tuple(dict.fromkeys(pkg for soname, pkg, _ in RUNTIME[major] if soname not in runtime_found))
            return WheelChoice(f"cu{major}{minor}", version, f"the driver runs CUDA {cuda[0]}.{cuda[1]}, so the "
                               f"CUDA {major}.{minor} wheels", missing)
    return WheelChoice("", version, f"the driver runs CUDA {cuda[0]}.{cuda[1]}, older than every wheel (11.8 "
                       "and up): update the driver")


def runtime_in(folders: Sequence[str]) -> dict[str, str]:
    """The CUDA runtime libraries found in these site-packages folders' nvidia/*/lib: soname -> path."""
    found: dict[str, str] = {}
    for folder in folders:
        for sonames in RUNTIME.values():
            for soname, _, sub in sonames:
                path = Path(folder, "nvidia", sub, "lib", soname)
                if soname not in found and path.is_file():
                    found[soname] = str(path)
    return found


@dataclass
class Prepared:
    """What `prepare` did, said for the log (and the doctor's report)."""

    state: str  # off, not-needed, none-fits, not-wanted, using, installed, failed
    lines: list[str] = field(default_factory=list)
    loud: bool = False  # a warning: the GPU stays unused


def cuda_backend_installed(paths: Sequence[str] | None = None) -> bool:
    """Whether the llama_cpp that would be imported has llama.cpp's CUDA backend, found without importing it
    (an import loads the build, and a process cannot load another one after)."""
    spec = importlib.util.find_spec("llama_cpp") if paths is None else \
        importlib.machinery.PathFinder.find_spec("llama_cpp", list(paths))
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(any(Path(folder, "lib").glob("libggml-cuda.so*")) for folder in spec.submodule_search_locations)


def wheel_folder(settings: Settings, choice: WheelChoice) -> Path:
    return Path(settings.cache_dir, "llama-cpp-cuda", f"{choice.version}-{choice.tag}")


def plan(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """What this machine gets, looking only: the wheel that fits and what `prepare` does with it (the doctor's
    line)."""
    env = os.environ if env is None else env
    if cuda_backend_installed():
        return "not needed: the llama-cpp-python in use has llama.cpp's CUDA backend"
    choice = choose_here()
    if not choice.tag:
        return f"none fits: {choice.why}"
    folder = wheel_folder(settings, choice)
    outcome = _read_outcome(folder)
    said = f"{choice.tag} ({choice.why}): {choice.command_line()}"
    if outcome.get("outcome") == "ready":
        return f"{said}; installed at {folder / 'site'}, used at start-up"
    if outcome:
        return f"{said}; it failed once and is not tried again (delete {folder} to retry): {outcome.get('detail', '')}"
    if not _wanted(settings, env):
        return f"{said}; not installed (SEARCHBOX_GPU_BUILD={settings.searchbox_gpu_build}" + \
            (" installs only on a Space)" if settings.searchbox_gpu_build == "auto" else ")")
    return f"{said}; the app installs it at its next start"


def choose_here() -> WheelChoice:
    """`choose_wheel` for this machine: its driver, its llama-cpp-python, the CUDA runtime it has."""
    output = _nvidia_smi_plain()
    try:
        version = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    return choose_wheel(driver_cuda(output), version, runtime_found=[*runtime_in(sys.path), *_system_runtime()])


def prepare(settings: Settings, env: Mapping[str, str] | None = None, *,
            default_index: str | None = None) -> Prepared:
    """At start-up, before llama_cpp is imported: where an NVIDIA GPU is present and the installed llama.cpp has
    no CUDA backend, use the CUDA wheel installed before, or install it (once) where SEARCHBOX_GPU_BUILD allows."""
    env = os.environ if env is None else env
    if settings.searchbox_gpu_build == "off":
        return Prepared("off")
    if cuda_backend_installed():
        return Prepared("not-needed")
    if driver_cuda(_nvidia_smi_plain()) is None:
        return Prepared("not-needed")  # no NVIDIA GPU (or no driver): nothing a CUDA wheel could use
    choice = choose_here()
    if not choice.tag:
        return Prepared("none-fits", [f"no prebuilt CUDA wheel of llama.cpp fits this machine: {choice.why}"], True)
    folder = wheel_folder(settings, choice)
    outcome = _read_outcome(folder)
    if outcome.get("outcome") == "ready":
        use(folder / "site")
        return Prepared("using", [f"llama.cpp: the CUDA wheel {choice.tag} installed before, at {folder / 'site'}"])
    if outcome:
        return Prepared("failed", [f"the CUDA wheel {choice.tag} of llama-cpp-python {choice.version} failed before "
                                   f"and is not tried again (delete {folder} to retry): {outcome.get('detail', '')}"],
                        True)
    if not _wanted(settings, env):
        return Prepared("not-wanted")  # not ours to install here: the GPU notice says how
    return install(choice, folder, default_index=default_index)


def install(choice: WheelChoice, folder: Path, *, default_index: str | None = None,
            env: Mapping[str, str] | None = None) -> Prepared:
    """Install the wheel into `folder`/site, check in a child process that it loads and offloads, and use it;
    the outcome is written in `folder` either way, so it is tried once."""
    site = folder / "site"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lines = [f"installing llama-cpp-python {choice.version}'s CUDA wheel ({choice.tag}: {choice.why}) into {site}"]
    for command in choice.commands(str(site), default_index=default_index):
        print(f"searchbox: {' '.join(command)}", file=sys.stderr, flush=True)
        try:
            done = subprocess.run(command, stdout=sys.stderr, stderr=subprocess.STDOUT, timeout=_PIP_TIMEOUT_S,
                                  check=False, env=None if env is None else dict(env))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _failed(folder, choice, lines, f"pip did not finish: {type(exc).__name__}: {exc}")
        if done.returncode != 0:
            return _failed(folder, choice, lines, f"pip exited with {done.returncode} (its output is above in the "
                           f"log; the index may lack {choice.version}: pip index versions llama-cpp-python "
                           f"--index-url {choice.url})")
    probe = check_loads(site, env=env)
    if probe:
        return _failed(folder, choice, lines, f"installed, but it does not offload: {probe}")
    _write_outcome(folder, {"outcome": "ready", "tag": choice.tag, "version": choice.version})
    use(site)
    return Prepared("installed", lines + [f"llama.cpp: the CUDA wheel {choice.tag} is installed and used"])


def check_loads(site: Path, env: Mapping[str, str] | None = None) -> str:
    """Why the llama_cpp in `site` cannot offload, from a child process (empty when it can)."""
    code = ("import sys, json; from searchbox.llm.llamacpp.gpu_build import use; use(sys.argv[1]); "
            "import llama_cpp; print(json.dumps([llama_cpp.__file__, bool(llama_cpp.llama_supports_gpu_offload())]))")
    child = dict(os.environ if env is None else env)
    child["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this searchbox, wherever it runs from
    try:
        done = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True, timeout=120,
                              check=False, env=child)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:300]
    loaded, offload = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(loaded).is_relative_to(site):
        return f"the child imported {loaded}, not the wheel in {site}"
    return "" if offload else "llama_supports_gpu_offload() is false (no CUDA device it can use)"


def use(site: str | os.PathLike) -> None:
    """Put the wheel's folder first for this process and its children, and load the CUDA runtime it needs by
    path (the wheel's own lookup does not search site-packages' nvidia/ folders)."""
    site = str(site)
    if site not in sys.path:
        sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = os.pathsep.join([site] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p and p != site])
    for path in runtime_in([site] + [p for p in sys.path if p != site]).values():
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # later, libggml-cuda's needs are met by these sonames


def _wanted(settings: Settings, env: Mapping[str, str]) -> bool:
    return settings.searchbox_gpu_build == "on" or bool(env.get("SPACE_ID"))


def _failed(folder: Path, choice: WheelChoice, lines: list[str], detail: str) -> Prepared:
    _write_outcome(folder, {"outcome": "failed", "tag": choice.tag, "version": choice.version, "detail": detail})
    shutil.rmtree(folder / "site", ignore_errors=True)
    return Prepared("failed", lines + [f"the CUDA wheel {choice.tag} of llama-cpp-python {choice.version} could not "
                                       f"be used, llama.cpp stays on the CPU: {detail}"], True)


def _read_outcome(folder: Path) -> dict:
    try:
        return json.loads((folder / _OUTCOME).read_text())
    except (OSError, ValueError):
        return {}


def _write_outcome(folder: Path, outcome: dict) -> None:
    (folder / _OUTCOME).write_text(json.dumps(outcome))


def _system_runtime() -> list[str]:
    """The CUDA runtime sonames the system's loader finds (a CUDA image's /usr/local/cuda, in ldconfig's cache)."""
    names = (ctypes.util.find_library(name) for name in ("cudart", "cublasLt", "cublas"))
    return [name for name in names if name]


def _nvidia_smi_plain() -> str:
    program = shutil.which("nvidia-smi")
    if program is None:
        return ""
    try:
        done = subprocess.run([program], capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def _quote(arg: str) -> str:
    return f'"{arg}"' if any(c in arg for c in " =<>*") and not arg.startswith("-") else arg
