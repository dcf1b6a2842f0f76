#!/usr/bin/env bash
# Prepares the non-Go projects of cmd/agentbox/testdata/corpus/projects.txt
# in the corpus cache ($AGENTBOX_CORPUS_CACHE, default
# /var/cache/agentbox-corpus), so TestRealProjectCorpus runs them without
# network: a Debian source package's upstream tree (apt-get source; a
# deb-src entry for Debian's main archive is added when none exists), an
# npm package's tarball with tape installed next to it. Idempotent; a
# project that cannot be fetched is reported and skipped (the test then
# skips it and says so). Needs root for apt.
set -uo pipefail
cd "$(dirname "$0")/.."
cache=${AGENTBOX_CORPUS_CACHE:-/var/cache/agentbox-corpus}
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
srcs_added=
grep -v '^#' cmd/agentbox/testdata/corpus/projects.txt | while read -r kind name ver _; do
  [ -n "$kind" ] || continue
  dest=$cache/$name-$ver
  [ -e "$dest" ] && continue
  case $kind in
  debian)
    if [ -z "$srcs_added" ] && ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      . /etc/os-release
      printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$VERSION_CODENAME" > /etc/apt/sources.list.d/agentbox-corpus-src.sources
      apt-get update -qq >/dev/null 2>&1
      srcs_added=1
    fi
    mkdir -p "$tmp/$name" && chmod 777 "$tmp/$name"
    if (cd "$tmp/$name" && apt-get source --download-only -qq "$name=$ver" >/dev/null 2>&1); then
      orig=$(ls "$tmp/$name"/*.orig.tar.* | head -1)
      mkdir -p "$dest.part" && tar xf "$orig" -C "$dest.part" --strip-components=1 && mv "$dest.part" "$dest"
    else
      echo "corpus-fetch: apt-get source $name=$ver failed; TestRealProjectCorpus will skip it"
    fi
    ;;
  npm)
    if (cd "$tmp" && npm pack --silent "$name@$ver" >/dev/null 2>&1); then
      mkdir -p "$dest.part" && tar xzf "$tmp/$name-$ver.tgz" -C "$dest.part" --strip-components=1 &&
        (cd "$tmp" && mkdir -p tools && cd tools && echo '{}' > package.json && npm install --silent --no-audit --no-fund tape@5.9.0 >/dev/null 2>&1) &&
        cp -r "$tmp/tools/node_modules" "$dest.part/" && mv "$dest.part" "$dest"
    else
      echo "corpus-fetch: npm pack $name@$ver failed; TestRealProjectCorpus will skip it"
    fi
    ;;
  *) echo "corpus-fetch: unknown kind $kind" ;;
  esac
done
