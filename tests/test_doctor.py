"""`python -m searchbox doctor`: what this machine gives the app, and the notice for a GPU left unused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchbox.doctor import Gpu, GpuCheck, _cpu_features, gpu_notices, simd_notices, unused_simd

ROOT = Path(__file__).resolve().parents[1]


def doctor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "searchbox", "doctor", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_doctor_json_reports_this_machine(tmp_path: Path) -> None:
    done = doctor(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    gpu = report["gpu"]
    assert isinstance(gpu["gpus"], list) and isinstance(gpu["gpu_probe"], str) and gpu["gpu_probe"]
    assert isinstance(gpu["llama_cpp_offload"], bool) and gpu["llama_cpp_version"] and not gpu["llama_cpp_error"]
    assert isinstance(gpu["torch_cuda"], bool)
    for found in gpu["gpus"]:
        assert found["name"] and 0 <= found["free_mb"] <= found["total_mb"]
    assert report["cpu_features"] and all(isinstance(f, str) and f for f in report["cpu_features"])
    assert set(report["cpu_unused"]) <= {"AVX512", "AVX512_VNNI", "AVX512_VBMI", "AVX512_BF16", "AVX_VNNI"}
    assert not set(report["cpu_unused"]) & set(report["cpu_features"])
    assert "CPU :" in report["llama_system_info"]
    assert report["sandbox"]["requested"] == "auto"
    assert report["sandbox"]["level"] in ("namespaces", "landlock", "none")
    assert isinstance(report["sandbox"]["reason"], str)
    # HF_HUB_OFFLINE: the hub is off, and said why.
    assert report["hub_reachable"] is False and "HF_HUB_OFFLINE" in report["hub_reason"]
    models = {(m["role"], m["name"]): m for m in report["models"]}
    assert all(isinstance(m["ready"], bool) and m["state"] for m in report["models"])
    # What requirements.txt installs is at hand with no network; a fresh cache holds no assembled file yet.
    assert models[("embedder", "packaged:minilm")]["ready"]
    assert models[("llm", "qwen2.5-coder-1.5b")]["ready"]
    assert "part packages are installed" in models[("llm", "qwen2.5-coder-1.5b")]["state"]
    assert ("llm", "qwen3.6-35b-a3b") in models and models[("llm", "qwen3.6-35b-a3b")]["source"] == "hub"
    assert [d["role"] for d in report["disks"]] == ["cache", "jobs", "huggingface cache"]
    assert report["disks"][0]["path"] == str(tmp_path / "cache")
    assert all(0 <= d["free_mb"] <= d["total_mb"] and d["total_mb"] > 0 for d in report["disks"])
    assert 0 < report["ram_available_mb"] <= report["ram_total_mb"]
    assert report["cpu_count"] >= 1
    assert isinstance(report["llm_auto"], str) and report["llm_auto"]
    assert report["notices"] == (gpu_notices(GpuCheck(**{**gpu, "gpus": [Gpu(**g) for g in gpu["gpus"]]}))
                                 + simd_notices(report["cpu_unused"], gpu["llama_cpp_version"]))


def test_doctor_prints_one_line_per_topic(tmp_path: Path) -> None:
    done = doctor(tmp_path, "--set", "BASH_SANDBOX=landlock")
    assert done.returncode == 0, done.stderr
    topics = [line.split("  ")[0] for line in done.stdout.splitlines()]
    for topic in ("GPU", "llama.cpp", "llama.cpp CPU features", "torch", "LLM_GGUF=auto", "bash sandbox", "hub",
                  "disk (cache)", "disk (jobs)", "RAM", "CPUs"):
        assert topic in topics, done.stdout
    assert "(BASH_SANDBOX=landlock)" in done.stdout


def test_doctor_says_whether_harness_pi_can_run_here(tmp_path: Path) -> None:
    from searchbox.agent.pi.install import pi_problem, pinned_version

    done = doctor(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    pi = json.loads(done.stdout)["harness_pi"]
    assert pi["ready"] is (pi_problem() is None) and pi["problem"] == pi_problem() and pi["pinned"] == pinned_version()
    line = next(line for line in doctor(tmp_path).stdout.splitlines() if line.startswith("HARNESS=pi"))
    assert (f"ready: Pi {pinned_version()}" in line) if pi["ready"] else ("npm ci --prefix pi" in line or "Node" in line)


L40S = Gpu("NVIDIA L40S", 46_068, 45_400, "nvidia-smi")


def check(**values: object) -> GpuCheck:
    base = dict(gpus=[L40S], gpu_probe="nvidia-smi, driver 550.54", llama_cpp_version="0.3.36",
                llama_cpp_offload=True, llama_cpp_error="", torch_version="2.13.0+cu128", torch_cuda=True)
    return GpuCheck(**{**base, **values})  # type: ignore[arg-type]


def test_a_gpu_that_llama_cpp_cannot_use_gets_a_notice_with_the_fix() -> None:
    [notice] = gpu_notices(check(llama_cpp_offload=False))
    assert "NVIDIA L40S with 45,400 MB free" in notice and "cannot offload" in notice
    assert 'CMAKE_ARGS="-DGGML_CUDA=on"' in notice and '"llama-cpp-python==0.3.36"' in notice
    assert "abetlen.github.io/llama-cpp-python/whl/cu124" in notice


def test_no_notice_without_a_gpu_or_when_every_part_can_use_it() -> None:
    assert gpu_notices(check()) == []
    assert gpu_notices(check(gpus=[], gpu_probe="no nvidia-smi on PATH", llama_cpp_offload=False, torch_cuda=False)) == []


def test_other_ways_a_gpu_goes_unused() -> None:
    [broken] = gpu_notices(check(llama_cpp_version="", llama_cpp_offload=False, llama_cpp_error="OSError: libcuda.so.1"))
    assert "cannot be loaded (OSError: libcuda.so.1)" in broken and "GGML_CUDA=on" in broken
    [torch_blind] = gpu_notices(check(torch_version="2.13.0+cpu", torch_cuda=False))
    assert "torch 2.13.0+cpu sees no CUDA device" in torch_blind and "LLM_GGUF=auto" in torch_blind


def test_cpu_features_are_read_from_the_cpu_section_only() -> None:
    info = "CUDA : ARCHS = 890 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | CPU : SSE3 = 1 | AVX512 = 0 | AVX2 = 1 |"
    assert _cpu_features(info) == ["SSE3", "AVX2"]
    assert _cpu_features("") == []


def test_instruction_sets_the_cpu_has_and_the_build_lacks_get_the_command_for_a_build_that_uses_them() -> None:
    xeon = {"avx2", "fma", "avx512f", "avx512_vnni", "avx512vbmi", "avx512_bf16", "avx_vnni", "amx_int8", "amx_tile"}
    portable = ["SSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"]
    unused = unused_simd(portable, xeon)
    assert unused == ["AVX512", "AVX512_VNNI", "AVX512_VBMI", "AVX512_BF16"]  # never AMX (SIGILL under XFD)
    [notice] = simd_notices(unused, "0.3.36")
    assert ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON '
            '-DGGML_AVX512_VBMI=ON -DGGML_AVX512_BF16=ON"') in notice
    assert "--no-cache-dir" in notice and '"llama-cpp-python==0.3.36"' in notice and "AMX" not in notice
    # A build for this CPU, or a CPU without the sets (a laptop's AVX2, an ARM board), hears nothing.
    assert unused_simd([*portable, "AVX512", "AVX512_VNNI", "AVX512_VBMI", "AVX512_BF16"], xeon) == []
    assert unused_simd(portable, {"avx2", "fma"}) == [] and unused_simd([], set()) == []
    assert simd_notices([], "0.3.36") == []
    # AVX_VNNI alone (a laptop's Alder Lake): its own switch; beside AVX-512, AVX512_VNNI's code is taken instead.
    [laptop] = simd_notices(unused_simd(portable, {"avx2", "avx_vnni"}), "0.3.36")
    assert "-DGGML_AVX_VNNI=ON" in laptop and "not measured" in laptop


def test_the_app_shows_the_report_under_this_machine_to_its_operator_only(tmp_path: Path) -> None:
    """A public app showed its folders, disks and memory to anyone, in the page and at /machine_report."""
    import gradio as gr

    from searchbox.settings import Settings
    from searchbox.ui.app import build_app
    from searchbox.ui.services import Services

    apps = {}
    for operator in (False, True):
        settings = Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"),
                                    searchbox_jobs_dir=str(tmp_path / f"jobs-{operator}"), searchbox_operator=operator)
        services = Services.start(settings, run_fn=lambda *args: "first_turn_done")
        try:
            apps[operator] = build_app(settings, services)
        finally:
            services.scheduler.stop()
    public, app = apps[False], apps[True]
    assert not [b for b in public.blocks.values() if isinstance(b, gr.Accordion) and b.label == "This machine"]
    assert "machine_report" not in {f.api_name for f in public.fns.values()}
    [accordion] = [b for b in app.blocks.values() if isinstance(b, gr.Accordion) and b.label == "This machine"]
    assert accordion.open is False
    [expand] = [f for f in app.fns.values() if (accordion._id, "expand") in f.targets]
    assert expand.api_name == "machine_report"
    page = expand.fn()
    assert page.startswith("| | this machine |\n|---|---|\n")
    for topic in ("| GPU |", "| llama.cpp |", "| bash sandbox |", "| embedder packaged:minilm | ready:", "| RAM |"):
        assert topic in page


def fake_nvidia_smi(folder: Path) -> str:
    """A PATH on which nvidia-smi answers as on an L40S Space: the GPU-present path without a GPU."""
    folder.mkdir()
    program = folder / "nvidia-smi"
    program.write_text("#!/bin/sh\nif [ $# -eq 0 ]; then echo '| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  "
                       "CUDA Version: 12.4 |'; else echo 'NVIDIA L40S, 46068, 45400, 550.54.15'; fi\n")
    program.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def cpu_build() -> bool:
    import llama_cpp

    return not llama_cpp.llama_supports_gpu_offload()


def test_a_gpu_machine_with_a_cpu_build_is_told_loudly(tmp_path: Path, monkeypatch) -> None:
    if not cpu_build():
        pytest.skip("this llama.cpp is a GPU build: a GPU present is used, nothing to warn about")
    path = fake_nvidia_smi(tmp_path / "bin")
    env = {**os.environ, "PATH": path, "HF_HUB_OFFLINE": "1", "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "searchbox", "doctor"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "NVIDIA L40S: 45,400 of 46,068 MB free (nvidia-smi, driver 550.54.15)" in done.stdout
    # The wheel that fits, and that the app installs it on a Space only (SEARCHBOX_GPU_BUILD=auto).
    [wheel] = [line for line in done.stdout.splitlines() if line.startswith("llama.cpp CUDA wheel")]
    assert "cu124 (the driver runs CUDA 12.4, so the CUDA 12.4 wheels)" in wheel
    assert "--index-url https://abetlen.github.io/llama-cpp-python/whl/cu124" in wheel
    assert "installs only on a Space" in wheel
    assert "!!! A GPU is present (NVIDIA L40S with 45,400 MB free) but this llama.cpp build" in done.stderr
    assert "GGML_CUDA=on" in done.stderr

    import gradio as gr

    from searchbox.settings import Settings
    from searchbox.ui.machine_view import build_machine_view

    monkeypatch.setenv("PATH", path)
    with gr.Blocks() as page:
        build_machine_view(Settings.resolve(env={}))
    warnings = [b.value for b in page.blocks.values() if isinstance(b, gr.Markdown) and "⚠️" in (b.value or "")]
    assert len(warnings) == 1 and "cannot offload" in warnings[0] and "GGML_CUDA=on" in warnings[0]


def test_the_page_served_shows_the_notice_the_gpu_check_gives() -> None:
    """The warning as a browser gets it (the page's config from a real server), for a check that found a GPU
    llama.cpp cannot offload to; none for one where every part can use it."""
    import urllib.request

    import gradio as gr

    from searchbox.settings import Settings
    from searchbox.ui.machine_view import build_machine_view

    def served_warnings(gpu: GpuCheck) -> list[str]:
        with gr.Blocks() as page:
            build_machine_view(Settings.resolve(env={}), gpu=gpu)
        page.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
        try:
            with urllib.request.urlopen(page.local_url + "config", timeout=30) as response:
                config = json.load(response)
        finally:
            page.close()
        values = [c.get("props", {}).get("value") for c in config["components"] if c.get("type") == "markdown"]
        return [v for v in values if isinstance(v, str) and "⚠️" in v]

    [warning] = served_warnings(check(llama_cpp_offload=False))
    assert "NVIDIA L40S with 45,400 MB free" in warning and "cannot offload" in warning and "GGML_CUDA=on" in warning
    assert served_warnings(check()) == []
