#!/usr/bin/env bash
# Assemble the knowledge benchmark's corpus from documentation that Debian packages install:
# the Bash Reference Manual and bash(1) as PDF, chapters of the Debian Reference as HTML (1-6)
# and, through pandoc, as DOCX (7-12), three of bash's own text notes, and the Debian Reference
# README as Markdown. Nothing of it is committed; the questions in questions.jsonl are about it.
#   bench/knowledge/make_corpus.sh DIR      (installs bash-doc debian-reference-en pandoc if missing)
set -euo pipefail
out=${1:?usage: make_corpus.sh DIR}
need=()
for pkg in bash-doc debian-reference-en pandoc; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -q "${need[@]}"
fi
mkdir -p "$out/pdf" "$out/html" "$out/docx" "$out/text" "$out/markdown"
cp /usr/share/doc/bash/bashref.pdf /usr/share/doc/bash/bash.pdf "$out/pdf/"
ref=/usr/share/debian-reference
for n in 01 02 03 04 05 06; do
    cp "$ref/ch$n.en.html" "$out/html/debian-reference-ch$n.html"
done
for n in 07 08 09 10 11 12; do
    pandoc --quiet --from html --to docx --output "$out/docx/debian-reference-ch$n.docx" "$ref/ch$n.en.html"
done
for note in INTRO COMPAT POSIX; do
    gzip -dc "/usr/share/doc/bash/$note.gz" > "$out/text/bash-$note.txt"
done
gzip -dc /usr/share/doc/debian-reference-en/README.md.gz > "$out/markdown/debian-reference-README.md"
find "$out" -type f | sort
