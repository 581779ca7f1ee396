"""Write a tiny random Llama model with a locally trained tokenizer: what the real-engine tests serve.

    python scripts/real/tiny_model.py DEST [--tools-before-system]

Offline and deterministic in shape (seeded): a byte-level BPE tokenizer trained with `tokenizers` on a
generated corpus (vocab 2048) with a ChatML chat template, and a random `LlamaConfig` (hidden 128, 2 layers,
4 heads, head_dim 32: the CPU attention backends want a head size they list) saved with `save_pretrained`.
The replies are gibberish; only token counts matter. `--tools-before-system` renders the tools block before
the system message (the order some agent templates use), so a nonce in the system prompt is preceded by a
stable prefix. Needs torch, transformers and tokenizers: run it with the engine's own venv.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 2048
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

CHAT_TEMPLATE = (
    "{%- set tools_block -%}"
    "{%- if tools -%}<|im_start|>system{{ '\\n' }}# Tools"
    "{%- for tool in tools -%}{{ '\\n' }}{{ tool | tojson }}{%- endfor -%}"
    "<|im_end|>{{ '\\n' }}{%- endif -%}"
    "{%- endset -%}"
    "{%- if TOOLS_FIRST -%}{{ tools_block }}{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{%- set text = message['content'] -%}"
    "{%- else -%}{%- set text = message['content'] | map(attribute='text') | join('\\n') -%}{%- endif -%}"
    "<|im_start|>{{ message['role'] }}{{ '\\n' }}{{ text }}<|im_end|>{{ '\\n' }}"
    "{%- if loop.first and not TOOLS_FIRST -%}{{ tools_block }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant{{ '\\n' }}{%- endif -%}"
)

_WORD_TEXT = (
    "the a of to and in is it for on that with as was are be this by from or at an not have which "
    "you one file code test function return value error request cache token prefix model agent tool "
    "user system assistant read write edit run search list path line string number list dict json "
    "python rust go import class def self none true false if else for while try except raise yield "
    "async await print server client log metric alert query result data input output config option "
    "flag version build"
)
WORDS = _WORD_TEXT.split()


def corpus(seed: int = 1234, lines: int = 4000) -> list[str]:
    """Generated training text: words, identifiers, JSON, digits and hex (what the tests' prompts hold)."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 16))]
        kind = rng.random()
        if kind < 0.2:
            out.append(json.dumps({rng.choice(WORDS): " ".join(words[:3]), "n": rng.randint(0, 99999)}))
        elif kind < 0.3:
            out.append(
                f"{rng.choice(WORDS)}_{rng.choice(WORDS)}({', '.join(words[:3])}) = {rng.random():.4f}"
            )
        elif kind < 0.4:
            out.append(
                f"x-header: v={rng.randint(1, 9)}.{rng.randint(0, 99)}; cch={rng.getrandbits(20):05x};"
            )
        else:
            out.append(" ".join(words).capitalize() + rng.choice([".", "?", "!", ":"]))
    return out


def make_tokenizer(dest: Path, tools_first: bool) -> None:
    """Train the BPE tokenizer and save it as a transformers fast tokenizer with the chat template."""

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    template = CHAT_TEMPLATE.replace("TOOLS_FIRST", "true" if tools_first else "false")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    fast.chat_template = template
    fast.save_pretrained(dest)


def make_model(dest: Path, eos_id: int, bos_id: int) -> None:
    """A random Llama (hidden 128, 2 layers, 4 heads of 32) saved in float32 safetensors."""

    torch.manual_seed(1234)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=32,
        max_position_embeddings=16384,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=bos_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(dest, safe_serialization=True)
    gen = dest / "generation_config.json"
    gen.write_text(json.dumps({"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False}))


def main(argv: list[str] | None = None) -> int:
    """Write the tokenizer and the model to DEST."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument(
        "--tools-before-system", action="store_true", help="render tools before the system message"
    )
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    make_tokenizer(args.dest, args.tools_before_system)
    make_model(args.dest, eos_id=SPECIALS.index("<|im_end|>"), bos_id=SPECIALS.index("<|endoftext|>"))
    print(f"tiny model written to {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
