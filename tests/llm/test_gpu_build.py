"""The CUDA wheel a GPU machine gets (searchbox/llm/llamacpp/gpu_build.py): which index fits the driver, Python and
llama-cpp-python version, from recorded `nvidia-smi` outputs; and the install, for real, with pip against
PEP 503 indexes served on loopback that hold wheels built here (a "CUDA" llama_cpp_python, a CPU one of the same
version on the other index, a runtime package), into a folder of the test's. No GPU here: the wheel's check that
it offloads is the test wheel's own answer."""

from __future__ import annotations

import functools
import http.server
import importlib.metadata
import json
import os
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchbox.llm.llamacpp import gpu_build
from searchbox.llm.llamacpp.gpu_build import choose_wheel, driver_cuda, prepare
from searchbox.settings import Settings

# Plain `nvidia-smi`'s first lines, as drivers print them.
SMI = {
    "12.2": "| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |",
    "12.4": "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15    CUDA Version: 12.4     |",
    "12.8": "| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06   CUDA Version: 12.8     |",
    "none": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.",
}
VERSION = importlib.metadata.version("llama-cpp-python")


@pytest.mark.parametrize("python", [(3, 10), (3, 11), (3, 12), (3, 13)])
@pytest.mark.parametrize(("smi", "tag"), [("12.2", "cu122"), ("12.4", "cu124"), ("12.8", "cu125"), ("none", "")])
def test_the_index_follows_the_drivers_cuda_on_any_python(smi: str, tag: str, python: tuple[int, int]) -> None:
    choice = choose_wheel(driver_cuda(SMI[smi]), "0.3.36", python=python, system="linux", machine="x86_64")
    assert choice.tag == tag
    if tag:
        assert choice.url == f"https://abetlen.github.io/llama-cpp-python/whl/{tag}"
        assert f"--index-url {choice.url}" in choice.command_line() and '"llama-cpp-python==0.3.36"' in \
            choice.command_line()
    else:
        assert "no NVIDIA driver answers" in choice.why


def test_what_no_wheel_fits_says_why() -> None:
    cuda = driver_cuda(SMI["12.4"])
    assert choose_wheel((13, 0), "0.3.36", system="linux", machine="x86_64").tag == "cu125"  # 12.x runs on 13
    assert choose_wheel((12, 0), "0.3.36", system="linux", machine="x86_64").tag == "cu118"
    assert "update the driver" in choose_wheel((11, 4), "0.3.36", system="linux", machine="x86_64").why
    old = choose_wheel(cuda, "0.3.16", python=(3, 13), system="linux", machine="x86_64")
    assert not old.tag and "Python 3.10 to 3.12, this is 3.13" in old.why
    assert choose_wheel(cuda, "0.3.16", python=(3, 11), system="linux", machine="x86_64").tag == "cu124"
    assert "Linux x86_64" in choose_wheel(cuda, "0.3.36", system="linux", machine="aarch64").why
    assert "not installed" in choose_wheel(cuda, "", system="linux", machine="x86_64").why


def test_the_cuda_runtime_the_environment_has_is_not_installed_again() -> None:
    cuda = driver_cuda(SMI["12.4"])
    bare = choose_wheel(cuda, "0.3.36", system="linux", machine="x86_64")
    assert bare.runtime_packages == ("nvidia-cuda-runtime-cu12", "nvidia-cublas-cu12")
    with_torch = choose_wheel(cuda, "0.3.36", system="linux", machine="x86_64",
                              runtime_found=["libcudart.so.12", "libcublasLt.so.12", "libcublas.so.12"])
    assert with_torch.runtime_packages == () and len(with_torch.commands("T")) == 1


def wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> None:
    """A wheel pip installs: the files, METADATA, WHEEL and RECORD."""
    dist = f"{name.replace('-', '_')}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    everything = {**files, **meta}
    record = "".join(f"{path},,\n" for path in everything) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as archive:
        for path, text in {**everything, f"{dist}.dist-info/RECORD": record}.items():
            archive.writestr(path, text)


def fake_llama_cpp(build: str) -> dict[str, str]:
    files = {"llama_cpp/__init__.py": f"__version__ = {VERSION!r}\nBUILD = {build!r}\n"
                                      f"def llama_supports_gpu_offload():\n    return {build == 'cuda'}\n"}
    if build == "cuda":
        files["llama_cpp/lib/libggml-cuda.so"] = "not a real library: the test's CUDA backend, by its name"
    return files


class Index:
    """Folders served on loopback as PEP 503 indexes (http.server's listings), with the paths asked for."""

    def __init__(self, root: Path) -> None:
        self.root, self.asked = root, []
        asked = self.asked

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                asked.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=root))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}/"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    root = tmp_path / "indexes"
    wheel(root / "cu124" / "llama-cpp-python", "llama_cpp_python", VERSION, fake_llama_cpp("cuda"))
    # The other index, as PyPI: a CPU build of the same version, which the install must not take, and a runtime package.
    wheel(root / "pypi" / "llama-cpp-python", "llama_cpp_python", VERSION, fake_llama_cpp("cpu"))
    wheel(root / "pypi" / "nvidia-cuda-runtime-cu12", "nvidia_cuda_runtime_cu12", "12.4.127",
          {"nvidia/cuda_runtime/include/cuda_runtime_api.h": "/* the test's */\n"})
    served = Index(root)
    yield served
    served.server.shutdown()


