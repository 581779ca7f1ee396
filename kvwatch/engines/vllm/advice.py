"""vLLM's own cause and fix for the engine-neutral alerts whose general text names another engine's."""

from __future__ import annotations

import dataclasses

from kvwatch.engines.vllm.facts import VLLM_DEFAULT
from kvwatch.model import Finding

SUMMARY = "vLLM runs without its prefix cache (enable_prefix_caching=False): every prompt is computed in full"
OFF_BY_USER = (
    "vLLM started with --no-enable-prefix-caching: every prompt, shared system prompts and earlier "
    "turns of a conversation included, is computed in full."
)
# vLLM 0.25.1 engine/arg_utils.py (_set_default_chunked_prefill_and_prefix_caching_args): an unset
# enable_prefix_caching takes ModelConfig.is_prefix_caching_supported, False for hybrid ("still
# experimental"), attention-free and encoder-decoder models; the V0 engine's default was off for all.
OFF_BY_DEFAULT = (
    "vLLM's engine config line says enable_prefix_caching=False{how}. vLLM leaves the cache off by default "
    "where it does not consider it supported: in the V1 engine for hybrid models with Mamba or "
    "linear-attention layers (Qwen3.5/3.6's Gated DeltaNet among them), attention-free and encoder-decoder "
    "models; in the V0 engine for every model. Every prompt is computed in full, earlier turns of a "
    "conversation included."
)
# model_executor/models/config.py (MambaModelConfig, 0.25.1): with the cache on, a hybrid model caches in
# Mamba cache mode "all" where the model supports it, else "align", both logged as experimental.
FIX = (
    "Start vLLM with --enable-prefix-caching{drop}. On a hybrid model vLLM then caches its Mamba state in "
    "mode 'align' ('all' where the model supports it), which it marks experimental: compare outputs "
    "before relying on it. Success: a `Prefix cache hit rate` above 0% once prompts repeat "
    "(kvwatch_vllm_prefix_cache_hit_ratio)."
)


def cache_off(finding: Finding) -> Finding:
    """vLLM's cause of a prefix cache switched off (the user, or vLLM's default for the model), its fix."""
    if finding.evidence.get("rule") != "setting":
        return finding
    setting = finding.evidence.get("setting")
    by_user = setting == "--no-enable-prefix-caching"
    how = " and the command line did not ask for it" if setting == VLLM_DEFAULT else ""
    return dataclasses.replace(
        finding,
        summary=SUMMARY,
        cause=OFF_BY_USER if by_user else OFF_BY_DEFAULT.format(how=how),
        fix=FIX.format(drop=" (drop --no-enable-prefix-caching)" if by_user else ""),
    )


ADVICE = {"prefix_cache_disabled": cache_off}
