#!/usr/bin/env bash
# Records the regression corpus: every scenario of cassettes/corpus/scenarios/ run by the
# conformance kit's runner against the scripted mock over real HTTP on 127.0.0.1, with this
# build's `pi --record`. A scenario with several runs keeps the last run's cassette.
#
#   scripts/record-corpus.sh [NAME...]     (all scenarios without a name)
#
# `pi replay --rerecord cassettes/corpus` records the existing cassettes again the same way
# without Python (this script is for a new scenario, or the kit's own runner).
# Then `pi replay --check cassettes/corpus` must pass, and the replays' snapshots are taken again
# (`INSTA_UPDATE=always cargo test -p pi-cli --test cassette_corpus`: parallel tools may finish
# in another order in a new recording); commit both with the change that made them differ.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
corpus="$root/cassettes/corpus"
cargo build --release --quiet --bin pi --manifest-path "$root/Cargo.toml"
pi="$root/target/release/pi"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for file in "$corpus"/scenarios/*.json; do names+=("$(basename "$file" .json)"); done
fi
for name in "${names[@]}"; do
  [ "$name" = navigation ] && continue
  cassette="$corpus/$name.jsonl"
  rm -f "$cassette"
  python3 "$root/conformance/run.py" --pi "$pi --record $cassette" \
    --scenarios "$corpus/scenarios" --out "$work" "$name"
  "$pi" replay --check "$cassette" > /dev/null
done
# Branch navigation with a summary has no front end in Pi but its interactive one: the library
# records it (cassettes/examples/record_navigation.rs).
if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -qx navigation; then
  cargo run --release --quiet --manifest-path "$root/Cargo.toml" -p pi-cassettes \
    --example record_navigation -- "$corpus/navigation.jsonl"
fi
"$pi" replay --check "$corpus"
