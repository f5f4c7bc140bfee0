"""A tiny random Llama chat model and its word-level tokenizer, saved with ``save_pretrained`` (offline)."""

from __future__ import annotations

from pathlib import Path

WORDS = ["<unk>", "<s>", "</s>", "<pad>", "<|user|>", "<|assistant|>", "<|system|>", "<thinking>", "</thinking>",
         "Answer:", "the", "passage", "query", "answer", "is", "a", "tax", "money", "because", "yes", "no"]
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} </s> {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|> {% endif %}")


def build_tiny_chat_model(path: Path) -> Path:
    """Write the model and tokenizer to ``path`` (seeded: the same weights every time)."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    config = transformers.LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=3)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path
