"""Engines word the cause and fix of engine-neutral alerts for their own users (capabilities.Advises): an
Ollama, LM Studio or SGLang user is never told to pass llama-server flags."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from corpora import SAMPLES

from kvwatch.cli import main
from kvwatch.engines.ollama.advice import pinned
from kvwatch.model import Finding

LLAMA_SERVER_ONLY = ("b9093", "--swa-full", "n_cache_reuse", "slots are then picked by LRU")


def firing(sample: str, alert: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The first firing transition of `alert` in `replay --format json` of a sample."""
    main(["replay", "--format", "json", str(SAMPLES / sample)])
    alerts = json.loads(capsys.readouterr().out)["alerts"]
    return next(a for a in alerts if a["alert"] == alert and a["state"] == "firing")


def test_lmstudio_reuse_names_its_own_causes(capsys: pytest.CaptureFixture[str]) -> None:
    """LM Studio: the header or an untrimmable cache, and its runtime to update."""
    alert = firing("lmstudio-v0-4-mlx-zero-reuse.log", "prefix_reuse_broken", capsys)
    assert alert["cause"].startswith("LM Studio re-processes")
    assert "Cache is not trimmable" in alert["cause"]
    assert 'kvwatch_lmstudio_cache_clears_total{reason="not_trimmable"}' in alert["fix"]
    assert not [word for word in LLAMA_SERVER_ONLY if word in alert["cause"] + alert["fix"]]


def test_sglang_reuse_names_its_radix_cache(capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang: the radix cache and its prefill lines' `#cached-token`."""
    alert = firing("sglang-v0-5-17-agentic-broken.log", "prefix_reuse_broken", capsys)
    assert "radix cache" in alert["cause"]
    assert "#cached-token" in alert["fix"]
    assert not [word for word in LLAMA_SERVER_ONLY if word in alert["cause"] + alert["fix"]]


def test_ollama_pinned_on_a_restore_boundary_names_the_mlx_runner(capsys: pytest.CaptureFixture[str]) -> None:
    """Ollama's MLX cache stuck at 24575 = 8192 * 3 - 1 (its `matched` grows past it): the runner's
    restore, with how to tell it from a per-request header."""
    alert = firing("ollama-mlx-stuck.log", "pinned_cache_length", capsys)
    assert alert["evidence"]["cached_tokens"] == 24575
    assert alert["cause"].startswith("24575 is 8192 * 3 - 1")
    assert "ollama#17829" in alert["cause"]
    assert "ollama#18267" in alert["fix"]
    assert "`matched` with `cached`" in alert["fix"]


def test_llamacpp_keeps_the_detectors_words(capsys: pytest.CaptureFixture[str]) -> None:
    """llama.cpp has no advice of its own: its incident's text, llama-server's flags included."""
    alert = firing("llamacpp-synthetic-incident4.log", "prefix_reuse_broken", capsys)
    assert "b9093" in alert["fix"]


@pytest.mark.parametrize("cached", [17920, 8190, 24576])
def test_ollama_pinned_off_a_boundary_is_left_alone(cached: int) -> None:
    """A pinned length that is no 8192 * n - 1 keeps the detector's header cause."""
    finding = Finding(
        alert="pinned_cache_length",
        labels=(("source", "o"),),
        severity="warning",
        summary="s",
        cause="the detector's cause",
        fix="the detector's fix",
        evidence={"cached_tokens": cached},
    )
    assert pinned(finding) is finding
    at_boundary = dataclasses.replace(finding, evidence={"cached_tokens": 8191})
    assert pinned(at_boundary).cause.startswith("8191 is 8192 * 1 - 1")
