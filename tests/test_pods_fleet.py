"""A fleet: a real Prometheus scrapes three kvwatch, each following its own simulated node's pods; the
series add up by namespace, pod and role across the nodes, and Grafana's variables list every pod."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from daemon_helpers import ROOT, Kvwatch, wait_until, write_config
from kubelet_helpers import Node
from prometheus_helpers import label_values, query, start_prometheus, stop_prometheus, wait_for

from kvwatch.assets import asset_bytes

#: Per node: (namespace, pod, container, sample) of each pod it runs.
NODES = (
    (("llm-d", "qwen-decode-0", "vllm", "vllm-offload-readback.log"),),
    (
        ("llm-d", "qwen-prefill-0", "vllm", "vllm-write-only-offload.log"),
        ("llm-d", "qwen-decode-1", "vllm", "vllm-aggregated.log"),
    ),
    (("sglang", "coder-0", "sglang", "sglang-v0-5-17-agentic-broken.log"),),
)
#: The model each pod's sample names in its startup lines.
MODELS = {
    "qwen-decode-0": "qwen3-32b",
    "qwen-prefill-0": "deepseek-v4-flash",
    "qwen-decode-1": "qwen3-235b",
    "coder-0": "Qwen/Qwen2.5-7B-Instruct",
}
SELECT = (
    '[[source.select]]\nnamespace = "llm-d"\ncontainer = "vllm"\nengine = "vllm"\n'
    'roles = { prefill = "*-prefill-*", decode = "*-decode-*" }\n'
    '[[source.select]]\ncontainer = "sglang"\nengine = "sglang"\n'
)


@pytest.mark.slow
def test_three_nodes_add_up_by_namespace_pod_and_role_in_a_real_prometheus(tmp_path: Path) -> None:
    """Each node's kvwatch exposes its own pods' series labelled namespace/pod/container/role; Prometheus
    (honor_labels, as the PodMonitor) sums them across nodes per namespace and role, and lists every pod
    as Grafana's `label_values` would."""
    daemons: list[Kvwatch] = []
    written: dict[tuple[str, str], int] = {}
    for index, pods in enumerate(NODES):
        node = Node(tmp_path / f"node{index}" / "pods")
        body = f'[[source]]\nname = "pods"\ntype = "pods"\nroot = "{node.root}"\nyear = 2026\n' + SELECT
        cfg = write_config(tmp_path / f"node{index}" / "kv.toml", body)
        kv = Kvwatch(["--config", str(cfg)], tmp_path / f"node{index}" / "kv.err")
        daemons.append(kv)
        wait_until(lambda kv=kv: kv.get("/-/ready")[0] == 200, 10.0, "ready")
        for namespace, pod, container, sample in pods:
            node.start_pod(namespace, pod, [container])
            lines = (ROOT / "samples" / sample).read_bytes().split(b"\n")[:-1]
            node.play(namespace, pod, container, lines, rate=5000).join()
            written[(namespace, pod)] = len(lines)
    for kv, pods in zip(daemons, NODES, strict=True):
        for namespace, pod, container, _ in pods:
            name = f"pods_{namespace}_{pod}_{container}"
            wait_until(
                lambda kv=kv, n=name, p=(namespace, pod): kv.lines(n) == written[p], 20.0, f"{name} read"
            )
    url, prometheus = start_prometheus(
        tmp_path, [kv.url.removeprefix("http://") for kv in daemons], scrape={"honor_labels": True}
    )
    try:
        wait_for(lambda: len(query(url, "kvwatch_lines_total")) == len(written), 30.0, "every pod scraped")
        by_pod = {
            (r["metric"]["namespace"], r["metric"]["pod"]): float(r["value"][1])
            for r in query(url, "sum by (namespace, pod) (kvwatch_lines_total)")
        }
        assert by_pod == {key: float(n) for key, n in written.items()}
        by_role = {
            (r["metric"].get("namespace"), r["metric"].get("role", "")): float(r["value"][1])
            for r in query(url, "sum by (namespace, role) (kvwatch_lines_total)")
        }
        assert by_role == {
            ("llm-d", "decode"): float(
                written[("llm-d", "qwen-decode-0")] + written[("llm-d", "qwen-decode-1")]
            ),
            ("llm-d", "prefill"): float(written[("llm-d", "qwen-prefill-0")]),
            ("sglang", ""): float(written[("sglang", "coder-0")]),
        }
        assert sorted(label_values(url, "pod", "kvwatch_lines_total")) == sorted(p for _, p in written)
        assert sorted(label_values(url, "namespace", "kvwatch_lines_total")) == ["llm-d", "sglang"]
        # The nodes' kvwatch are told apart by instance; an engine's series carry the pod's labels too.
        assert len({r["metric"]["instance"] for r in query(url, "kvwatch_lines_total")}) == 3
        stats = query(url, 'count by (namespace, pod) (kvwatch_vllm_stats_lines_total{namespace="llm-d"})')
        assert {r["metric"]["pod"] for r in stats} == {"qwen-decode-0", "qwen-prefill-0", "qwen-decode-1"}
        # The dashboard's variables, as Grafana fills them: a namespace and a role narrow the pods, and
        # the sources the panels show.
        variables = {
            v["name"]: v.get("definition", "")
            for v in json.loads(asset_bytes("kvwatch.json"))["templating"]["list"]
        }

        def chosen(name: str, **picked: str) -> list[str]:
            found = re.fullmatch(rf"label_values\((.*), {name}\)", variables[name])
            assert found is not None
            match = re.sub(r"\$(\w+)", lambda m: picked.get(m.group(1), ".*"), found.group(1))
            return sorted(label_values(url, name, match))

        assert chosen("pod", namespace="llm-d", role="decode") == ["qwen-decode-0", "qwen-decode-1"]
        assert chosen("role", namespace="llm-d") == ["decode", "prefill"]
        assert chosen("source", namespace="sglang") == ["pods_sglang_coder-0_sglang"]
        assert chosen("model", namespace="llm-d") == ["deepseek-v4-flash", "qwen3-235b", "qwen3-32b"]
        # The model, from each engine's startup lines (vLLM's served name, SGLang's model path).
        models = {r["metric"]["pod"]: r["metric"].get("model") for r in query(url, "kvwatch_lines_total")}
        assert models == MODELS
    finally:
        stop_prometheus(prometheus)
        for kv in daemons:
            kv.stop()
