from __future__ import annotations

from pathlib import Path

import pytest

from hivemem.errors import ValidationError
from hivemem.scope import derive_scope, recall_scopes, scope_from_remote, validate_scope


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        ("git@github.com:acme/api.git", "github.com/acme/api"),
        ("https://github.com/acme/api.git", "github.com/acme/api"),
        ("https://user:token@GitLab.example.com/group/sub/repo", "gitlab.example.com/group/sub/repo"),
        ("ssh://git@host.example:2222/org/repo.git", "host.example/org/repo"),
        ("", None),
        ("not a url", None),
    ],
)
def test_scope_from_remote(url: str, scope: str | None) -> None:
    assert scope_from_remote(url) == scope


def test_derive_scope_reads_origin_from_git_config(tmp_path: Path) -> None:
    repo = tmp_path / "widgets"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@github.com:other/x.git\n'
        '[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n'
    )
    (repo / "src" / "deep").mkdir(parents=True)
    assert derive_scope(repo / "src" / "deep") == "github.com/acme/widgets"


def test_derive_scope_without_git_is_local_parent_dir(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "notes"
    folder.mkdir(parents=True)
    assert derive_scope(folder) == "local/projects/notes"


def test_derive_scope_follows_worktree_gitdir_file(tmp_path: Path) -> None:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/wt.git\n')
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    assert derive_scope(worktree) == "github.com/acme/wt"


@pytest.mark.parametrize("scope", ["", "github.com/acme/api", "local/a/b", "team:core"])
def test_valid_scopes(scope: str) -> None:
    assert validate_scope(scope) == scope


@pytest.mark.parametrize("scope", ["../etc", "a//b", "/abs", "a/ b", "x" * 201, "a/../b"])
def test_invalid_scopes_name_the_field(scope: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_scope(scope)
    assert info.value.field == "scope"


def test_recall_scopes_add_global() -> None:
    assert recall_scopes("github.com/acme/api") == ["github.com/acme/api", ""]
    assert recall_scopes("") == [""]
