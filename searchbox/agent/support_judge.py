"""The run's citation-support judge (CITATION_JUDGE): a chat model's greedy, seeded completion behind
citations/judge.py's plain chat callable. The run opens it (agent/run.py) for its own citation check,
whose verdicts run_meta.json records; grading after the run reads them and never asks a judge again."""

from __future__ import annotations

from collections.abc import Callable

from searchbox.citations.judge import ChatReply, JudgeUnavailable, SupportJudge
from searchbox.llm.disclosure import endpoint_name
from searchbox.llm.errors import LLMError
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.llm.types import ChatModel, Message
from searchbox.settings import Settings


def support_judge(model: ChatModel, seed: int = 0) -> SupportJudge:
    def chat(messages: list[Message], max_tokens: int) -> ChatReply:
        try:
            response = model.complete(messages, max_tokens=max_tokens, temperature=0.0, seed=seed)
        except LLMError as exc:
            raise JudgeUnavailable(str(exc)) from exc
        return ChatReply(response.text, response.usage.input, response.usage.output)
    return SupportJudge(model.model_id, chat)


def configured_judge(settings: Settings, run_model: Callable[[], ChatModel]) -> tuple[SupportJudge | None, ChatModel | None]:
    """The judge CITATION_JUDGE asks for, and the model opened for it (the caller closes it): none when off;
    the run's own model (`run_model`) for "self"; else the endpoint the knob names."""
    if settings.citation_judge == "off":
        return None, None
    if settings.citation_judge == "self":
        return support_judge(run_model(), settings.llm_seed or 0), None
    client = OpenAIClient(settings.citation_judge, settings.citation_judge_model, api_key=settings.llama_api_key,
                          stream=settings.llm_stream, read_timeout_s=settings.llm_timeout_seconds,
                          max_attempts=settings.llm_attempts, shown_as=endpoint_name(settings, settings.citation_judge))
    return support_judge(client, settings.llm_seed or 0), client
