"""Make a tiny random Llama model that a real engine can serve, offline, in seconds.

Usage: python tiny_model.py DEST [--tools-before-system]

Run it with the engine's own Python (the vLLM venv has torch, transformers and tokenizers). Nothing is
downloaded: a byte-level BPE tokenizer (vocab 2048) is trained with `tokenizers` on a fixed text made
here, a ChatML chat template is attached, and a `LlamaConfig` (hidden 128, 2 layers, 4 heads, head_dim
32: vLLM's CPU attention backend accepts only the head sizes it lists, and 32 is one) gets seeded random
weights saved with `save_pretrained`. The replies are gibberish; only token counts matter to kvwatch.
The same DEST and flags give the same tokenizer and weights on every run.

The chat template renders the system message, then the tools (JSON), then the turns; with
`--tools-before-system` the tools come first, as some models' templates put them.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

VOCAB = 2048
SPECIAL = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]

_WORDS = (
    "the a of to in and is for on with that this file function return value error test run build cache "
    "prefix token request response server model system user assistant tool call read write edit path "
    "line code python json schema string number object array name description type required "
    "properties def class import from if else while for try except raise None True False self args "
    "kwargs print len list dict str int float open with as yield async await lambda"
)
# (`{%` without `-` inside a turn: the `-` form would eat the newline after the role)
_TEXT = (
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endif %}"
)
_TOOLS = "{%- if tools %}<|im_start|>tools\n{{ tools | tojson }}<|im_end|>\n{%- endif %}"


def chat_template(tools_first: bool) -> str:
    """ChatML with the system message and the tools in the order asked."""
    system = (
        "{%- for m in messages if m['role'] == 'system' %}<|im_start|>system\n"
        + _TEXT
        + "<|im_end|>\n{%- endfor %}"
    )
    turns = (
        "{%- for m in messages if m['role'] != 'system' %}<|im_start|>{{ m['role'] }}\n"
        + _TEXT
        + "<|im_end|>\n{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
    )
    return (_TOOLS + system if tools_first else system + _TOOLS) + turns


def corpus(lines: int = 4000, seed: int = 7) -> list[str]:
    """A fixed training text shaped like agent traffic: prose, code, JSON tool schemas."""
    rng = random.Random(seed)
    words = _WORDS.split()
    out = []
    for i in range(lines):
        kind = i % 3
        if kind == 0:
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(6, 20))).capitalize() + ".")
        elif kind == 1:
            name = rng.choice(words)
            out.append(
                f"def {name}_{rng.randint(0, 99)}(self, {rng.choice(words)}): return {rng.randint(0, 9999)}"
            )
        else:
            out.append(
                json.dumps(
                    {
                        "type": "function",
                        "function": {
                            "name": rng.choice(words),
                            "description": " ".join(rng.sample(words, 5)),
                        },
                        "parameters": {
                            "type": "object",
                            "properties": {rng.choice(words): {"type": "string"}},
                        },
                    }
                )
            )
    return out


def make(dest: Path, tools_first: bool) -> None:
    """Write the tokenizer and the model to `dest`."""
    # (imported here: `--help` works with any Python; the work needs the engine venv's)
    import torch  # noqa: PLC0415
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: PLC0415

    dest.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="</s>",
        model_max_length=8192,
    )
    fast.chat_template = chat_template(tools_first)
    fast.save_pretrained(dest)

    torch.manual_seed(1234)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=32,
        max_position_embeddings=8192,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    LlamaForCausalLM(config).save_pretrained(dest, safe_serialization=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="the model folder to write")
    parser.add_argument(
        "--tools-before-system", action="store_true", help="render the tools before the system"
    )
    args = parser.parse_args(argv)
    make(args.dest, args.tools_before_system)
    print(args.dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
