"""The probe's pure parts: endpoints, the conversation it builds, usage parsers, verdicts, the alert."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvwatch.detectors.probe_prefix_miss import ProbeRun, Settings, detect
from kvwatch.probe.conversation import HEADER, Conversation, EndpointError, body, endpoint, header_line
from kvwatch.probe.usage import ResponseError, Usage, parse_body, parse_stream
from kvwatch.probe.verdict import judge, worst


def test_endpoint_is_told_from_the_path_or_the_api() -> None:
    """A base gets /v1 and the API's path; a full path names its API; a mismatch is refused."""

    def told(url: str, api: str | None = None) -> tuple[str, str]:
        point = endpoint(url, api)  # type: ignore[arg-type]
        return point.api, point.url

    assert ("openai", "http://h:8000/v1/chat/completions") == told("http://h:8000/v1")
    assert ("anthropic", "https://h/v1/messages") == told("https://h", "anthropic")
    assert ("anthropic", "http://h/gw/v1/messages") == told("http://h/gw/v1/messages/")
    assert "http://h/v1/models" == endpoint("http://h/v1/chat/completions").models
    with pytest.raises(EndpointError, match="does not match"):
        endpoint("http://h/v1/messages", "openai")
    with pytest.raises(EndpointError, match="not an http"):
        endpoint("ftp://h/v1")


def test_the_conversation_is_synthetic_deterministic_and_bounded() -> None:
    """Same prefix every time, max_tokens 1, the follow-up repeats the first request whole."""
    conv = Conversation("openai", "m", 4096)
    first, again, follow = body(conv, None, False), body(conv, None, False), body(conv, None, True)
    assert first == again
    assert 1 == first["max_tokens"] and 0 == first["temperature"]
    assert first["messages"] == follow["messages"][: len(first["messages"])]
    assert first["tools"] == follow["tools"]
    system = first["messages"][0]["content"]
    assert "synthetic" in system and "kvwatch" in system
    assert 3.0 * 4096 < len(system) + len(json.dumps(first["tools"])) < 4.5 * 4096


def test_the_header_is_where_claude_code_puts_it() -> None:
    """First line of the OpenAI system message; first system text block (Anthropic); a 5-char nonce."""
    line = header_line("a1b2c")
    assert line.startswith("x-anthropic-billing-header: cc_version=") and line.endswith("cch=a1b2c;")
    assert HEADER.count("{nonce}") == 1
    openai = body(Conversation("openai", "m", 1024), "a1b2c", False)
    assert openai["messages"][0]["content"].split("\n")[0] == line
    anthropic = body(Conversation("anthropic", "m", 1024), "a1b2c", True)
    assert [{"type": "text", "text": line}] == anthropic["system"][:1]
    assert "cache_control" in anthropic["system"][1]
    assert {"name", "description", "input_schema"} == set(anthropic["tools"][0])


def test_openai_usage_fields() -> None:
    """cached_tokens, else llama.cpp's timings.cache_n, else SGLang's meta_info; None when absent."""
    full = {"usage": {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 64}}}
    assert Usage(100, 64, "usage.prompt_tokens_details.cached_tokens") == parse_body(
        "openai", json.dumps(full)
    )
    llama = {"usage": {"prompt_tokens": 9}, "timings": {"cache_n": 8}}
    assert Usage(9, 8, "timings.cache_n", True) == parse_body("openai", json.dumps(llama))
    sglang = {"meta_info": {"prompt_tokens": 5, "cached_tokens": 4}}
    assert Usage(5, 4, "meta_info.cached_tokens") == parse_body("openai", json.dumps(sglang))
    vllm = {"usage": {"prompt_tokens": 100, "prompt_tokens_details": None}}
    assert Usage(100, None) == parse_body("openai", json.dumps(vllm))
    with pytest.raises(ResponseError):
        parse_body("openai", "<html>")


def test_anthropic_usage_adds_the_cached_parts_to_the_prompt() -> None:
    """prompt = input + cache read + cache creation; no cache_read field: cannot tell."""
    text = json.dumps(
        {"usage": {"input_tokens": 3, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 7}}
    )
    assert Usage(100, 90, "usage.cache_read_input_tokens") == parse_body("anthropic", text)
    assert Usage(3, None) == parse_body("anthropic", json.dumps({"usage": {"input_tokens": 3}}))