@pytest.fixture
def gpu_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: Index) -> dict[str, str]:
    """This process as a GPU Space: an nvidia-smi for CUDA 12.4, the wheel index on loopback, pip without this
    machine's configuration, and sys.path and PYTHONPATH put back afterwards."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho '{SMI['12.4']}'\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(gpu_build, "WHEEL_INDEX", index.url("{tag}").replace("%7B", "{").replace("%7D", "}"))
    monkeypatch.setattr(gpu_build, "_system_runtime", lambda: ["libcublasLt.so.12", "libcublas.so.12"])
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    return {"SPACE_ID": "someone/searchbox"}


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.resolve(env={"SEARCHBOX_CACHE_DIR": str(tmp_path / "cache"), **env})


def test_a_gpu_space_installs_the_cuda_wheel_from_its_index_and_uses_it(tmp_path: Path, gpu_machine: dict,
                                                                          index: Index) -> None:
    if gpu_build.cuda_backend_installed():
        pytest.skip("this llama-cpp-python has the CUDA backend: nothing to install")
    done = prepare(settings(tmp_path), gpu_machine, default_index=index.url("pypi"))
    assert done.state == "installed", done.lines
    site = tmp_path / "cache" / "llama-cpp-cuda" / f"{VERSION}-cu124" / "site"
    assert (site / "llama_cpp" / "lib" / "libggml-cuda.so").is_file()  # the CUDA index's, not PyPI's CPU build
    assert (site / "nvidia" / "cuda_runtime" / "include" / "cuda_runtime_api.h").is_file()  # the runtime missing
    assert sys.path[0] == str(site) and os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(site)
    assert json.loads((site.parent / "outcome.json").read_text())["outcome"] == "ready"
    assert gpu_build.cuda_backend_installed([str(site)])
    assert f"/cu124/llama-cpp-python/llama_cpp_python-{VERSION}-py3-none-any.whl" in " ".join(index.asked)
    assert "/pypi/llama-cpp-python/" not in " ".join(index.asked)  # the wheel comes from its index alone

    # The next start uses it without pip.
    asked = len(index.asked)
    sys.path.remove(str(site))
    again = prepare(settings(tmp_path), gpu_machine)
    assert again.state == "using" and sys.path[0] == str(site) and len(index.asked) == asked


def test_a_wheel_that_fails_is_tried_once(tmp_path: Path, gpu_machine: dict, index: Index) -> None:
    if gpu_build.cuda_backend_installed():
        pytest.skip("this llama-cpp-python has the CUDA backend: nothing to install")
    for found in (index.root / "cu124" / "llama-cpp-python").iterdir():
        found.unlink()  # the index lags PyPI: it has no wheel of this version
    done = prepare(settings(tmp_path), gpu_machine, default_index=index.url("pypi"))
    assert done.state == "failed" and done.loud
    assert "llama.cpp stays on the CPU" in done.lines[-1] and "pip index versions llama-cpp-python" in done.lines[-1]
    assert str(tmp_path / "cache") not in sys.path[0]
    asked = len(index.asked)
    again = prepare(settings(tmp_path), gpu_machine)
    assert again.state == "failed" and "not tried again" in again.lines[0] and len(index.asked) == asked
    assert "it failed once and is not tried again" in gpu_build.plan(settings(tmp_path), gpu_machine)


def test_the_knob_decides_where_it_installs(tmp_path: Path, gpu_machine: dict, index: Index) -> None:
    if gpu_build.cuda_backend_installed():
        pytest.skip("this llama-cpp-python has the CUDA backend: nothing to install")
    assert prepare(settings(tmp_path), {}).state == "not-wanted"  # auto: only on a Space
    assert prepare(settings(tmp_path, SEARCHBOX_GPU_BUILD="off"), gpu_machine).state == "off"
    assert "installs only on a Space" in gpu_build.plan(settings(tmp_path), {})
    assert "the app installs it at its next start" in gpu_build.plan(settings(tmp_path), gpu_machine)
    assert index.asked == []
    with pytest.raises(Exception, match="SEARCHBOX_GPU_BUILD must be one of auto, on, off"):
        settings(tmp_path, SEARCHBOX_GPU_BUILD="yes")


def test_the_cli_prepares_llama_cpp_before_a_command_that_loads_a_model(monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture) -> None:
    from searchbox.cli import main as cli

    seen: list[str] = []

    def prepared(settings: Settings) -> gpu_build.Prepared:
        seen.append(settings.searchbox_gpu_build)
        return gpu_build.Prepared("using", ["llama.cpp: the CUDA wheel cu124 installed before, at /x"])

    monkeypatch.setattr(cli, "prepare_gpu_build", prepared)
    parser = cli.build_parser()
    loading = {name for name in ("run", "ablate", "score", "conformance", "knobs", "report", "doctor", "tool")
               if getattr(parser.parse_args(_minimal_args(name)), "loads_model", False)}
    assert loading == {"run", "ablate", "score", "conformance"}
    cli.prepare_llama_cpp(parser.parse_args(["ablate", "--out", "x", "--set", "SEARCHBOX_GPU_BUILD=off"]))
    assert seen == ["off"] and "note: llama.cpp: the CUDA wheel cu124" in capsys.readouterr().err
    assert cli.main(["knobs", "--markdown"]) == 0 and seen == ["off"]  # a command that loads no model: not asked


def _minimal_args(command: str) -> list[str]:
    return {"run": ["run", "a question"], "ablate": ["ablate", "--out", "x"], "score": ["score", "x", "--id", "q001"],
            "report": ["report", "x"], "tool": ["tool", "ls"]}.get(command, [command])
