#!/usr/bin/env bash
# A folder of many real, small documents for the ingest-under-load benchmark: the README, NEWS and
# Markdown notes that Debian packages install under /usr/share/doc (written by their authors),
# decompressed, at most 64 KiB each, one file per package note. Nothing of it is committed.
#   bench/knowledge/make_load_corpus.sh DIR [MAX_DOCUMENTS]
set -euo pipefail
out=${1:?usage: make_load_corpus.sh DIR [MAX_DOCUMENTS]}
max=${2:-400}
mkdir -p "$out"
count=0
while IFS= read -r note; do
    [ "$count" -ge "$max" ] && break
    package=$(basename "$(dirname "$note")")
    name=$(basename "$note" .gz)
    case "$name" in *.md|*.markdown) ext=md ;; *) ext=txt ;; esac
    target="$out/$package-$name"
    case "$target" in *.md|*.markdown) ;; *) target="$target.$ext" ;; esac
    if [[ "$note" == *.gz ]]; then gzip -dc "$note" > "$target"; else cp "$note" "$target"; fi
    if [ "$(stat -c %s "$target")" -gt 65536 ] || [ ! -s "$target" ]; then rm -f "$target"; continue; fi
    count=$((count + 1))
done < <(find /usr/share/doc -maxdepth 2 -type f \( -iname 'README*' -o -iname 'NEWS*' -o -iname '*.md' -o -iname '*.md.gz' \) | sort)
echo "$count documents in $out"