def test_streams() -> None:
    """OpenAI: the usage chunk; Anthropic: message_start's usage, updated by message_delta."""
    openai = [
        'data: {"choices": [{"delta": {"content": "x"}}]}',
        'data: {"usage": {"prompt_tokens": 50, "prompt_tokens_details": {"cached_tokens": 48}}}',
        "data: [DONE]",
    ]
    assert (50, 48) == (parse_stream("openai", openai).prompt, parse_stream("openai", openai).cached)
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 2, "cache_read_input_tokens": 0}}}
    delta = {"type": "message_delta", "usage": {"input_tokens": 2, "cache_read_input_tokens": 40}}
    events = ["event: message_start", f"data: {json.dumps(start)}", f"data: {json.dumps(delta)}"]
    assert (42, 40) == (parse_stream("anthropic", events).prompt, parse_stream("anthropic", events).cached)
    with pytest.raises(ResponseError):
        parse_stream("openai", ["event: ping"])


def test_verdicts() -> None:
    """Whole prefix (to the block): reused; some: partly, with its length; none: not; no count: unknown."""
    first = Usage(4133, 0, llamacpp=True)
    assert "reused" == judge(first, Usage(4160, 4133, llamacpp=True)).kind
    assert "partly reused" == judge(first, Usage(4160, 4132, llamacpp=True)).kind
    unknown_block = Usage(4133, 0)
    assert "reused" == judge(unknown_block, Usage(4160, 4096)).kind  # (4133 down to 256s)
    assert "partly reused" == judge(unknown_block, Usage(4160, 4095)).kind
    partly = judge(Usage(40000, 0), Usage(40100, 17920))
    assert ("partly reused", 17920, 40000) == (partly.kind, partly.cached, partly.prefix)
    assert "17920 of 40000" in partly.summary and "after its first 17920 tokens" in partly.cause
    assert "not reused" == judge(first, Usage(4160, 0)).kind
    cannot = judge(Usage(4133, None), Usage(4160, None))
    assert "cannot tell" == cannot.kind
    assert all(flag in cannot.fix for flag in ("--enable-prompt-tokens-details", "--enable-cache-report"))


def test_the_header_verdict_names_the_header_only_when_the_plain_one_was_reused() -> None:
    """A header conversation that breaks while the plain one is reused names the header and the fix."""
    plain = judge(Usage(1000, 0, llamacpp=True), Usage(1050, 1000, llamacpp=True))
    header = judge(Usage(1040, 0), Usage(1090, 47), header="billing-header", plain=plain)
    assert "x-anthropic-billing-header" in header.cause and "47 tokens" in header.cause
    assert "Strip" in header.fix
    broken = judge(Usage(1000, 0), Usage(1050, 0))
    assert "x-anthropic" not in judge(Usage(1040, 0), Usage(1090, 0), "billing-header", broken).cause
    assert "cannot tell" == worst(["reused", "cannot tell", "not reused"])
    assert "not reused" == worst(["reused", "partly reused", "not reused"])


def run(share: float, at: float = 0.0) -> ProbeRun:
    """A judged run with this share."""
    return ProbeRun(at, share, f"share {share}", "cause", "fix", {"conversation": "header"})


def test_probe_prefix_miss_needs_two_runs_in_a_row_under_the_threshold() -> None:
    """One low run: nothing; two: a finding with both runs' numbers; back above: nothing."""
    cfg = Settings()
    assert [] == detect("gw", [run(0.01)], cfg)
    assert [] == detect("gw", [run(0.01), run(0.95)], cfg)
    [found] = detect("gw", [run(1.0), run(0.01, 1), run(0.02, 2)], cfg)
    assert (("probe", "gw"),) == found.labels
    assert [1, 2] == [r["at"] for r in found.evidence["runs"]]
    assert ("cause", "fix") == (found.cause, found.fix)
    assert [] == detect("gw", [run(0.01), run(0.02)], Settings(enabled=False))
    assert ["threshold: must be more than 0 and at most 1"] == Settings(threshold=0).problems()


