#!/usr/bin/env bash
# Runs every fuzz target one after another, niced, for $SECS seconds each (default 600),
# from already built binaries (`RUSTC_BOOTSTRAP=1 cargo fuzz build -O` first). Logs go to
# fuzz/logs/<target>.log; crashes to fuzz/artifacts/<target>/.
set -u
cd "$(dirname "$0")"
SECS="${SECS:-600}"
TARGETS="${TARGETS:-parse_frontmatter tokenize postings compact safety}"
BIN=target/x86_64-unknown-linux-gnu/release
mkdir -p logs
for t in $TARGETS; do
  mkdir -p "corpus/$t" "artifacts/$t"
  case $t in
    parse_frontmatter|tokenize) maxlen=16384 ;;
    *) maxlen=4096 ;;
  esac
  echo "== $t for $SECS s" > "logs/$t.log"
  nice -n 19 "$BIN/$t" -max_total_time="$SECS" -timeout="${TIMEOUT:-60}" -rss_limit_mb=2048 \
    -max_len=$maxlen -print_final_stats=1 -artifact_prefix="artifacts/$t/" "corpus/$t" \
    >> "logs/$t.log" 2>&1
  echo "== exit $?" >> "logs/$t.log"
done
