"""`pods` sources: every container of a kubelet's pod log tree that a selector takes is followed, with
a simulated kubelet (tests/kubelet_helpers.py) writing, rotating, gzipping, restarting and deleting."""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from daemon_helpers import ROOT, Kvwatch, shifted_sample, wait_until, write_config
from kubelet_helpers import Node, chunks
from notify_helpers import Receiver
from prometheus_client.parser import text_string_to_metric_families
from test_live_parity import compared

from kvwatch.cli import main
from kvwatch.sources.pods import PodContainer, scan
from kvwatch.sources.settings import PodSelector

POD_LABELS = ("namespace", "pod", "container", "role", "model")


def test_scan_takes_what_the_first_matching_selector_takes(tmp_path: Path) -> None:
    """Selectors' globs pick containers by namespace, pod and container; the first that matches tells the
    role from its pod-name globs; sidecars and other namespaces are left alone."""
    node = Node(tmp_path)
    node.start_pod("llm", "ms-decode-0", ["vllm", "routing-proxy"])
    node.start_pod("llm", "ms-prefill-1", ["vllm"])
    node.start_pod("web", "frontend-7d9f8", ["vllm"])
    node.start_pod("llm", "sglang-0", ["sglang"])
    roles = (("decode", "*-decode-*"), ("prefill", "*-prefill-*"))
    vllm = PodSelector(namespace="llm", container="vllm", roles=roles)
    sglang = PodSelector(namespace="l*", pod="sglang-*", engine="sglang")
    found = scan(tmp_path, [vllm, sglang])
    assert found == {
        "llm_ms-decode-0_vllm": PodContainer("llm", "ms-decode-0", "vllm", 0, "decode"),
        "llm_ms-prefill-1_vllm": PodContainer("llm", "ms-prefill-1", "vllm", 0, "prefill"),
        "llm_sglang-0_sglang": PodContainer("llm", "sglang-0", "sglang", 1, None),
    }
    assert found["llm_ms-decode-0_vllm"].name("fleet") == "fleet_llm_ms-decode-0_vllm"
    assert scan(tmp_path / "missing", [vllm]) == {}