def test_the_request_id_form_heads_the_system_prompt_on_both_apis() -> None:
    """nonce_form request-id: a `Request id:` line where the attribution line would go, and no header."""
    line = header_line("a1b2c", "request-id")
    assert line == "Request id: kvwatch-probe-a1b2c" and "x-anthropic" not in line
    conv = Conversation("openai", "m", 1024, nonce_form="request-id")
    openai = body(conv, "a1b2c", False)["messages"][0]["content"]
    assert openai.split("\n")[0] == line and "x-anthropic" not in openai
    anthropic = body(Conversation("anthropic", "m", 1024, nonce_form="request-id"), "a1b2c", True)
    assert [{"type": "text", "text": line}] == anthropic["system"][:1]
    assert (
        body(conv, None, True)["messages"][0]["content"]
        == body(Conversation("openai", "m", 1024), None, True)["messages"][0]["content"]
    )


def test_the_request_id_verdict_names_a_per_request_value_not_the_billing_header() -> None:
    """A request-id conversation that breaks while the plain one is reused: the cause is a per-request
    value at the head of the prompt, the fix says to move it after the prefix."""
    plain = judge(Usage(1000, 0), Usage(1050, 1000))
    verdict = judge(Usage(1040, 0), Usage(1090, 0), "request-id", plain)
    assert "not reused" == verdict.kind
    assert "Request id: <nonce> line" in verdict.cause and "0 tokens before it" in verdict.cause
    assert "after the cached prefix" in verdict.fix


def test_probe_config_nonce_form_is_checked_with_field_and_reason(tmp_path: Path) -> None:
    """`nonce_form`: one of the forms; refused with attribution_header = false; check-config shows it."""
    from kvwatch.config import ConfigError, load_config, summarize

    def load(extra: str) -> Any:
        path = tmp_path / "kvwatch.toml"
        path.write_text(f'[[probe]]\nname = "v"\nurl = "http://127.0.0.1:8000/v1"\n{extra}')
        return load_config(path)

    assert "request-id" == load('nonce_form = "request-id"\n').probes[0].nonce_form
    assert "billing-header" == load("").probes[0].nonce_form
    with pytest.raises(ConfigError) as bad:
        load('nonce_form = "cch"\n')
    assert [
        'probe[0].nonce_form: must be one of billing-header, request-id (got "cch")'
    ] == bad.value.problems
    with pytest.raises(ConfigError) as moot:
        load('nonce_form = "request-id"\nattribution_header = false\n')
    assert [
        "probe[0].nonce_form: has no effect with attribution_header = false (no header conversation)"
    ] == moot.value.problems
    assert "nonce_form=request-id" in summarize(load('nonce_form = "request-id"\n'))


def test_cli_nonce_form_is_refused_without_the_header_conversation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--nonce-form` with `--no-attribution-header` is exit status 2 with the reason, nothing sent."""
    from kvwatch import cli

    status = cli.main(
        ["probe", "http://127.0.0.1:9/v1", "--no-attribution-header", "--nonce-form", "request-id"]
    )
    assert 2 == status
    assert "--nonce-form has no effect with --no-attribution-header" in capsys.readouterr().err


def test_a_probe_removed_by_a_reload_lets_go_of_its_alert() -> None:
    """Reload (Probes.replace): every probe's held findings are cleared, the removed one's too (its
    probe_prefix_miss resolves instead of firing on with nothing probing)."""
    from kvwatch.config.types import ProbeConfig
    from kvwatch.daemon.probes import Probes
    from kvwatch.probe.run import ProbeSpec

    def entry(name: str) -> tuple[ProbeConfig, ProbeSpec]:
        return ProbeConfig(name, "http://127.0.0.1:9/v1"), ProbeSpec("http://127.0.0.1:9/v1")

    held: list[tuple[str, list[object]]] = []
    probes = Probes([entry("kept"), entry("gone")], Settings, lambda name, found: held.append((name, found)))
    probes.replace([entry("kept"), entry("new")])
    assert sorted(held) == [("gone", []), ("kept", []), ("new", [])]
    assert sorted(probes.states) == ["kept", "new"]


def test_cli_nonce_form_applies_to_a_configured_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kvwatch probe --config PATH --nonce-form request-id` runs the configured probe with that form
    (here against a closed port: the run fails, the report says which form it used)."""
    from kvwatch import cli

    config = tmp_path / "kvwatch.toml"
    config.write_text('[[probe]]\nname = "v"\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\ntimeout = 5\n')
    status = cli.main(["probe", "--config", str(config), "--nonce-form", "request-id", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (status, report["outcome"], report["nonce_form"]) == (2, "connection_error", "request-id")
