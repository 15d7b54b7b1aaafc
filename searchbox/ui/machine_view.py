""""This machine": the doctor's report in the app (`python -m searchbox doctor`, the same function), and
a warning at the top of the page when a GPU is present and the models cannot use it."""

from __future__ import annotations

import gradio as gr

from searchbox.doctor import GpuCheck, Report, check_gpu, gather, gpu_notices, rows
from searchbox.settings import Settings


def notices_markdown(notices: list[str]) -> str:
    return "\n\n".join(f"⚠️ **{notice}**" for notice in notices)


def report_markdown(report: Report) -> str:
    """The report's lines as a table; its notices are the warning the page already shows above."""
    return "| | this machine |\n|---|---|\n" + "\n".join(f"| {topic} | {_cell(value)} |" for topic, value in rows(report))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")  # a pipe in a value would end its table cell


def build_machine_view(settings: Settings, gpu: GpuCheck | None = None) -> None:
    """The warning (only when there is something to warn about) and, for an operator only (it shows the
    app's folders, disks and memory), a collapsed accordion whose report is gathered each time it is
    opened: free VRAM and disk change, and gathering costs a second or two that an operator who never
    opens it should not wait for. A public app has neither the accordion nor its endpoint. `gpu`: the GPU
    check the warning is made of (default: this machine's, check_gpu)."""
    notices = gpu_notices(gpu or check_gpu())
    if notices:
        gr.Markdown(notices_markdown(notices))
    if not settings.searchbox_operator:
        return
    with gr.Accordion("This machine", open=False) as accordion:
        body = gr.Markdown()
    accordion.expand(lambda: report_markdown(gather(settings)), None, body, api_name="machine_report")