def test_check_config_names_a_bad_selector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A glob no Kubernetes name can match, an unclosed `[`, a missing selector: refused with the field."""
    config = tmp_path / "kv.toml"
    config.write_text(
        '[[source]]\nname = "a"\ntype = "pods"\n'
        '[[source]]\nname = "b"\ntype = "pods"\nroot = "/x"\n'
        '[[source.select]]\nnamespace = "LLM"\npod = "x["\ncontainer = "a_b"\nengine = "nope"\n'
        'roles = { "de code" = "*-decode-*" }\n'
    )
    assert 1 == main(["check-config", str(config)])
    err = capsys.readouterr().err
    assert 'source[0].select: required for type "pods"' in err
    assert 'source[1].select[0].namespace: "LLM" can never match' in err and 'not "L" "M"' in err
    assert "source[1].select[0].pod: \"x[\" opens a '[' it never closes" in err
    assert 'source[1].select[0].container: "a_b" can never match' in err and 'not "_"' in err
    assert "source[1].select[0].engine: " in err
    assert "source[1].select[0].roles.de code: a role must match" in err


def metrics_of(kv: Kvwatch, source: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """What test_live_parity compares, for one source, without the pod labels."""
    out = {}
    for (name, labels), value in compared(kv.get("/metrics")[2]).items():
        if dict(labels)["source"] == source:
            out[(name, tuple((k, v) for k, v in labels if k not in POD_LABELS))] = value
    return out


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def replayed(log: Path, source: str, capsys: pytest.CaptureFixture[str]) -> Samples:
    """`kvwatch replay` of a log as `source`: what test_live_parity compares."""
    capsys.readouterr()
    assert 0 == main(["replay", "--format", "prom", "--year", "2026", "--source", source, str(log)])
    return compared(capsys.readouterr().out)


def config(tmp_path: Path, root: Path, extra: str = "") -> Path:
    """A pods source `fleet` over `root`: vLLM containers in namespace llm, roles by pod name."""
    body = (
        f'[[source]]\nname = "fleet"\ntype = "pods"\nroot = "{root}"\nyear = 2026\n'
        '[[source.select]]\nnamespace = "llm"\ncontainer = "vllm"\n'
        'roles = { decode = "*-decode-*", prefill = "*-prefill-*" }\n' + extra
    )
    return write_config(tmp_path / "kv.toml", body)


@pytest.mark.slow
def test_rotation_restarts_and_a_kvwatch_restart_lose_and_repeat_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A container written at 400 lines/s and rotated as the kubelet does (rename, reopen, gzip), restarted
    (1.log), and rotated twice while kvwatch is down (its last file gzipped meanwhile) gives, per series,
    the metrics replay gives for its lines; a new pod is picked up within seconds; series carry the pod's
    labels, the role its name tells and the model its engine named (also after the restart); a sidecar
    is not followed."""
    sample = ROOT / "samples" / "vllm-write-only-offload.log"
    lines = sample.read_bytes().split(b"\n")[:-1]
    name = "fleet_llm_ms-decode-0_vllm"
    expected = replayed(sample, name, capsys)
    node = Node(tmp_path / "pods")
    cfg = config(tmp_path, node.root)
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    wait_until(lambda: kv.get("/-/ready")[0] == 200, 10.0, "ready: the tree looked at")
    first, down, restarted = chunks(lines, 3)
    node.start_pod("llm", "ms-decode-0", ["vllm", "routing-proxy"])
    node.write("llm", "ms-decode-0", "routing-proxy", b"INFO proxy up")
    born = time.monotonic()
    node.play("llm", "ms-decode-0", "vllm", first[:1]).join()
    wait_until(lambda: kv.lines(name) == 1, 10.0, "the new pod's first line read")
    assert time.monotonic() - born < 10.0
    node.play("llm", "ms-decode-0", "vllm", first[1:]).join()
    wait_until(lambda: kv.lines(name) == len(first), 20.0, "the first part read")
    before = metrics_of(kv, name)
    assert 0 == kv.stop()
    node.play("llm", "ms-decode-0", "vllm", down, max_size=len(b"\n".join(down)) // 3).join()
    files = node.files("llm", "ms-decode-0", "vllm")
    assert any(f.endswith(".gz") for f in files), files
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv2.err")
    half = len(restarted) // 2
    node.play("llm", "ms-decode-0", "vllm", restarted[:half]).join()
    node.restart("llm", "ms-decode-0", "vllm")
    node.play("llm", "ms-decode-0", "vllm", restarted[half:]).join()
    assert "1.log" in node.files("llm", "ms-decode-0", "vllm")
    wait_until(lambda: kv.lines(name) == len(down) + len(restarted), 20.0, "every line read once")
    after = metrics_of(kv, name)
    labels = kv.get("/metrics")[2]
    assert 0 == kv.stop()
    # A restarted daemon's counters count from its start: the two runs' add up to replay's; a gauge is
    # as the last run that set it left it.
    counted = ("_total", "_bucket", "_count", "_sum")
    both = {**before, **after}
    both.update({k: v + before.get(k, 0.0) for k, v in after.items() if k[0].endswith(counted)})
    assert both == expected
    (sample_labels,) = [
        s.labels
        for family in text_string_to_metric_families(labels)
        for s in family.samples
        if s.name == "kvwatch_lines_total" and s.labels.get("source") == name
    ]
    assert sample_labels == {
        "source": name,
        "namespace": "llm",
        "pod": "ms-decode-0",
        "container": "vllm",
        "role": "decode",
        "model": "deepseek-v4-flash",  # (named by the first run's startup lines: kept across the restart)
    }
    assert "routing-proxy" not in labels


@pytest.mark.slow
def test_a_deleted_pod_is_forgotten_its_alert_resolved_and_its_position_pruned(tmp_path: Path) -> None:
    """A pod whose alert fires is deleted: the alert resolves (reason source_removed), its series leave
    /metrics, its position file goes; after a restart, a pod deleted while kvwatch was down has its
    position pruned and its restored alert resolved too."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    log = tmp_path / "shifted.log"
    shifted_sample(log, now - timedelta(seconds=60))
    lines = log.read_bytes().split(b"\n")[:-1]
    node = Node(tmp_path / "pods")
    with Receiver() as hook:
        notifier = f'[[notifier]]\nname = "hook"\ntype = "webhook"\nurl = "{hook.base}/alerts"\n'
        cfg = config(tmp_path, node.root, notifier).read_text().replace("year = 2026", f"year = {now.year}")
        (tmp_path / "kv.toml").write_text(cfg)
        kv = Kvwatch(["--config", str(tmp_path / "kv.toml")], tmp_path / "kv.err")
        wait_until(lambda: kv.get("/-/ready")[0] == 200, 10.0, "ready: the tree looked at")
        for pod in ("a-decode-0", "b-decode-0"):
            node.start_pod("llm", pod, ["vllm"])
            node.play("llm", pod, "vllm", lines, rate=5000).join()
        a, b = "fleet_llm_a-decode-0_vllm", "fleet_llm_b-decode-0_vllm"
        wait_until(lambda: len(hook.accepted()) == 2, 30.0, "both alerts delivered")
        positions = tmp_path / "state" / "positions"
        wait_until((positions / f"{a}.json").exists, 15.0, "a's position saved")
        node.delete_pod("llm", "a-decode-0")
        wait_until(lambda: resolved(hook) == [a], 20.0, "a's alert resolved")
        assert kv.value("kvwatch_lines_total", {"source": a}) is None
        assert kv.value("kvwatch_lines_total", {"source": b}) == len(lines)
        wait_until(lambda: not (positions / f"{a}.json").exists(), 10.0, "a's position pruned")
        assert 0 == kv.stop()
        node.delete_pod("llm", "b-decode-0")
        kv = Kvwatch(["--config", str(tmp_path / "kv.toml")], tmp_path / "kv2.err")
        wait_until(lambda: sorted(resolved(hook)) == [a, b], 20.0, "b's restored alert resolved")
        wait_until(lambda: not (positions / f"{b}.json").exists(), 10.0, "b's position pruned")
        assert kv.value("kvwatch_alert_firing", {"source": b}) is None
        assert 0 == kv.stop()
        state = json.loads((positions / "fleet.json").read_text())
        assert state["containers"] == []


def resolved(hook: Receiver) -> list[str]:
    """The sources of the resolutions the webhook received for a removed source."""
    return [
        body["labels"]["source"]
        for body in hook.accepted()
        if body["state"] == "resolved" and body["evidence"].get("reason") == "source_removed"
    ]


@pytest.mark.slow
def test_a_reload_keeps_the_containers_still_taken_and_forgets_the_others(tmp_path: Path) -> None:
    """SIGHUP with a narrower selector: a container still taken alike keeps its counts and reads on; one no
    longer taken leaves /metrics; with the source removed, every container's series go."""
    node = Node(tmp_path / "pods")
    cfg = config(tmp_path, node.root)
    kv = Kvwatch(["--config", str(cfg)], tmp_path / "kv.err")
    wait_until(lambda: kv.get("/-/ready")[0] == 200, 10.0, "ready")
    lines = (ROOT / "samples" / "vllm-offload-readback.log").read_bytes().split(b"\n")[:-1]
    for pod in ("keep-decode-0", "drop-decode-0"):
        node.start_pod("llm", pod, ["vllm"])
        node.play("llm", pod, "vllm", lines[:100], rate=5000).join()
    keep, drop = "fleet_llm_keep-decode-0_vllm", "fleet_llm_drop-decode-0_vllm"
    wait_until(lambda: kv.lines(keep) == kv.lines(drop) == 100, 20.0, "both read")
    cfg.write_text(cfg.read_text().replace('container = "vllm"\n', 'container = "vllm"\npod = "keep-*"\n'))
    kv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: kv.lines(drop) is None, 20.0, "the container no longer taken forgotten")
    node.play("llm", "keep-decode-0", "vllm", lines[100:150], rate=5000).join()
    wait_until(lambda: kv.lines(keep) == 150, 20.0, "the kept container read on, its count kept")
    (tmp_path / "other.log").touch()
    other = f'[[source]]\nname = "other"\ntype = "file"\npath = "{tmp_path / "other.log"}"\n'
    cfg.write_text(cfg.read_text().split("[[source]]")[0] + other)
    kv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: kv.lines(keep) is None, 20.0, "the removed source's containers forgotten")
    wait_until(lambda: kv.get("/-/ready")[0] == 200, 10.0, "ready again, with the new source")
    assert 0 == kv.stop()
